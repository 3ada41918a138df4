package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
)

// randomInput is an experiment on the coaching rubric with random answers
// skewed towards each item's first value; missing is the percentage of
// absent answer sets, absent answers and (half as often) ERRORs.
func randomInput(t *testing.T, items, variants, replicates, missing int, seed uint64) Input {
	t.Helper()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	answer := func(skew int) map[string]string {
		if rng.IntN(100) < missing {
			return nil
		}
		m := map[string]string{}
		for _, it := range def.Items {
			vs := def.Allowed(&it)
			switch {
			case rng.IntN(100) < missing:
			case rng.IntN(200) < missing:
				m[it.Key] = "ERROR"
			case rng.IntN(100) < skew:
				m[it.Key] = string(vs[0])
			default:
				m[it.Key] = string(vs[rng.IntN(len(vs))])
			}
		}
		return m
	}
	in := Input{Def: def, Humans: []string{"h1", "h2", "h3"}, Alt: agreement.AltOptions{Epsilon: 0.15},
		Bootstrap: agreement.Bootstrap{Replicates: replicates, Level: 0.95, Seed: seed}}
	for v := range variants {
		in.Variants = append(in.Variants, fmt.Sprint("v", v))
	}
	for i := range items {
		it := Item{ID: int64(i + 1), Gold: answer(60), Humans: []map[string]string{answer(60), answer(50), answer(40)}}
		for v := range variants {
			it.Variants = append(it.Variants, answer(30+10*v))
		}
		in.Items = append(in.Items, it)
	}
	return in
}

// direct computes each variant's kappa with gold on rubric item it and its
// mean absolute error, with their differences from the best, straight
// from their definitions: a contingency table and CohenKappa per variant
// and resample, one statistic at a time.
func direct(t *testing.T, in Input, it *rubric.Item) []agreement.Estimate {
	t.Helper()
	nv := len(in.Variants)
	var f func(v int, w []int) agreement.Estimate
	better := func(a, b float64) bool { return a > b }
	if it != nil {
		var labels []string
		for _, v := range in.Def.Allowed(it) {
			labels = append(labels, string(v))
		}
		scale, err := agreement.NewScale(labels...)
		if err != nil {
			t.Fatal(err)
		}
		idx := func(m map[string]string) (int, bool) {
			if m == nil {
				return 0, false
			}
			return scale.Index(m[it.Key])
		}
		f = func(v int, w []int) agreement.Estimate {
			counts := make([][]int, scale.Len())
			for k := range counts {
				counts[k] = make([]int, scale.Len())
			}
			for i, item := range in.Items {
				g, okg := idx(item.Gold)
				x, okx := idx(item.Variants[v])
				if okg && okx {
					counts[g][x] += w[i]
				}
			}
			c, err := agreement.NewContingency(scale, counts)
			if err != nil {
				t.Fatal(err)
			}
			return agreement.CohenKappa(c, agreement.NoWeights)
		}
	} else {
		better = func(a, b float64) bool { return a < b }
		gold, vs := make([]scored, len(in.Items)), make([][]scored, nv)
		for v := range vs {
			vs[v] = make([]scored, len(in.Items))
		}
		for i, item := range in.Items {
			var err error
			if gold[i], err = score(in.Def, item.Gold); err != nil {
				t.Fatal(err)
			}
			for v := range nv {
				if vs[v][i], err = score(in.Def, item.Variants[v]); err != nil {
					t.Fatal(err)
				}
			}
		}
		f = func(v int, w []int) agreement.Estimate {
			var sum float64
			n := 0
			for i := range in.Items {
				g, x := gold[i], vs[v][i]
				if g.hasScore && x.hasScore && w[i] > 0 {
					sum += float64(w[i]) * math.Abs(x.score-g.score)
					n += w[i]
				}
			}
			if n == 0 {
				return agreement.Estimate{Reason: "no item has a final score from both gold and the variant"}
			}
			return agreement.Estimate{Value: sum / float64(n), Defined: true}
		}
	}
	ones := make([]int, len(in.Items))
	for i := range ones {
		ones[i] = 1
	}
	best := -1
	for v := range nv {
		if e := f(v, ones); e.Defined && (best < 0 || better(e.Value, f(best, ones).Value)) {
			best = v
		}
	}
	var stats []func([]int) agreement.Estimate
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate { return f(v, w) })
	}
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate {
			if best < 0 {
				return agreement.Estimate{Reason: "none"}
			}
			a, b := f(v, w), f(best, w)
			if !a.Defined || !b.Defined {
				return agreement.Estimate{Reason: "undefined"}
			}
			return agreement.Estimate{Value: a.Value - b.Value, Defined: true}
		})
	}
	if in.Bootstrap.Replicates == 0 {
		out := make([]agreement.Estimate, len(stats))
		for i, s := range stats {
			out[i] = s(ones)
		}
		return out
	}
	out, err := agreement.BootstrapItems(len(in.Items), in.Bootstrap, stats...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run's resampled figures — kappa with gold and mean absolute error, each
// with its difference from the best — are exactly those of their direct
// definitions on the same resamples, however its evaluation shares work.
func TestRunResamplesAsDefined(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		items, variants, replicates, missing int
	}{
		{400, 5, 200, 0},
		{300, 3, 100, 10},
		{50, 4, 300, 30},
		{40, 2, 0, 5},
		{0, 2, 100, 5},
	} {
		in := randomInput(t, c.items, c.variants, c.replicates, c.missing, uint64(c.items+c.missing))
		res, err := Run(in)
		if err != nil {
			t.Fatal(err)
		}
		// Undefined differences say why in their own words; the figures
		// and intervals are what must match.
		same := func(got Stat, want agreement.Estimate) bool {
			w := stat(want)
			got.Reason, w.Reason = "", ""
			return reflect.DeepEqual(got, w)
		}
		nv := c.variants
		for k := range in.Def.Items {
			want := direct(t, in, &in.Def.Items[k])
			for v, row := range res.RubricItems[k].Variants {
				if !same(row.KappaGold, want[v]) || !same(row.KappaDiff, want[nv+v]) {
					t.Errorf("%+v: %s, %s: kappa %+v, diff %+v; by definition %+v, %+v", c, in.Def.Items[k].Key, row.Variant,
						row.KappaGold, row.KappaDiff, want[v], want[nv+v])
				}
			}
		}
		want := direct(t, in, nil)
		for v, row := range res.Scores {
			if !same(row.MAE, want[v]) || !same(row.MAEDiff, want[nv+v]) {
				t.Errorf("%+v: %s: MAE %+v, diff %+v; by definition %+v, %+v", c, row.Variant, row.MAE, row.MAEDiff, want[v], want[nv+v])
			}
		}
	}
}
