package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
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
	in := Input{Def: def, Humans: []string{"h1", "h2", "h3"},
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

// direct computes each variant's kappa with gold on rubric item it (its
// mean absolute error when it is nil), with their differences from the
// best, straight from their definitions: a contingency table and
// CohenKappa per variant and resample, one statistic at a time, and the
// simultaneous intervals of the differences by maxT.
func direct(t *testing.T, in Input, it *rubric.Item) ([]agreement.Estimate, []Stat, []string) {
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
	figs := make([]agreement.Estimate, nv)
	for v := range nv {
		figs[v] = f(v, ones)
	}
	var reps [][]float64
	if in.Bootstrap.Replicates > 0 {
		var err error
		if figs, err = agreement.BootstrapItems(len(in.Items), in.Bootstrap, stats...); err != nil {
			t.Fatal(err)
		}
		group := agreement.ItemStats{N: nv, Eval: func(w []int, out []agreement.Estimate) {
			for v := range nv {
				out[v] = f(v, w)
			}
		}}
		_, all, err := agreement.BootstrapItemReplicates(len(in.Items), in.Bootstrap, 1, group)
		if err != nil {
			t.Fatal(err)
		}
		reps = all[0]
	}
	diffs, verdicts := maxT(figs, reps, best, it == nil, in.Bootstrap.Level, len(in.Items))
	return figs, diffs, verdicts
}

// maxT is the simultaneous comparison with the best as its definition
// reads, pair by pair, with no shared work: for every pair of variants
// defined on the data, its standard deviation over the replicates that
// define both; the level quantile c of each replicate's largest
// |difference − the data's| / sd, carried to Student's t with n − 1
// degrees of freedom at the same tail; the best's difference from every
// other ± c·sd·√(n/(n−1)), and worse when that excludes 0.
func maxT(figs []agreement.Estimate, reps [][]float64, best int, lowerBetter bool, level float64, n int) ([]Stat, []string) {
	nv := len(figs)
	diffs, verdicts := make([]Stat, nv), make([]string, nv)
	for v := range nv {
		verdicts[v] = VerdictNotCompared
		if best >= 0 && figs[v].Defined {
			d := figs[v].Value - figs[best].Value
			diffs[v].Value = &d
		}
	}
	if best < 0 {
		return diffs, verdicts
	}
	verdicts[best] = VerdictBest
	sd := func(i, j int) (float64, bool) {
		var xs []float64
		for _, row := range reps {
			if x := row[i] - row[j]; !math.IsNaN(x) {
				xs = append(xs, x)
			}
		}
		if len(xs) < 2 {
			return 0, false
		}
		var m, ss float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		return math.Sqrt(ss / float64(len(xs)-1)), true
	}
	var maxima []float64
	for _, row := range reps {
		m, any := 0.0, false
		for i := range nv {
			for j := i + 1; j < nv; j++ {
				s, ok := sd(i, j)
				x := row[i] - row[j]
				if !figs[i].Defined || !figs[j].Defined || !ok || math.IsNaN(x) {
					continue
				}
				any = true
				if s > 0 {
					m = max(m, math.Abs(x-(figs[i].Value-figs[j].Value))/s)
				}
			}
		}
		if any {
			maxima = append(maxima, m)
		}
	}
	if len(maxima) == 0 {
		return diffs, verdicts
	}
	slices.Sort(maxima)
	h := level * float64(len(maxima)-1)
	c := maxima[len(maxima)-1]
	if k := int(h); k < len(maxima)-1 {
		c = maxima[k] + (h-float64(k))*(maxima[k+1]-maxima[k])
	}
	normalTail := 1 - 0.5*(1+math.Erf(c/math.Sqrt2))
	c = agreement.StudentTQuantile(1-normalTail, float64(n-1)) * math.Sqrt(float64(n)/float64(n-1))
	for v := range nv {
		s, ok := sd(v, best)
		if v == best || diffs[v].Value == nil || !ok {
			continue
		}
		lo, hi := *diffs[v].Value-c*s, *diffs[v].Value+c*s
		diffs[v].Lower, diffs[v].Upper = &lo, &hi
		verdicts[v] = VerdictTied
		if (!lowerBetter && hi < 0) || (lowerBetter && lo > 0) {
			verdicts[v] = VerdictWorse
		}
	}
	return diffs, verdicts
}

// Run's resampled figures — kappa with gold and mean absolute error, each
// with its difference from the best — are exactly those of their direct
// definitions on the same resamples, however its evaluation shares work,
// and so are the simultaneous intervals and verdicts of the differences.
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
		// Undefined figures say why in their own words, and the method's
		// name is the result's; the figures and intervals are what must
		// match, to the last bit for the figures and their own intervals
		// and to rounding (a running variance against a two-pass one) for
		// the differences'.
		same := func(got Stat, want agreement.Estimate) bool {
			w := stat(want)
			got.Reason, w.Reason = "", ""
			return reflect.DeepEqual(got, w)
		}
		near := func(a, b *float64) bool {
			return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) <= 1e-9)
		}
		sameDiff := func(got, want Stat) bool {
			return near(got.Value, want.Value) && near(got.Lower, want.Lower) && near(got.Upper, want.Upper) &&
				(got.Lower == nil) == (got.Method == "")
		}
		for k := range in.Def.Items {
			figs, diffs, verdicts := direct(t, in, &in.Def.Items[k])
			for v, row := range res.RubricItems[k].Variants {
				if !same(row.KappaGold, figs[v]) || !sameDiff(row.KappaDiff, diffs[v]) || row.VersusBest != verdicts[v] {
					t.Errorf("%+v: %s, %s: kappa %s, diff %s %s; by definition %+v, %s %s", c, in.Def.Items[k].Key, row.Variant,
						show(row.KappaGold), show(row.KappaDiff), row.VersusBest, figs[v], show(diffs[v]), verdicts[v])
				}
			}
		}
		figs, diffs, verdicts := direct(t, in, nil)
		for v, row := range res.Scores {
			if !same(row.MAE, figs[v]) || !sameDiff(row.MAEDiff, diffs[v]) || row.VersusBest != verdicts[v] {
				t.Errorf("%+v: %s: MAE %s, diff %s %s; by definition %+v, %s %s", c, row.Variant, show(row.MAE), show(row.MAEDiff),
					row.VersusBest, figs[v], show(diffs[v]), verdicts[v])
			}
		}
	}
}

func show(s Stat) string {
	if s.Value == nil {
		return "undefined: " + s.Reason
	}
	out := fmt.Sprintf("%.4f", *s.Value)
	if s.Lower != nil {
		out += fmt.Sprintf(" [%.4f, %.4f] %s", *s.Lower, *s.Upper, s.Method)
	}
	return out
}
