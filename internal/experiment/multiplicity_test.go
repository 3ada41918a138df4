package experiment

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/attune/attune/internal/agreement"
)

// simFlag runs the full grid of the family-wise simulations: k = 2, 4, 8
// variants on 100 and 400 items, 1,000 replicates, 500 experiments per case
// (minutes), and the power at a fifth more errors. Without it the tests
// run the smallest case with the most comparisons (100 items, k = 8, 500
// replicates, 200 experiments), which still fails the marginal intervals
// the page once showed.
var simFlag = flag.Bool("sim", false, "run the full grid of the experiment's family-wise simulations")

// simKind is what the simulated variants answer: a YES/NO rubric item, a
// 1–5 Likert item, or a final score (0–100) whose error is the MAE.
type simKind string

const (
	simYesNo  simKind = "YES/NO"
	simLikert simKind = "Likert 1-5"
	simScore  simKind = "final score"
)

// simCase is one cell of the grid: k variants on n items, each wrong with
// probability errRate (the score's: off by |N(0, 10·errRate…)|, see
// simulate) but the last, whose error is worse times as large.
type simCase struct {
	kind             simKind
	n, k             int
	worse            float64 // 1 for k equal variants
	replicates, sims int
	errRate          float64
	seed             uint64
}

// comparison is versusBest's contract, so that a broken procedure can be
// run through the same simulation.
type comparison func(full []agreement.Estimate, reps [][]float64, best int, lowerBetter bool, level float64, n int) ([]Stat, []string)

func simultaneous(full []agreement.Estimate, reps [][]float64, best int, lowerBetter bool, level float64, n int) ([]Stat, []string) {
	return versusBest(full, reps, best, lowerBetter, level, n, "none", "undefined")
}

// marginal is the procedure the experiment had: each variant's difference
// from the best picked on the data, with its own percentile interval.
func marginal(full []agreement.Estimate, reps [][]float64, best int, lowerBetter bool, level float64, _ int) ([]Stat, []string) {
	nv := len(full)
	diffs, verdicts := make([]Stat, nv), make([]string, nv)
	for v := range nv {
		verdicts[v] = VerdictNotCompared
		if v == best {
			verdicts[v] = VerdictBest
			continue
		}
		var xs []float64
		for _, row := range reps {
			if x := row[v] - row[best]; !math.IsNaN(x) {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 || !full[v].Defined {
			continue
		}
		slices.Sort(xs)
		lo, hi := agreement.Quantile(xs, (1-level)/2), agreement.Quantile(xs, (1+level)/2)
		diffs[v].Lower, diffs[v].Upper = &lo, &hi
		verdicts[v] = VerdictTied
		if (!lowerBetter && hi < 0) || (lowerBetter && lo > 0) {
			verdicts[v] = VerdictWorse
		}
	}
	return diffs, verdicts
}

// simResult counts, over the simulated experiments, those where some
// variant as good as the best in truth was called worse, and those where
// the truly worse variant (the last, when worse > 1) was.
type simResult struct {
	sims, falseWorse, caught int
}

// simulate runs c.sims experiments of c through the statistics Run
// bootstraps (kappa with gold on a rubric item, or the MAE of the final
// score), compared by compare on the replicates Run uses.
func simulate(t *testing.T, c simCase, compare comparison) simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(c.seed, uint64(c.n*100+c.k)))
	b := agreement.Bootstrap{Replicates: c.replicates, Level: 0.95}
	var out simResult
	for s := range c.sims {
		b.Seed = c.seed*1_000_003 + uint64(s)
		var st agreement.ItemStats
		lowerBetter := c.kind == simScore
		rate := func(v int) float64 {
			if v == c.k-1 {
				return c.errRate * c.worse
			}
			return c.errRate
		}
		switch c.kind {
		case simYesNo, simLikert:
			q := 2
			if c.kind == simLikert {
				q = 5
			}
			gold := make([]int, c.n)
			vals := make([][]int, c.k)
			for i := range gold {
				switch {
				case q == 2 && rng.Float64() < 0.6:
					gold[i] = 0
				case q == 2:
					gold[i] = 1
				default:
					// Skewed, as answers to a Likert item are.
					u, cum := rng.Float64(), 0.0
					for k, p := range []float64{0.1, 0.2, 0.3, 0.25, 0.15} {
						if cum += p; u < cum || k == 4 {
							gold[i] = k
							break
						}
					}
				}
			}
			for v := range vals {
				vals[v] = make([]int, c.n)
				for i, g := range gold {
					x := g
					if rng.Float64() < rate(v) {
						// Off by one, as a judge misreads a Likert anchor.
						switch {
						case q == 2:
							x = 1 - g
						case g == 0:
							x = 1
						case g == q-1:
							x = q - 2
						case rng.IntN(2) == 0:
							x = g - 1
						default:
							x = g + 1
						}
					}
					vals[v][i] = x
				}
			}
			kg := newKappaGold(q, gold, vals)
			st = agreement.ItemStats{N: c.k, Eval: kg.eval}
		case simScore:
			gold := make([]scored, c.n)
			vs := make([][]scored, c.k)
			for i := range gold {
				gold[i] = scored{ok: true, hasScore: true, score: 100 * rng.Float64()}
			}
			for v := range vs {
				vs[v] = make([]scored, c.n)
				for i, g := range gold {
					vs[v][i] = scored{ok: true, hasScore: true, score: g.score + 40*rate(v)*rng.NormFloat64()}
				}
			}
			st = agreement.ItemStats{N: c.k, Eval: newMAE(gold, vs).eval}
		}
		full, reps, err := agreement.BootstrapItemReplicates(c.n, b, 1, st)
		if err != nil {
			t.Fatal(err)
		}
		best := bestOf(full[0], lowerBetter)
		_, verdicts := compare(full[0], reps[0], best, lowerBetter, b.Level, c.n)
		out.sims++
		for v, verdict := range verdicts {
			if verdict != VerdictWorse {
				continue
			}
			if rate(v) <= rate(best) {
				out.falseWorse++
				break
			}
		}
		if c.worse > 1 && verdicts[c.k-1] == VerdictWorse {
			out.caught++
		}
	}
	return out
}

// bound is the family-wise rate a procedure at level 0.95 may show over
// sims experiments: 0.05 and three standard errors of a rate of 0.05.
func bound(sims int) float64 {
	return 0.05 + 3*math.Sqrt(0.05*0.95/float64(sims))
}

func grid(kinds []simKind, ns, ks []int) []simCase {
	// Fewer than 500 replicates put the quantile of the maximum too low
	// (200 called some of 8 equal variants worse in 11 % of experiments).
	reps, sims := 500, 200
	if *simFlag {
		reps, sims = 1000, 500
	}
	var out []simCase
	for _, kind := range kinds {
		for _, n := range ns {
			for _, k := range ks {
				err := 0.2
				if kind == simLikert {
					err = 0.3
				}
				out = append(out, simCase{kind: kind, n: n, k: k, worse: 1, replicates: reps, sims: sims, errRate: err,
					seed: uint64(len(out) + 1)})
			}
		}
	}
	return out
}

// runGrid simulates every case, two at a time.
func runGrid(t *testing.T, cases []simCase, compare comparison) []simResult {
	t.Helper()
	out := make([]simResult, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = simulate(t, c, compare)
		})
	}
	wg.Wait()
	return out
}

// With k equal variants — equal error rates on a YES/NO item, a Likert
// item and the final score — the chance that some variant is called worse
// than the best is at most 5 % (within three standard errors of the
// simulation) whatever k: the guarantee docs/judges.md states.
func TestEqualVariantsFamilyWise(t *testing.T) {
	t.Parallel()
	ns, ks := []int{100}, []int{8}
	if *simFlag {
		ns, ks = []int{100, 400}, []int{2, 4, 8}
	}
	cases := grid([]simKind{simYesNo, simLikert, simScore}, ns, ks)
	for i, r := range runGrid(t, cases, simultaneous) {
		c := cases[i]
		rate := float64(r.falseWorse) / float64(r.sims)
		t.Logf("%s, n %d, k %d, B %d: some equal variant called worse in %d of %d experiments (%.3f)", c.kind, c.n, c.k, c.replicates, r.falseWorse, r.sims, rate)
		if rate > bound(r.sims) {
			t.Errorf("%s, n %d, k %d: family-wise rate %.3f > %.3f", c.kind, c.n, c.k, rate, bound(r.sims))
		}
	}
}

// The same simulation fails the procedure the experiment had: marginal
// intervals of the differences from the best picked on the data call some
// of 4 or 8 equal variants worse far more often than 5 %. If it passed,
// TestEqualVariantsFamilyWise would prove nothing.
func TestMarginalIntervalsFailTheFamilyWiseTest(t *testing.T) {
	t.Parallel()
	cases := grid([]simKind{simYesNo, simLikert, simScore}, []int{100}, []int{4, 8})
	if !*simFlag {
		cases = grid([]simKind{simYesNo, simLikert, simScore}, []int{100}, []int{8})
		for i := range cases {
			cases[i].sims, cases[i].replicates = 100, 200
		}
	}
	for i, r := range runGrid(t, cases, marginal) {
		c := cases[i]
		rate := float64(r.falseWorse) / float64(r.sims)
		t.Logf("marginal: %s, n %d, k %d: some equal variant called worse in %.3f", c.kind, c.n, c.k, rate)
		if rate <= bound(r.sims) {
			t.Errorf("marginal intervals pass the family-wise test (%s, k %d: %.3f): the test cannot tell a broken procedure", c.kind, c.k, rate)
		}
	}
}

// A variant truly worse than the others — half as many errors again on
// 400 items, k = 4 — is called worse in most experiments, while the equal
// ones still are not; with -sim, the power at a fifth more errors is
// reported too.
func TestWorseVariantIsCaught(t *testing.T) {
	t.Parallel()
	reps, sims, factors := 200, 50, []float64{1.5}
	if *simFlag {
		reps, sims, factors = 1000, 500, []float64{1.5, 1.2}
	}
	var cases []simCase
	for _, worse := range factors {
		for _, kind := range []simKind{simYesNo, simLikert, simScore} {
			err := 0.2
			if kind == simLikert {
				err = 0.3
			}
			cases = append(cases, simCase{kind: kind, n: 400, k: 4, worse: worse, replicates: reps, sims: sims, errRate: err,
				seed: uint64(100 + len(cases))})
		}
	}
	for i, r := range runGrid(t, cases, simultaneous) {
		c := cases[i]
		power := float64(r.caught) / float64(r.sims)
		t.Logf("%s, n %d, k %d, error ×%.1f: the worse variant called worse in %.2f of experiments, an equal one in %.3f",
			c.kind, c.n, c.k, c.worse, power, float64(r.falseWorse)/float64(r.sims))
		if c.worse == 1.5 && power < 0.6 {
			t.Errorf("%s: power %.2f at n 400 for half as many errors again, want at least 0.6", c.kind, power)
		}
		if rate := float64(r.falseWorse) / float64(r.sims); rate > bound(r.sims) {
			t.Errorf("%s, error ×%.1f: an equal variant called worse in %.3f", c.kind, c.worse, rate)
		}
	}
}

func (c simCase) String() string { return fmt.Sprintf("%s n%d k%d", c.kind, c.n, c.k) }
