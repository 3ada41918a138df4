package experiment

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
)

var passing = map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
	"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}

func with(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

func val(t *testing.T, s Stat) float64 {
	t.Helper()
	if s.Value == nil {
		t.Fatalf("undefined: %s", s.Reason)
	}
	return *s.Value
}

// A small case worked by hand on the coaching rubric (gate CQ8, CQ9): gold
// fails items 3 and 4 on CQ8; "exact" copies gold, "lenient" passes
// everything.
func TestRunByHand(t *testing.T) {
	t.Parallel()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	failing := with(passing, "CQ8", "NO")
	golds := []map[string]string{passing, passing, failing, failing}
	var items []Item
	for i, g := range golds {
		items = append(items, Item{ID: int64(i + 1), Gold: g, Humans: []map[string]string{g, g}, Variants: []map[string]string{g, passing}})
	}
	in := Input{Def: def, Variants: []string{"exact", "lenient"}, Humans: []string{"ann", "bob"}, Items: items,
		Usage:     []Usage{{CostUSD: 0.4, LatencyMS: 4000, Items: 4}, {CostUSD: 0.2, LatencyMS: 1000, Items: 4}},
		Bootstrap: agreement.Bootstrap{Replicates: 200, Level: 0.95, Seed: 1}}
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 4 || len(res.RubricItems) != len(def.Items) {
		t.Fatalf("result over %d items and %d rubric items", res.Items, len(res.RubricItems))
	}
	i := slices.IndexFunc(res.RubricItems, func(r RubricItem) bool { return r.Key == "CQ8" })
	cq8 := res.RubricItems[i]
	// Gold YES YES NO NO: exact agrees fully (kappa 1); lenient's YES ×4
	// agrees on half, with chance agreement one half: kappa 0.
	if cq8.Best != "exact" || val(t, cq8.Variants[0].KappaGold) != 1 || val(t, cq8.Variants[1].KappaGold) != 0 {
		t.Fatalf("CQ8 = %+v", cq8)
	}
	if d := cq8.Variants[1].KappaDiff; val(t, d) != -1 || d.Lower == nil || *d.Upper > 0 {
		t.Errorf("lenient's difference from the best = %+v, want -1 with an interval below 0", d)
	}
	if val(t, cq8.Variants[0].KappaDiff) != 0 {
		t.Errorf("the best's own difference = %+v, want 0", cq8.Variants[0].KappaDiff)
	}
	// The people answered as gold did.
	if k := cq8.Variants[1].KappaPeople; len(k) != 2 || k[0].Person != "ann" || k[0].Items != 4 || val(t, k[0].Kappa) != 0 ||
		val(t, cq8.Variants[0].KappaPeople[1].Kappa) != 1 {
		t.Errorf("kappa with each person on CQ8: %+v / %+v", cq8.Variants[0].KappaPeople, k)
	}
	// CQ1 is YES everywhere: no variation, kappa undefined.
	cq1 := res.RubricItems[slices.IndexFunc(res.RubricItems, func(r RubricItem) bool { return r.Key == "CQ1" })]
	if cq1.Variants[0].KappaGold.Value != nil || cq1.Best != "" {
		t.Errorf("CQ1 = %+v, want kappa undefined", cq1)
	}
	// The alt-test is the report's (report.ExperimentAltTests, tested
	// there): Run names the rubric item's scoring and runs no test of its
	// own.
	for _, v := range cq8.Variants {
		if a := v.AltTest; a.Scoring != "accuracy" || a.Result != "" || a.WinningRate.Value != nil {
			t.Errorf("%s's alt-test on CQ8 = %+v, want only the scoring", v.Variant, a)
		}
	}

	exact, lenient := res.Scores[0], res.Scores[1]
	if len(exact.Gate.Misses) != 0 || val(t, exact.Gate.Sensitivity) != 1 || val(t, exact.Gate.Specificity) != 1 || exact.Gate.GoldFailed != 2 {
		t.Errorf("exact's gate = %+v", exact.Gate)
	}
	if !slices.Equal(lenient.Gate.Misses, []int64{3, 4}) || val(t, lenient.Gate.Sensitivity) != 0 || val(t, lenient.Gate.Specificity) != 1 {
		t.Errorf("lenient's gate = %+v, want misses 3 and 4", lenient.Gate)
	}
	if val(t, exact.MAE) != 0 || val(t, exact.PassAgreement) != 1 || val(t, lenient.PassAgreement) != 0.5 {
		t.Errorf("exact %+v, lenient %+v", exact, lenient)
	}
	// Gold's failing items score as the rubric says; lenient's full
	// marks differ from them by the same amount on both.
	if m := val(t, lenient.MAE); !(m > 0) || math.Abs(val(t, lenient.MAEDiff)-m) > 1e-12 {
		t.Errorf("lenient's MAE %v and difference from the best %v", m, val(t, lenient.MAEDiff))
	}
	if *exact.CostPerItem != 0.1 || exact.LatencyMS != 1000 || *lenient.CostPerItem != 0.05 || lenient.LatencyMS != 250 {
		t.Errorf("usage: exact %v/%v, lenient %v/%v", *exact.CostPerItem, exact.LatencyMS, *lenient.CostPerItem, lenient.LatencyMS)
	}
	// Misses come first in the gate's JSON.
	b, err := json.Marshal(lenient.Gate)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"misses":[3,4],"gold_failed":2,`; string(b[:len(want)]) != want {
		t.Errorf("gate JSON = %s", b)
	}
}

// The rubric without a gate says so, and a misaligned input is refused.
func TestRunNoGateAndBadInput(t *testing.T) {
	t.Parallel()
	def, err := rubric.Builtin("empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]string{"emotion": "4", "validation": "3", "helpfulness": "4", "safety": "5", "overall": "4"}
	in := Input{Def: def, Variants: []string{"v"}, Humans: []string{"h"},
		Items: []Item{{ID: 1, Gold: a, Humans: []map[string]string{a}, Variants: []map[string]string{a}}}}
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Scores[0].Gate; g.Sensitivity.Reason != ReasonNoGate || g.Sensitivity.Value != nil {
		t.Errorf("gate = %+v, want no gate", g)
	}
	if val(t, res.Scores[0].MAE) != 0 || res.Scores[0].CostPerItem != nil {
		t.Errorf("score row = %+v", res.Scores[0])
	}
	in.Items[0].Variants = nil
	if _, err := Run(in); err == nil {
		t.Error("an item without the variants' answers: want an error")
	}
}

// A variant is written as the CLI's --judge and the page's ?judge= take
// it, and reads back the same.
func TestParseVariant(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec string
		want Variant
		err  string
	}{
		{"gpt-judge", Variant{"gpt-judge", 1}, ""},
		{" gpt-judge@2 ", Variant{"gpt-judge", 2}, ""},
		{"gpt-judge@1", Variant{"gpt-judge", 1}, ""},
		{"me@example", Variant{"me@example", 1}, ""}, // not a version: part of the name
		{"@3", Variant{"@3", 1}, ""},
		{"gpt-judge@0", Variant{}, "a prompt version is 1 or more"},
		{" ", Variant{}, "needs a judge's name"},
	} {
		got, err := ParseVariant(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.spec, got, err, c.want)
		}
		if back, _ := ParseVariant(got.String()); back != got {
			t.Errorf("%q: %q reads back as %+v", c.spec, got.String(), back)
		}
	}
}
