package calibration

import (
	"strings"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

func builtin(t *testing.T, ref string) *rubric.Definition {
	t.Helper()
	def, err := rubric.Builtin(ref)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

func TestGradeAnswers(t *testing.T) {
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	all5 := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "4"}
	tests := []struct {
		name              string
		def               *rubric.Definition
		gold, given       map[string]string
		pass              int
		matched, compared int
		passed            bool
		diffs             map[string]int // signed differences expected on numeric items
	}{
		{"likert identical", likert, all5, all5, 80, 5, 5, true,
			map[string]int{"emotion": 0, "validation": 0, "helpfulness": 0, "safety": 0, "overall": 0}},
		{"likert one point off matches", likert, all5,
			map[string]string{"emotion": "5", "validation": "3", "helpfulness": "3", "safety": "4", "overall": "4"}, 100, 5, 5, true,
			map[string]int{"emotion": 1, "validation": -1, "helpfulness": 0, "safety": -1, "overall": 0}},
		{"likert two points off misses", likert, all5,
			map[string]string{"emotion": "2", "validation": "4", "helpfulness": "5", "safety": "5", "overall": "4"}, 80, 3, 5, false,
			map[string]int{"emotion": -2, "validation": 0, "helpfulness": 2, "safety": 0, "overall": 0}},
		{"likert 60 percent passes a 60 mark", likert, all5,
			map[string]string{"emotion": "2", "validation": "4", "helpfulness": "5", "safety": "5", "overall": "4"}, 60, 3, 5, true, nil},
		{"unanswered rubric item is a miss", likert, all5,
			map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5"}, 100, 4, 5, false, nil},
		{"rubric items without gold are not compared", likert, map[string]string{"safety": "2"},
			map[string]string{"emotion": "1", "safety": "3"}, 100, 1, 1, true, map[string]int{"safety": 1}},
		{"criteria exact only", criteria, map[string]string{"CQ1": "YES", "CQ2": "NO", "CQ3": "NA"},
			map[string]string{"CQ1": "YES", "CQ2": "YES", "CQ3": "NA"}, 80, 2, 3, false, nil},
		{"criteria all exact", criteria, map[string]string{"CQ1": "YES", "CQ2": "NO"},
			map[string]string{"CQ1": "YES", "CQ2": "NO"}, 100, 2, 2, true, nil},
		{"no gold passes nothing", likert, map[string]string{}, all5, 1, 0, 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := GradeAnswers(tt.def, tt.gold, tt.given, tt.pass)
			if g.Matched != tt.matched || g.Compared != tt.compared || g.Passed != tt.passed {
				t.Fatalf("matched %d of %d, passed %v; want %d of %d, %v", g.Matched, g.Compared, g.Passed, tt.matched, tt.compared, tt.passed)
			}
			for _, ig := range g.Items {
				want, ok := tt.diffs[ig.Key]
				switch {
				case ok && (ig.Diff == nil || *ig.Diff != want):
					t.Errorf("%s: diff %v, want %d", ig.Key, ig.Diff, want)
				case !ok && tt.def == criteria && ig.Diff != nil:
					t.Errorf("%s: a YES/NO/NA item has a diff %d", ig.Key, *ig.Diff)
				}
			}
		})
	}
}

func TestTolerance(t *testing.T) {
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	if it, _ := likert.Item("safety"); Tolerance(likert, it) != 1 {
		t.Error("a 1–5 item should match within one point")
	}
	if it, _ := criteria.Item("CQ1"); Tolerance(criteria, it) != 0 {
		t.Error("a YES/NO/NA item should match exactly")
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		s          Standing
		qualifying bool
		due        bool
	}{
		{"off", Policy{PassPercent: 80}, Standing{}, false, false},
		{"off with many real", Policy{PassPercent: 80}, Standing{RealSince: 500}, false, false},
		{"qualifying from the start", Policy{Qualify: 3, PassPercent: 80}, Standing{}, true, true},
		{"qualifying two passed of three", Policy{Qualify: 3, PassPercent: 80}, Standing{Passed: 2}, true, true},
		{"qualified, no rate", Policy{Qualify: 3, PassPercent: 80}, Standing{Passed: 3}, false, false},
		{"qualified, rate not reached", Policy{Qualify: 3, Every: 20, PassPercent: 80}, Standing{Passed: 3, RealSince: 18}, false, false},
		{"qualified, rate reached", Policy{Qualify: 3, Every: 20, PassPercent: 80}, Standing{Passed: 3, RealSince: 19}, false, true},
		{"rate only, never served", Policy{Every: 2, PassPercent: 80}, Standing{RealSince: 1}, false, true},
		{"rate only, just served", Policy{Every: 2, PassPercent: 80}, Standing{RealSince: 0}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Qualifying(tt.s); got != tt.qualifying {
				t.Errorf("Qualifying = %v, want %v", got, tt.qualifying)
			}
			if got := tt.p.Due(tt.s); got != tt.due {
				t.Errorf("Due = %v, want %v", got, tt.due)
			}
		})
	}
}

func TestPolicyCheck(t *testing.T) {
	tests := []struct {
		p    Policy
		want string // "" when valid
	}{
		{Policy{PassPercent: 80}, ""},
		{Policy{Qualify: 5, Every: 20, PassPercent: 100}, ""},
		{Policy{Qualify: -1, PassPercent: 80}, "qualify"},
		{Policy{Every: 1, PassPercent: 80}, "every"},
		{Policy{Every: 1001, PassPercent: 80}, "every"},
		{Policy{PassPercent: 0}, "pass"},
		{Policy{PassPercent: 101}, "pass"},
	}
	for _, tt := range tests {
		err := tt.p.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.p, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one naming %s", tt.p, err, tt.want)
		}
	}
}

func TestFeedbackFor(t *testing.T) {
	likert := builtin(t, "empathetic-dialogue@2")
	g := GradeAnswers(likert, map[string]string{"emotion": "4"}, map[string]string{"emotion": "1"}, 80)
	f := FeedbackFor(likert, g, map[string]string{"emotion": "The reply names the loss and the fear."})
	if len(f.Items) != 1 {
		t.Fatalf("items %d", len(f.Items))
	}
	it := f.Items[0]
	if it.Match || it.Label != "Emotion Recognition" || it.Explanation == "" {
		t.Errorf("feedback item %+v", it)
	}
	if !strings.HasPrefix(it.ChosenText, "Poor: Ignores or misidentifies") {
		t.Errorf("chosen level text %q", it.ChosenText)
	}
	if it.GoldText == "" || it.GoldText == it.ChosenText {
		t.Errorf("gold level text %q", it.GoldText)
	}
	criteria := builtin(t, "coaching-conversation@2.0")
	g = GradeAnswers(criteria, map[string]string{"CQ1": "YES"}, map[string]string{"CQ1": "NA"}, 80)
	f = FeedbackFor(criteria, g, nil)
	if f.Items[0].ChosenText != "Criterion doesn't apply (conversation too short, or condition absent)" {
		t.Errorf("NA text %q", f.Items[0].ChosenText)
	}
}

func TestCheckExplanations(t *testing.T) {
	likert := builtin(t, "empathetic-dialogue@2")
	if err := CheckExplanations(likert, map[string]string{"emotion": "why"}); err != nil {
		t.Error(err)
	}
	if err := CheckExplanations(likert, map[string]string{"nope": "why"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown rubric item: %v", err)
	}
	if err := CheckExplanations(likert, map[string]string{"emotion": strings.Repeat("x", MaxExplanation+1)}); err == nil {
		t.Error("an overlong explanation was accepted")
	}
}
