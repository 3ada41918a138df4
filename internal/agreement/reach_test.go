package agreement

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// unitsOf builds units from item patterns: each string is one item's
// answers as category positions ("00" two raters both in category 0),
// repeated n times.
func unitsOf(t *testing.T, s *Scale, items map[string]int) Units {
	t.Helper()
	var list []Unit
	for pattern, n := range items {
		c := make([]int, s.Len())
		for _, r := range pattern {
			c[r-'0']++
		}
		list = append(list, Unit{Counts: c, Weight: n})
	}
	u, err := NewUnits(s, list)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// pairOf builds a two-rater table from the same patterns.
func pairOf(t *testing.T, s *Scale, items map[string]int) Contingency {
	t.Helper()
	cells := make([][]int, s.Len())
	for k := range cells {
		cells[k] = make([]int, s.Len())
	}
	for pattern, n := range items {
		cells[pattern[0]-'0'][pattern[1]-'0'] += n
	}
	c, err := NewContingency(s, cells)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReachCounts(t *testing.T) {
	t.Parallel()
	yesno, three := mustScale(t, "YES", "NO"), mustScale(t, "1", "2", "3")
	for _, c := range []struct {
		name        string
		scale       *Scale
		reach       Reach
		items       map[string]int
		informative int
		minimum     int
	}{
		{"all items agree", yesno, ChanceReach, map[string]int{"00": 30}, 0, 2},
		{"one item off the common answer", yesno, ChanceReach, map[string]int{"00": 29, "01": 1}, 1, 2},
		{"items agreeing on the rarer answer inform", yesno, ChanceReach, map[string]int{"00": 27, "11": 2, "10": 1}, 3, 2},
		// The modal answer is 4 (position 3); 3 and 5 are next to it.
		{"weighted: answers next to the common one only", likert(t), KappaReach(QuadraticWeights), map[string]int{"33": 20, "23": 5, "34": 3, "44": 2}, 0, 1},
		{"weighted: one item two from the common one", likert(t), KappaReach(QuadraticWeights), map[string]int{"33": 20, "23": 5, "34": 3, "01": 1}, 1, 1},
		{"weighted: ordinal alpha counts the same way", likert(t), AlphaReach(Ordinal), map[string]int{"33": 20, "13": 2}, 2, 1},
		{"AC2 needs two distant items", likert(t), AC2Reach(QuadraticWeights), map[string]int{"33": 20, "01": 1}, 1, 2},
		{"unweighted figures on 1–5 count any other answer", likert(t), KappaReach(NoWeights), map[string]int{"33": 20, "23": 5}, 5, 2},
		// On 1–3 with 2 the most common no answer is two from it: the
		// weighted figure falls back to the unweighted rule.
		{"weighted on a scale with nothing two away", three, AC2Reach(QuadraticWeights), map[string]int{"11": 20, "01": 1, "12": 1}, 2, 2},
		{"the zero reach never needs any", yesno, Reach{}, map[string]int{"00": 30}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, least := c.reach.OfUnits(unitsOf(t, c.scale, c.items))
			if n != c.informative || least != c.minimum {
				t.Errorf("units: %d informative of %d, want %d of %d", n, least, c.informative, c.minimum)
			}
			n, least = c.reach.OfPairs(pairOf(t, c.scale, c.items))
			if n != c.informative || least != c.minimum {
				t.Errorf("pairs: %d informative of %d, want %d of %d", n, least, c.informative, c.minimum)
			}
		})
	}
}

// TestWithholdIntervals runs the bootstrap and the rule together, as the
// report does.
func TestWithholdIntervals(t *testing.T) {
	t.Parallel()
	yesno := mustScale(t, "YES", "NO")
	b := Bootstrap{Replicates: 200, Level: 0.95, Seed: 1}
	for _, c := range []struct {
		name     string
		items    map[string]int
		withheld string // the reason, "" when shown
		counts   [2]int
	}{
		{"all items agree", map[string]int{"00": 30}, ReasonNoResampleSpread, [2]int{}},
		{"one informative item", map[string]int{"00": 29, "01": 1}, ReasonFewInformative, [2]int{1, 2}},
		{"enough informative items", map[string]int{"00": 22, "11": 5, "01": 3}, "", [2]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := unitsOf(t, yesno, c.items)
			es, err := BootstrapUnits(u, b, PercentAgreement, GwetAC1)
			if err != nil {
				t.Fatal(err)
			}
			WithholdUnits(es, u, Reach{}, ChanceReach)
			e := es[1]
			if !e.Defined {
				t.Fatalf("AC1 undefined: %+v", e)
			}
			if c.withheld == "" {
				if e.CI == nil || e.NoCI != nil {
					t.Errorf("AC1 %+v: want an interval", e)
				}
				return
			}
			if e.CI != nil || e.NoCI == nil || e.NoCI.Reason != c.withheld || e.NoCI.Informative != c.counts[0] || e.NoCI.Minimum != c.counts[1] {
				t.Errorf("AC1 %+v (%+v): want no interval, %q with %v", e, e.NoCI, c.withheld, c.counts)
			}
			// Percent agreement has no minimum: it keeps what the
			// bootstrap gave it.
			if p := es[0]; c.withheld == ReasonFewInformative && p.CI == nil {
				t.Errorf("percent agreement lost its interval: %+v", p)
			}
		})
	}
}

func TestNoIntervalJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    NoInterval
		want string
		text string
	}{
		{NoInterval{Reason: ReasonNoResampleSpread}, `{"reason":"` + ReasonNoResampleSpread + `"}`, ReasonNoResampleSpread},
		{NoInterval{Reason: ReasonFewInformative, Informative: 0, Minimum: 2},
			`{"reason":"not enough informative items to bound it","informative_items":0,"min_informative_items":2}`,
			"not enough informative items to bound it (0 of the 2 it needs)"},
	} {
		got, err := json.Marshal(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("JSON %s, want %s", got, c.want)
		}
		if c.n.String() != c.text {
			t.Errorf("text %q, want %q", c.n.String(), c.text)
		}
	}
}

// TestSummaryWithholds checks that Summarize, the CLI's figures, applies
// each figure's Reach and writes the withheld interval in the one JSON
// shape.
func TestSummaryWithholds(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	in.WriteString("item,rater,value\n")
	for i := range 30 {
		b := "YES"
		if i == 0 {
			b = "NO"
		}
		fmt.Fprintf(&in, "i%d,a,YES\ni%d,b,%s\n", i, i, b)
	}
	r, err := ReadLongCSV(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(r, Options{Bootstrap: &Bootstrap{Replicates: 200, Level: 0.95, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.GwetAC1.CI != nil || s.PercentAgreement.CI == nil {
		t.Fatalf("AC1 %+v, agreement %+v: want AC1 withheld, agreement shown", s.GwetAC1, s.PercentAgreement)
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Withheld map[string]json.RawMessage `json:"intervals_withheld"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"reason":"not enough informative items to bound it","informative_items":1,"min_informative_items":2}`
	if string(got.Withheld["gwet_ac1"]) != want {
		t.Errorf("gwet_ac1 withheld as %s, want %s (in %s)", got.Withheld["gwet_ac1"], want, out)
	}
}
