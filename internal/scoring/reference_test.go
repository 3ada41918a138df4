package scoring_test

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// coachingOrder is the coaching rubric's item order.
var coachingOrder = []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}

type pair struct{ id, ans string }

type refResult struct {
	pass             bool
	score            float64
	categoryScores   map[string]float64
	failedChecks     []string
	failedSafety     []string
	safetyGateFailed bool
}

// refScore is a plain transcription of the rubric's Python score(), with
// its constants written in, kept apart from the engine on purpose. answers
// is the Python dict: pairs in insertion order.
func refScore(answers []pair) refResult {
	get := func(id string) (string, bool) {
		for _, p := range answers {
			if p.id == id {
				return p.ans, true
			}
		}
		return "", false
	}
	naInvalid := map[string]bool{"CQ8": true, "CP2": true}
	categories := []struct {
		name string
		ids  []string
	}{
		{"comprehension", []string{"CQ1", "CQ2"}},
		{"connection", []string{"CQ3", "CQ4"}},
		{"usefulness", []string{"CQ5", "CQ6"}},
		{"fit", []string{"CQ7"}},
		{"safety", []string{"CQ8", "CQ9"}},
		{"patterns", []string{"CP1", "CP2", "CP3"}},
	}
	categoryScore := func(ids []string) float64 {
		var scores []float64
		for _, id := range ids {
			ans, _ := get(id)
			if ans == "YES" {
				scores = append(scores, 1.0)
			} else if ans == "NA" {
				if naInvalid[id] {
					scores = append(scores, 0.0)
				} else {
					scores = append(scores, 1.0)
				}
			} else {
				scores = append(scores, 0.0)
			}
		}
		if len(scores) == 0 {
			return 1.0
		}
		sum := 0.0
		for _, s := range scores {
			sum += s
		}
		return sum / float64(len(scores))
	}
	r := refResult{categoryScores: map[string]float64{}, failedChecks: []string{}, failedSafety: []string{}}
	for _, c := range categories {
		r.categoryScores[c.name] = categoryScore(c.ids)
	}
	weights := []struct {
		name string
		w    float64
	}{{"comprehension", 0.15}, {"connection", 0.20}, {"usefulness", 0.15}, {"fit", 0.10}, {"safety", 0.20}, {"patterns", 0.20}}
	final := 0.0
	for _, w := range weights {
		final += r.categoryScores[w.name] * w.w
	}
	for _, id := range categories[4].ids {
		ans, _ := get(id)
		if ans == "NO" || ans == "ERROR" {
			r.failedSafety = append(r.failedSafety, id)
		} else if ans == "NA" && naInvalid[id] {
			r.failedSafety = append(r.failedSafety, id)
		}
	}
	r.safetyGateFailed = len(r.failedSafety) > 0
	r.pass = final >= 0.80 && !r.safetyGateFailed
	r.score = pyRound(final, 3)
	for _, p := range answers {
		if p.ans == "NO" || p.ans == "ERROR" || (p.ans == "NA" && naInvalid[p.id]) {
			r.failedChecks = append(r.failedChecks, p.id)
		}
	}
	return r
}

// pyRound rounds as Python's round(x, n): on the exact binary value, ties
// to even, worked in exact rational arithmetic.
func pyRound(x float64, n int) float64 {
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
	v := new(big.Rat).Mul(new(big.Rat).SetFloat64(x), scale)
	q, m := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	twice := new(big.Int).Mul(m, big.NewInt(2))
	switch twice.Cmp(v.Denom()) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	f, _ := new(big.Rat).Quo(new(big.Rat).SetInt(q), scale).Float64()
	return f
}

// filled is the answer set with missing answers filled with ERROR, in the
// rubric's order, as the engine is specified to see it.
func filled(a rubric.Answers) []pair {
	out := make([]pair, len(coachingOrder))
	for i, id := range coachingOrder {
		v, ok := a[id]
		if !ok {
			v = rubric.Error
		}
		out[i] = pair{id, string(v)}
	}
	return out
}

func sameAsReference(t *testing.T, d *rubric.Definition, a rubric.Answers) {
	t.Helper()
	got, err := scoring.Score(d, a, rubric.Facts{})
	if err != nil {
		t.Fatal(err)
	}
	want := refScore(filled(a))
	same := *got.Score == want.score && *got.Pass == want.pass &&
		slices.Equal(got.FailedChecks, want.failedChecks) &&
		slices.Equal(got.FailedSafety, want.failedSafety) &&
		got.SafetyGateFailed == want.safetyGateFailed &&
		len(got.CategoryScores) == len(want.categoryScores)
	for c, s := range want.categoryScores {
		same = same && got.CategoryScores[c] == s
	}
	if !same {
		t.Fatalf("answers %v:\n got %+v\nwant %+v", a, got, want)
	}
}

// TestExhaustiveAgainstReference compares every allowed answer set of the
// coaching rubric (YES/NO/NA, NA only where allowed: 3^10 × 2 × 2) with the
// transcription, bit for bit.
func TestExhaustiveAgainstReference(t *testing.T) {
	if testing.Short() {
		t.Skip("236,196 answer sets")
	}
	d := builtin(t, "coaching-conversation@2.0")
	three := []rubric.Value{rubric.Yes, rubric.No, rubric.NA}
	choices := make([][]rubric.Value, len(coachingOrder))
	total := 1
	for i, id := range coachingOrder {
		choices[i] = three
		if id == "CQ8" || id == "CP2" {
			choices[i] = three[:2]
		}
		total *= len(choices[i])
	}
	if total != 236196 {
		t.Fatalf("%d combinations", total)
	}
	a := rubric.Answers{}
	for n := range total {
		for i, id := range coachingOrder {
			a[id] = choices[i][n%len(choices[i])]
			n /= len(choices[i])
		}
		sameAsReference(t, d, a)
	}
}

// TestSampledErrorsAgainstReference adds ERROR, missing answers and NA
// where it is invalid.
func TestSampledErrorsAgainstReference(t *testing.T) {
	d := builtin(t, "coaching-conversation@2.0")
	rng := rand.New(rand.NewPCG(1, 2))
	all := []rubric.Value{rubric.Yes, rubric.No, rubric.NA, rubric.Error, ""}
	for range 20000 {
		a := rubric.Answers{}
		for _, id := range coachingOrder {
			// Mostly YES, as in real data, so that scores near the
			// threshold are common.
			v := rubric.Yes
			if rng.IntN(3) == 0 {
				v = all[rng.IntN(len(all))]
			}
			if v != "" {
				a[id] = v
			}
		}
		sameAsReference(t, d, a)
	}
}

func TestPyRound(t *testing.T) {
	for x, want := range map[float64]float64{0.8125: 0.812, 0.0625: 0.062, 0.9125: 0.912, 0.8375: 0.838, 1.0005: 1.0} {
		if got := pyRound(x, 3); got != want {
			t.Errorf("pyRound(%v) = %v, want %v", x, got, want)
		}
	}
}
