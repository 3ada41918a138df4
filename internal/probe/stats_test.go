package probe_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attune/attune/internal/probe"
)

var yesNo = []string{"YES", "NO"}

// items builds n retest items: the first changed of them answer YES then
// NO then YES, the rest YES k times, or NO every other item.
func items(n, changed, k int) []probe.Answers {
	var out []probe.Answers
	for i := range n {
		a := make([]string, k)
		for j := range a {
			a[j] = yesNo[i%2]
			if i < changed {
				a[j] = yesNo[j%2]
			}
		}
		out = append(out, probe.Answers{Item: fmt.Sprint(i), Answers: a})
	}
	return out
}

func TestRetest(t *testing.T) {
	th := probe.DefaultThresholds()
	tests := []struct {
		name    string
		items   []probe.Answers
		changed int
		n       int
		share   float64
		kappa   float64 // NaN: undefined
		verdict probe.Verdict
	}{
		{"the same answers every time", items(20, 0, 3), 0, 20, 0, 1, probe.Stable},
		{"two of twenty change: at the threshold", items(20, 2, 3), 2, 20, 0.10, 0.8665, probe.Stable},
		{"three of twenty change: over it", items(20, 3, 3), 3, 20, 0.15, 0.8, probe.Unstable},
		{"every item changes", items(12, 12, 4), 12, 12, 1, -0.3333, probe.Unstable},
		{"nine items are too few to judge", items(9, 9, 3), 9, 9, 1, -0.5, probe.TooFew},
		{"one answer per item is no retest", items(15, 0, 1), 0, 0, 0, math.NaN(), probe.TooFew},
		{"unreadable asks are left out", []probe.Answers{{Item: "a", Answers: []string{"YES", "", "YES"}}, {Item: "b", Answers: []string{"", "", "NO"}}},
			0, 1, 0, math.NaN(), probe.TooFew},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probe.Retest("empathy", yesNo, tc.items, th)
			if err != nil {
				t.Fatal(err)
			}
			if got.Items != tc.n || got.Changed != tc.changed || math.Abs(got.ChangeShare-tc.share) > 1e-12 || got.Verdict != tc.verdict {
				t.Errorf("items %d changed %d share %v verdict %q; want %d %d %v %q",
					got.Items, got.Changed, got.ChangeShare, got.Verdict, tc.n, tc.changed, tc.share, tc.verdict)
			}
			switch {
			case math.IsNaN(tc.kappa) && got.Kappa != nil:
				t.Errorf("kappa = %v; want undefined", *got.Kappa)
			case math.IsNaN(tc.kappa) && got.KappaReason == "":
				t.Error("an undefined kappa without a reason")
			case !math.IsNaN(tc.kappa) && (got.Kappa == nil || math.Abs(*got.Kappa-tc.kappa) > 5e-5):
				t.Errorf("kappa = %v (%s); want %v", got.Kappa, got.KappaReason, tc.kappa)
			}
		})
	}
}

func TestRetestRefuses(t *testing.T) {
	if _, err := probe.Retest("empathy", yesNo, []probe.Answers{{Item: "7", Answers: []string{"YES", "MAYBE"}}}, probe.DefaultThresholds()); err == nil ||
		!strings.Contains(err.Error(), `"MAYBE"`) || !strings.Contains(err.Error(), "item 7") {
		t.Errorf("an answer off the scale: err = %v; want it and its item named", err)
	}
	for _, th := range []probe.Thresholds{{RetestChange: -0.1, PerturbMove: 0.1, MinItems: 10}, {RetestChange: 0.1, PerturbMove: 1, MinItems: 10},
		{RetestChange: 0.1, PerturbMove: 0.1, MinItems: 1}, {RetestChange: math.NaN(), PerturbMove: 0.1, MinItems: 10}} {
		if _, err := probe.Retest("empathy", yesNo, nil, th); err == nil {
			t.Errorf("thresholds %+v accepted", th)
		}
	}
}

func TestPerturbation(t *testing.T) {
	pairs := func(n, moved int) []probe.Pair {
		var out []probe.Pair
		for i := range n {
			p := probe.Pair{Item: fmt.Sprint(i), Original: "3", Rewritten: "3"}
			if i < moved {
				p.Rewritten = "4"
			}
			out = append(out, p)
		}
		return out
	}
	tests := []struct {
		name    string
		pairs   []probe.Pair
		n, mv   int
		verdict probe.Verdict
	}{
		{"nothing moves", pairs(30, 0), 30, 0, probe.Stable},
		{"three of thirty move", pairs(30, 3), 30, 3, probe.Stable},
		{"four of thirty move", pairs(30, 4), 30, 4, probe.Unstable},
		{"too few", pairs(5, 5), 5, 5, probe.TooFew},
		{"a missing answer drops the pair", append(pairs(10, 0), probe.Pair{Item: "x", Original: "3"}), 10, 0, probe.Stable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probe.Perturbation("warmth", probe.Rename, tc.pairs, probe.DefaultThresholds())
			if err != nil {
				t.Fatal(err)
			}
			if got.Items != tc.n || got.Moved != tc.mv || got.Verdict != tc.verdict || got.Rewrite != probe.Rename {
				t.Errorf("got %+v; want %d items, %d moved, %q", got, tc.n, tc.mv, tc.verdict)
			}
		})
	}
	if _, err := probe.Perturbation("warmth", "shuffle", nil, probe.DefaultThresholds()); err == nil {
		t.Error("an unknown rewrite accepted")
	}
}

func TestCertify(t *testing.T) {
	unstable := &probe.Summary{Perturbation: []probe.PerturbResult{{Criterion: "warmth", Rewrite: probe.Rename, Verdict: probe.Unstable}}}
	stable := &probe.Summary{Retest: []probe.RetestResult{{Criterion: "warmth", Verdict: probe.Stable}, {Criterion: "tone", Verdict: probe.TooFew}}}
	tests := []struct {
		passed bool
		word   string
		s      *probe.Summary
		want   string
	}{
		{true, "passed", unstable, probe.PassedUnstable},
		{true, "passed, but on 2 annotators", unstable, "passed, but on 2 annotators, and unstable"},
		{true, "passed", stable, "passed"},
		{true, "passed", nil, "passed"},
		{false, "failed", unstable, "failed"},
		{false, "cannot tell", unstable, "cannot tell"},
	}
	for _, tc := range tests {
		if got := probe.Certify(tc.passed, tc.word, tc.s); got != tc.want {
			t.Errorf("Certify(%v, %q) = %q; want %q", tc.passed, tc.word, got, tc.want)
		}
	}
	if got := unstable.Failed(); len(got) != 1 || got[0] != "rename of warmth" {
		t.Errorf("Failed() = %q", got)
	}
}

// TestProbeSimulation holds the rates the probes state: on 40 items, a
// judge that gives an item the other answer on 1 % of its asks (an item
// changes across three asks about 3 % of the time) is called stable in at
// least 95 % of probes, and one that does so on 30 % of asks is called
// unstable in at least 99 %, with the default threshold of 10 %. The seeded draws make the test the same every run.
func TestProbeSimulation(t *testing.T) {
	const items, k, trials = 40, 3, 2000
	th := probe.DefaultThresholds()
	rng := rand.New(rand.NewPCG(33, 50))
	// flip is the chance that one ask of an item gives the other answer
	// than the item's own; an item changes across k asks with chance
	// 1 - (1-flip)^k - flip^k, which simulate passes to the probes.
	run := func(flip float64) (retestUnstable, perturbUnstable int) {
		for range trials {
			var as []probe.Answers
			var ps []probe.Pair
			for i := range items {
				own := rng.IntN(2)
				ask := func() string {
					if rng.Float64() < flip {
						return yesNo[1-own]
					}
					return yesNo[own]
				}
				a := probe.Answers{Item: fmt.Sprint(i)}
				for range k {
					a.Answers = append(a.Answers, ask())
				}
				as = append(as, a)
				ps = append(ps, probe.Pair{Item: fmt.Sprint(i), Original: yesNo[own], Rewritten: ask()})
			}
			r, err := probe.Retest("c", yesNo, as, th)
			if err != nil {
				t.Fatal(err)
			}
			p, err := probe.Perturbation("c", probe.Append, ps, th)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict == probe.Unstable {
				retestUnstable++
			}
			if p.Verdict == probe.Unstable {
				perturbUnstable++
			}
		}
		return
	}
	if r, p := run(0.01); float64(r) > 0.05*trials || float64(p) > 0.05*trials {
		t.Errorf("a stable judge was called unstable in %d (retest) and %d (perturbation) of %d probes; want at most 5 %%", r, p, trials)
	}
	if r, p := run(0.30); float64(r) < 0.99*trials || float64(p) < 0.99*trials {
		t.Errorf("an unstable judge was called unstable in only %d (retest) and %d (perturbation) of %d probes; want at least 99 %%", r, p, trials)
	}
}
