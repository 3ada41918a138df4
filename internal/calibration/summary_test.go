package calibration

import (
	"math"
	"slices"
	"testing"
)

func TestSummarizeCountsEveryRubricItem(t *testing.T) {
	def := builtin(t, "empathetic-dialogue@2")
	gold := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "4"}
	records := []Record{
		// all within a point: 5 of 5, diffs +1 −1 0 −1 0
		{Given: map[string]string{"emotion": "5", "validation": "3", "helpfulness": "3", "safety": "4", "overall": "4"}, Gold: gold},
		// emotion two points high, overall missing: 3 of 5, diffs +2 0 0 0
		{Given: map[string]string{"emotion": "5", "validation": "4", "helpfulness": "3", "safety": "5"}, Gold: map[string]string{"emotion": "3", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "2"}},
	}
	got := Summarize(def, records)
	if got.N != 2 {
		t.Errorf("n = %d, want 2", got.N)
	}
	if want := 8.0 / 10; math.Abs(got.Accuracy-want) > 1e-12 {
		t.Errorf("accuracy = %v, want %v", got.Accuracy, want)
	}
	// (+1 −1 +0 −1 +0) + (+2 +0 +0 +0) over 9 numeric comparisons
	if want := 1.0 / 9; got.Leniency == nil || math.Abs(*got.Leniency-want) > 1e-12 {
		t.Errorf("leniency = %v, want %v", got.Leniency, want)
	}
	if got.Drifting || len(got.DriftingOn) != 0 {
		t.Errorf("two records drift: %+v", got)
	}
}

func TestSummarizeNoNumericItemsHasNoLeniency(t *testing.T) {
	def := builtin(t, "coaching-conversation@2.0")
	gold := map[string]string{"CQ1": "YES", "CQ8": "YES"}
	got := Summarize(def, []Record{{Given: map[string]string{"CQ1": "YES", "CQ8": "NO"}, Gold: gold}})
	if got.Leniency != nil {
		t.Errorf("leniency on YES/NO/NA = %v, want none", *got.Leniency)
	}
	if got.Accuracy != 0.5 {
		t.Errorf("accuracy = %v, want 0.5", got.Accuracy)
	}
	if empty := Summarize(def, nil); empty.N != 0 || empty.Accuracy != 0 || empty.Drifting {
		t.Errorf("no records: %+v", empty)
	}
}

// TestSummarizeNamesTheRubricItemThatDrifts simulates a person who agrees
// with gold on every dimension for FirstLook items and then starts rating
// emotion two points high: only emotion drifts, once the charts look.
func TestSummarizeNamesTheRubricItemThatDrifts(t *testing.T) {
	def := builtin(t, "empathetic-dialogue@2")
	gold := map[string]string{"emotion": "3", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	steady := map[string]string{"emotion": "3", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	drifted := map[string]string{"emotion": "5", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	var records []Record
	for i := range FirstLook + 60 {
		given := steady
		if i >= FirstLook {
			given = drifted
		}
		records = append(records, Record{Given: given, Gold: gold})
	}
	got := Summarize(def, records[:FirstLook])
	if got.Drifting {
		t.Fatalf("steady series drifts: %+v", got)
	}
	got = Summarize(def, records)
	if !got.Drifting || !slices.Equal(got.DriftingOn, []string{"emotion"}) {
		t.Errorf("after the step: drifting %v on %v, want true on [emotion]", got.Drifting, got.DriftingOn)
	}
}

func TestSummaryAlert(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want string
	}{
		{"steady and accurate", Summary{N: 40, Accuracy: 0.9}, ""},
		{"below the mark but too few answers", Summary{N: AlertMinAnswers - 1, Accuracy: 0}, ""},
		{"below the mark", Summary{N: 10, Accuracy: 0.5}, "50% against gold over 10 calibration items, below the pass mark of 80%"},
		{"at the mark", Summary{N: 10, Accuracy: 0.8}, ""},
		{"drifting", Summary{N: 90, Accuracy: 0.85, Drifting: true, DriftingOn: []string{"emotion", "safety"}}, "drifting on emotion, safety"},
		{"both", Summary{N: 90, Accuracy: 0.6, Drifting: true, DriftingOn: []string{"CQ8"}},
			"drifting on CQ8; 60% against gold over 90 calibration items, below the pass mark of 80%"},
	}
	for _, tt := range tests {
		if got := tt.s.Alert(80); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
