package ppi

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// simFull runs the whole grid of TestCoverage (n up to 2,000, N up to
// 100,000, 1,000 data sets a cell); by default a smaller grid runs.
var simFull = flag.Bool("sim", false, "run the full coverage grid of the prediction-powered intervals")

// simDatasets sizes each cell of the -sim grid; fewer screen it quickly,
// and the coverage floor widens to match.
var simDatasets = flag.Int("sim.datasets", 1000, "simulated data sets per cell of the -sim grid")

// simScale is how items and people behave: a latent true answer per item
// and each person's answer given it. The human value of an item is the
// mean of two people's answers, as attune takes it.
type simScale struct {
	name   string
	truth  []float64   // P(latent = k)
	answer [][]float64 // answer[t][a] = P(a person answers a | latent t)
	values []float64   // the value of answer a
}

// theta is the true mean human value, E[answer], by enumeration.
func (s simScale) theta() float64 {
	var th float64
	for t, pt := range s.truth {
		for a, pa := range s.answer[t] {
			th += pt * pa * s.values[a]
		}
	}
	return th
}

func pick(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for k, pk := range p {
		if u < pk {
			return k
		}
		u -= pk
	}
	return len(p) - 1
}

var (
	binaryScale = simScale{
		name:   "binary",
		truth:  []float64{0.7, 0.3},
		answer: [][]float64{{0.9, 0.1}, {0.15, 0.85}},
		values: []float64{0, 1},
	}
	likertScale = simScale{
		name:  "likert",
		truth: []float64{0.05, 0.1, 0.2, 0.4, 0.25},
		answer: [][]float64{
			{0.8, 0.2, 0, 0, 0},
			{0.15, 0.7, 0.15, 0, 0},
			{0, 0.15, 0.7, 0.15, 0},
			{0, 0, 0.15, 0.7, 0.15},
			{0, 0, 0, 0.2, 0.8},
		},
		values: []float64{1, 2, 3, 4, 5},
	}
)

// simJudge is a judge's value of an item given its latent answer, on the
// scale's values: kinds of error a real judge shows.
type simJudge struct {
	name string
	rate func(rng *rand.Rand, s simScale, t int) float64
}

var simJudges = []simJudge{
	// Noisy but unbiased in the way a person is: answers like a careless
	// annotator.
	{"noisy", func(rng *rand.Rand, s simScale, t int) float64 {
		if rng.Float64() < 0.3 {
			return s.values[rng.IntN(len(s.values))]
		}
		return s.values[pick(rng, s.answer[t])]
	}},
	// Lenient: one step up the scale a third of the time (on YES/NO,
	// a NO becomes YES), the bias PPI exists to remove.
	{"lenient", func(rng *rand.Rand, s simScale, t int) float64 {
		a := pick(rng, s.answer[t])
		if rng.Float64() < 0.35 {
			a = min(a+1, len(s.values)-1)
		}
		return s.values[a]
	}},
	// Blind: unrelated to the item, so λ should fall to about 0.
	{"blind", func(rng *rand.Rand, s simScale, t int) float64 {
		return s.values[rng.IntN(len(s.values))]
	}},
	// A continuous score, compressed towards the middle, shifted and
	// noisy: a probability or an averaged rating, not the scale's values.
	{"score", func(rng *rand.Rand, s simScale, t int) float64 {
		lo, hi := s.values[0], s.values[len(s.values)-1]
		mid := (lo + hi) / 2
		return mid + 0.5*(s.values[t]-mid) + 0.1*(hi-lo) + 0.15*(hi-lo)*rng.NormFloat64()
	}},
}

type coverageCell struct {
	scale    simScale
	judge    simJudge
	n, N     int
	datasets int
}

func (c coverageCell) String() string {
	return fmt.Sprintf("%s/%s/n=%d/N=%d", c.scale.name, c.judge.name, c.n, c.N)
}

// simulate draws one data set of the cell into s, reusing its slices.
func (c coverageCell) simulate(rng *rand.Rand, s *Sample) {
	s.Human, s.JudgeLabelled, s.JudgeUnlabelled = s.Human[:0], s.JudgeLabelled[:0], s.JudgeUnlabelled[:0]
	for range c.n {
		t := pick(rng, c.scale.truth)
		h := (c.scale.values[pick(rng, c.scale.answer[t])] + c.scale.values[pick(rng, c.scale.answer[t])]) / 2
		s.Human = append(s.Human, h)
		s.JudgeLabelled = append(s.JudgeLabelled, c.judge.rate(rng, c.scale, t))
	}
	for range c.N {
		t := pick(rng, c.scale.truth)
		s.JudgeUnlabelled = append(s.JudgeUnlabelled, c.judge.rate(rng, c.scale, t))
	}
}

type cellResult struct {
	ppiCovered, humanCovered, judgeCovered int
	widthRatio, maxWidthRatio, lambda      float64
	effective                              float64
}

func (c coverageCell) run(t *testing.T, seed uint64) cellResult {
	rng := rand.New(rand.NewPCG(seed, uint64(c.n)*1_000_003+uint64(c.N)))
	theta := c.scale.theta()
	var r cellResult
	var s Sample
	// Three standard errors of a relative variance estimate from n items:
	// how much wider than the human-only interval sampling alone can make
	// a tuned one.
	slack := 1 + 3*math.Sqrt(2/float64(c.n))
	for range c.datasets {
		c.simulate(rng, &s)
		e, err := Mean(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.PPI.Low <= theta && theta <= e.PPI.High {
			r.ppiCovered++
		}
		if e.Human.Low <= theta && theta <= e.Human.High {
			r.humanCovered++
		}
		if e.Judge.Low <= theta && theta <= e.Judge.High {
			r.judgeCovered++
		}
		ratio := (e.PPI.High - e.PPI.Low) / (e.Human.High - e.Human.Low)
		if ratio > slack {
			t.Errorf("%v: PPI interval %.4g times the human-only one (λ %.3f), beyond sampling error %.4g", c, ratio, e.PPI.Lambda, slack)
		}
		r.widthRatio += ratio / float64(c.datasets)
		r.maxWidthRatio = max(r.maxWidthRatio, ratio)
		r.lambda += e.PPI.Lambda / float64(c.datasets)
		r.effective += e.EffectiveHumanLabels / float64(c.datasets)
	}
	return r
}

// floor is the coverage a cell of so many data sets must reach: 0.93 less
// two standard errors of a proportion near it.
func floor(datasets int) float64 {
	return 0.93 - 2*math.Sqrt(0.93*0.07/float64(datasets))
}

// TestCoverage simulates data sets with a known true mean for each kind of
// judge on both scales and checks that the 95 % PPI interval covers it at
// least 93 % of the time (less two standard errors), and is never wider
// than the human-only interval by more than sampling error. The judge-only
// interval's coverage is logged: for a biased judge it is far below 95 %,
// which is the point of the method.
func TestCoverage(t *testing.T) {
	sizes := [][2]int{{50, 1000}, {200, 10_000}}
	datasets := 300
	if *simFull {
		sizes = nil
		for _, n := range []int{50, 200, 2000} {
			for _, N := range []int{1000, 10_000, 100_000} {
				sizes = append(sizes, [2]int{n, N})
			}
		}
		datasets = *simDatasets
	}
	var covered, total int
	for _, scale := range []simScale{binaryScale, likertScale} {
		for _, judge := range simJudges {
			for _, size := range sizes {
				c := coverageCell{scale: scale, judge: judge, n: size[0], N: size[1], datasets: datasets}
				r := c.run(t, uint64(len(c.String())))
				cov := float64(r.ppiCovered) / float64(datasets)
				t.Logf("%-28v ppi %.3f  human %.3f  judge %.3f  width ratio mean %.3f max %.3f  λ %.2f  effective labels %.0f",
					c, cov, float64(r.humanCovered)/float64(datasets), float64(r.judgeCovered)/float64(datasets),
					r.widthRatio, r.maxWidthRatio, r.lambda, r.effective)
				if cov < floor(datasets) {
					t.Errorf("%v: PPI coverage %.3f < %.3f", c, cov, floor(datasets))
				}
				if r.widthRatio > 1 {
					t.Errorf("%v: PPI intervals wider than human-only on average (%.4f)", c, r.widthRatio)
				}
				// A lenient judge's own interval is narrow around the wrong
				// value: what PPI corrects must be there to correct.
				if judge.name == "lenient" && r.judgeCovered > datasets/2 {
					t.Errorf("%v: the lenient judge alone covers %d of %d; the simulation has no bias to remove", c, r.judgeCovered, datasets)
				}
				covered += r.ppiCovered
				total += datasets
			}
		}
	}
	all := float64(covered) / float64(total)
	t.Logf("all cells: PPI coverage %.4f over %d data sets", all, total)
	if all < floor(total) {
		t.Errorf("PPI coverage over all cells %.4f < %.4f", all, floor(total))
	}
}
