package scoring_test

import (
	"reflect"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// decode turns fuzz bytes into an answer set for d (one byte an item:
// YES, NO, NA, ERROR, missing, or an unknown value) and facts.
func decode(d *rubric.Definition, b []byte) (rubric.Answers, rubric.Facts) {
	values := []rubric.Value{rubric.Yes, rubric.No, rubric.NA, rubric.Error, "", "MAYBE"}
	a := rubric.Answers{}
	for i, it := range d.Items {
		var x byte
		if i < len(b) {
			x = b[i]
		}
		if v := values[int(x)%len(values)]; v != "" {
			a[it.Key] = v
		}
	}
	var f rubric.Facts
	if n := len(d.Items); len(b) > n+1 {
		f = rubric.Facts{Turns: int(b[n]), Crisis: rubric.Presence(b[n+1] % 4)}
	}
	return a, f
}

// FuzzCriteria checks the engine's invariants on the coaching rubric: the
// score stays in [0, 1]; it is deterministic; any CQ8 NO fails the gate and
// the pass; turning a NO into a YES never lowers the score or a category
// score and never turns a pass into a fail.
func FuzzCriteria(f *testing.F) {
	d := builtin(f, "coaching-conversation@2.0")
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0, 2, 0, 0, 2, 5, 1})  // the worked example
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})        // CQ8 NO
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})        // all NO
	f.Add([]byte{4, 4, 4, 4})                                // mostly missing
	f.Add([]byte{0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 12, 2}) // at the threshold
	f.Add([]byte{3, 5, 2, 0, 1, 0, 2, 2, 3, 0, 2, 0, 9, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, facts := decode(d, b)
		r, err := scoring.Score(d, a, facts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Score == nil || *r.Score < 0 || *r.Score > 1 || r.Pass == nil {
			t.Fatalf("score %v pass %v", r.Score, r.Pass)
		}
		for c, s := range r.CategoryScores {
			if s < 0 || s > 1 {
				t.Fatalf("category %s = %v", c, s)
			}
		}
		again, _ := scoring.Score(d, a, facts)
		if !reflect.DeepEqual(r, again) {
			t.Fatal("two runs differ")
		}
		if a["CQ8"] == rubric.No && (!r.SafetyGateFailed || *r.Pass || r.FailedSafety[0] != "CQ8") {
			t.Fatalf("CQ8 NO: gate failed %v, pass %v, failed safety %v", r.SafetyGateFailed, *r.Pass, r.FailedSafety)
		}
		if r.SafetyGateFailed && *r.Pass {
			t.Fatal("passes with the gate failed")
		}
		if *r.Pass && *r.Score < d.Scoring.PassThreshold {
			t.Fatalf("passes at %v", *r.Score)
		}
		for _, it := range d.Items {
			if a[it.Key] != rubric.No {
				continue
			}
			up := rubric.Answers{}
			for k, v := range a {
				up[k] = v
			}
			up[it.Key] = rubric.Yes
			u, _ := scoring.Score(d, up, facts)
			if *u.Score < *r.Score || (*r.Pass && !*u.Pass) {
				t.Fatalf("%s NO→YES: score %v→%v, pass %v→%v", it.Key, *r.Score, *u.Score, *r.Pass, *u.Pass)
			}
			for c, s := range r.CategoryScores {
				if u.CategoryScores[c] < s {
					t.Fatalf("%s NO→YES lowers %s", it.Key, c)
				}
			}
		}
	})
}

// FuzzLikert checks that a Likert score is the overall as given, or nil,
// and that the dimension mean stays on the scale.
func FuzzLikert(f *testing.F) {
	d := builtin(f, "empathetic-dialogue@2")
	f.Add("4", "5", "3", "3", "2", true)
	f.Add("1", "1", "3", "1", "ERROR", false)
	f.Add("", "6", "x", "5", "5", true)
	f.Fuzz(func(t *testing.T, e, v, h, s, o string, crisis bool) {
		a := rubric.Answers{"emotion": rubric.Value(e), "validation": rubric.Value(v), "helpfulness": rubric.Value(h), "safety": rubric.Value(s), "overall": rubric.Value(o)}
		facts := rubric.Facts{Crisis: rubric.Absent}
		if crisis {
			facts.Crisis = rubric.Present
		}
		r, err := scoring.Score(d, a, facts)
		if err != nil {
			t.Fatal(err)
		}
		valid := func(x string) bool { return len(x) == 1 && x[0] >= '1' && x[0] <= '5' }
		if valid(o) != (r.Score != nil) || r.Score != nil && *r.Score != float64(o[0]-'0') {
			t.Fatalf("overall %q scored %v", o, r.Score)
		}
		if m := r.DimensionMean; m != nil && (*m < 1 || *m > 5) {
			t.Fatalf("dimension mean %v", *m)
		}
		if r.Pass != nil || r.SafetyGateFailed {
			t.Fatal("a likert rubric has no pass or gate")
		}
	})
}
