package ppi

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestBySystemByHand groups items as TestMeanByHand's case (system "a"),
// two labelled items of no system, and one labelled item of system "c".
//
//	a: as TestMeanByHand: ppi 149/180 (variance 4927/97200), human 3/4 (1/16)
//	(none): human 1, 0 and judge 1, 0, no unlabelled items, so λ = 0 and
//	        ppi = human = 1/2 with variance (1/2)/2 = 1/4
//	c: one labelled item: skipped
//	a − (none): human 1/4 with variance 1/16 + 1/4 = 5/16,
//	            ppi 149/180 − 1/2 = 59/180 with variance 4927/97200 + 1/4
func TestBySystemByHand(t *testing.T) {
	var items []Rated
	for i, h := range []float64{1, 0, 1, 1} {
		items = append(items, Rated{System: "a", Human: h, Judge: []float64{1, 0, 0, 1}[i], Labelled: true})
	}
	for _, j := range []float64{1, 1, 0, 1} {
		items = append(items, Rated{System: "a", Judge: j})
	}
	items = append(items,
		Rated{Human: 1, Judge: 1, Labelled: true},
		Rated{Human: 0, Judge: 0, Labelled: true},
		Rated{System: "c", Human: 1, Judge: 0, Labelled: true},
	)
	got, err := BySystem(items, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Systems) != 2 || got.Systems[0].System != NoSystem || got.Systems[1].System != "a" {
		t.Fatalf("systems = %+v, want (none) and a", got.Systems)
	}
	none, a := got.Systems[0], got.Systems[1]
	near(t, "a ppi", a.PPI.Mean, 149.0/180, 1e-12)
	near(t, "a ppi var", a.Var.PPI, 4927.0/97200, 1e-12)
	near(t, "(none) ppi", none.PPI.Mean, 0.5, 1e-12)
	near(t, "(none) λ", none.PPI.Lambda, 0, 0)
	near(t, "(none) ppi high", none.PPI.High, 0.5+z95*0.5, 1e-9)
	if len(got.Skipped) != 1 || got.Skipped[0].System != "c" {
		t.Errorf("skipped = %+v, want c", got.Skipped)
	}
	if got.Overall == nil || got.Overall.NLabelled != 7 || got.Overall.NUnlabelled != 4 {
		t.Errorf("overall = %+v, want 7 labelled and 4 unlabelled", got.Overall)
	}
	if len(got.Differences) != 1 {
		t.Fatalf("differences = %+v, want one", got.Differences)
	}
	d := got.Differences[0]
	if d.A != NoSystem || d.B != "a" || d.Paired {
		t.Errorf("difference %q − %q paired=%v, want (none) − a, independent", d.A, d.B, d.Paired)
	}
	near(t, "difference human", d.Human.Mean, 0.5-0.75, 1e-12)
	near(t, "difference human high", d.Human.High, -0.25+z95*math.Sqrt(5.0/16), 1e-9)
	near(t, "difference ppi", d.PPI.Mean, 0.5-149.0/180, 1e-12)
	near(t, "difference ppi var", d.Var.PPI, 4927.0/97200+0.25, 1e-12)

	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sample":"not drawn by attune`, `"system":"a"`, `"n_labelled":4`, `"lambda":0.3111`, `"effective_human_labels"`, `"paired":false`, `"a":"(none)"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}

// TestBySystemEmpty: no items, no estimates, and empty lists rather than
// nulls in JSON.
func TestBySystemEmpty(t *testing.T) {
	got, err := BySystem(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"systems":[],"overall":null,"differences":[],"skipped":[]`; !strings.Contains(string(b), want) {
		t.Errorf("JSON = %s, want %s", b, want)
	}
}
