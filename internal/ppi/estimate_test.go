package ppi

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const z95 = 1.959963984540054

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.17g, want %.17g (off by %.3g)", name, got, want, got-want)
	}
}

// TestMeanByHand checks Mean against a small case worked with fractions.
//
// Labelled (n = 4): human 1, 0, 1, 1; judge 1, 0, 0, 1.
// Unlabelled (N = 4): judge 1, 1, 0, 1.
//
//	mean(h) = 3/4, Var(h) = (3·(1/4)² + (3/4)²)/3 = 1/4
//	mean(j on n) = 1/2, Var(j on n) = 4·(1/2)²/3 = 1/3
//	mean(j on N) = 3/4, Var(j on N) = 1/4
//	all eight judge values: mean 5/8, Var = (5·(3/8)² + 3·(5/8)²)/7 = 15/56
//	Cov(h, j) = (1/8 + 3/8 − 1/8 + 1/8)/3 = 1/6
//	λ = (1/6) / ((1 + 4/4)·15/56) = 56/180 = 14/45
//	θ̂ = λ·3/4 + (3/4 − λ·1/2) = 3/4 + λ/4 = 149/180
//	Var(h − λj) = Var(h) − 2λ·Cov + λ²·Var(j on n)
//	            = 1/4 − 28/270 + 196/6075 = 4339/24300
//	Var(θ̂) = λ²·(1/4)/4 + (4339/24300)/4 = 588/97200 + 4339/97200 = 4927/97200
//	human: 3/4 with variance (1/4)/4 = 1/16
//	judge: 5/8 with variance (15/56)/8 = 15/448
//	effective labels = 4·(1/16)/(4927/97200) = 24300/4927
func TestMeanByHand(t *testing.T) {
	e, err := Mean(Sample{
		Human:           []float64{1, 0, 1, 1},
		JudgeLabelled:   []float64{1, 0, 0, 1},
		JudgeUnlabelled: []float64{1, 1, 0, 1},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12
	lambda, theta, vppi := 14.0/45, 149.0/180, 4927.0/97200
	near(t, "lambda", e.PPI.Lambda, lambda, tol)
	near(t, "ppi mean", e.PPI.Mean, theta, tol)
	near(t, "ppi low", e.PPI.Low, theta-z95*math.Sqrt(vppi), tol)
	near(t, "ppi high", e.PPI.High, theta+z95*math.Sqrt(vppi), tol)
	near(t, "ppi variance", e.Var.PPI, vppi, tol)
	near(t, "human mean", e.Human.Mean, 0.75, tol)
	near(t, "human low", e.Human.Low, 0.75-z95*0.25, tol)
	near(t, "human high", e.Human.High, 0.75+z95*0.25, tol)
	near(t, "judge mean", e.Judge.Mean, 0.625, tol)
	near(t, "judge low", e.Judge.Low, 0.625-z95*math.Sqrt(15.0/448), tol)
	near(t, "judge high", e.Judge.High, 0.625+z95*math.Sqrt(15.0/448), tol)
	near(t, "effective human labels", e.EffectiveHumanLabels, 24300.0/4927, tol)
	if e.NLabelled != 4 || e.NUnlabelled != 4 || e.Level != 0.95 {
		t.Errorf("counts %d, %d at level %v; want 4, 4 at 0.95", e.NLabelled, e.NUnlabelled, e.Level)
	}

	// At 80 % only the quantile changes: z = Φ⁻¹(0.9).
	e80, err := Mean(Sample{
		Human:           []float64{1, 0, 1, 1},
		JudgeLabelled:   []float64{1, 0, 0, 1},
		JudgeUnlabelled: []float64{1, 1, 0, 1},
	}, Options{Level: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "80% ppi high", e80.PPI.High, theta+1.2815515655446004*math.Sqrt(vppi), tol)
}

// TestJSONShape pins the field names the CLI, the report and the API
// publish.
func TestJSONShape(t *testing.T) {
	e, err := Mean(Sample{
		Human:           []float64{1, 0, 1, 1},
		JudgeLabelled:   []float64{1, 0, 0, 1},
		JudgeUnlabelled: []float64{1, 1, 0, 1},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m any) string {
		var ks []string
		for k := range m.(map[string]any) {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	if k := keys(got); k != "effective_human_labels,human,judge,n_labelled,n_unlabelled,ppi" {
		t.Errorf("estimate keys %s", k)
	}
	for _, f := range []string{"human", "judge"} {
		if k := keys(got[f]); k != "high,low,mean" {
			t.Errorf("%s keys %s", f, k)
		}
	}
	if k := keys(got["ppi"]); k != "high,lambda,low,mean" {
		t.Errorf("ppi keys %s", k)
	}

	a := e
	d, err := IndependentDifference(a, e)
	if err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"paired":false`) || !strings.Contains(string(b), `"lambda":null`) {
		t.Errorf("independent difference JSON %s: want paired false and lambda null", b)
	}
}

// randomSample is n labelled and N unlabelled items on a 1–5 scale with
// a judge one point lenient and noisy.
func randomSample(rng *rand.Rand, n, N int) Sample {
	s := Sample{Human: make([]float64, n), JudgeLabelled: make([]float64, n), JudgeUnlabelled: make([]float64, N)}
	judge := func(h float64) float64 { return min(5, h+1+float64(rng.IntN(3)-1)) }
	for i := range n {
		h := float64(1 + rng.IntN(5))
		s.Human[i], s.JudgeLabelled[i] = h, judge(h)
	}
	for i := range N {
		s.JudgeUnlabelled[i] = judge(float64(1 + rng.IntN(5)))
	}
	return s
}

// TestLambdaZeroIsHumanOnly: with λ = 0, fixed or clipped, PPI is the
// human-only figure to the last bit.
func TestLambdaZeroIsHumanOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	s := randomSample(rng, 300, 5000)
	fixed, err := Mean(s, Options{FixLambda: true, Lambda: 0})
	if err != nil {
		t.Fatal(err)
	}
	if fixed.PPI.Interval != fixed.Human || fixed.Var.PPI != fixed.Var.Human || fixed.EffectiveHumanLabels != 300 {
		t.Errorf("fixed λ = 0: ppi %+v (var %v), human %+v (var %v), effective %v", fixed.PPI, fixed.Var.PPI, fixed.Human, fixed.Var.Human, fixed.EffectiveHumanLabels)
	}

	// A judge that runs against the people has a negative covariance,
	// and λ is clipped to 0.
	contrary := Sample{Human: s.Human, JudgeLabelled: make([]float64, len(s.Human)), JudgeUnlabelled: s.JudgeUnlabelled}
	for i, h := range s.Human {
		contrary.JudgeLabelled[i] = 6 - h
	}
	clipped, err := Mean(contrary, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if clipped.PPI.Lambda != 0 || clipped.PPI.Interval != clipped.Human {
		t.Errorf("contrary judge: λ %v, ppi %+v, human %+v", clipped.PPI.Lambda, clipped.PPI.Interval, clipped.Human)
	}
}

// TestJudgeEqualToPeople: a judge that gives the human value on every item
// gets λ = 1/(1 + n/N) up to the sampling difference of the variances,
// which goes to 1 as N grows.
func TestJudgeEqualToPeople(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	prev := 0.0
	for _, N := range []int{1000, 10_000, 100_000} {
		n := 200
		s := Sample{Human: make([]float64, n), JudgeUnlabelled: make([]float64, N)}
		for i := range n {
			s.Human[i] = float64(rng.IntN(2))
		}
		s.JudgeLabelled = s.Human
		for i := range N {
			s.JudgeUnlabelled[i] = float64(rng.IntN(2))
		}
		e, err := Mean(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := 1 / (1 + float64(n)/float64(N))
		near(t, "λ", e.PPI.Lambda, want, 0.05)
		if e.PPI.Lambda <= prev {
			t.Errorf("N = %d: λ = %v did not grow from %v", N, e.PPI.Lambda, prev)
		}
		prev = e.PPI.Lambda
		if e.EffectiveHumanLabels < float64(N)/2 {
			t.Errorf("N = %d: a perfect judge is worth only %v labels", N, e.EffectiveHumanLabels)
		}
	}
	if prev < 0.99 {
		t.Errorf("λ = %v at N = 100,000, want → 1", prev)
	}
}

// TestDegenerate states what happens at the edges.
func TestDegenerate(t *testing.T) {
	h := []float64{1, 2, 3, 4}
	t.Run("constant judge", func(t *testing.T) {
		e, err := Mean(Sample{Human: h, JudgeLabelled: []float64{3, 3, 3, 3}, JudgeUnlabelled: []float64{3, 3, 3}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.PPI.Lambda != 0 || e.PPI.Interval != e.Human || e.Judge.Low != 3 || e.Judge.High != 3 {
			t.Errorf("%+v", e)
		}
	})
	t.Run("no unlabelled items", func(t *testing.T) {
		e, err := Mean(Sample{Human: h, JudgeLabelled: h}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.PPI.Lambda != 0 || e.PPI.Interval != e.Human || e.NUnlabelled != 0 || e.Judge != e.Human {
			t.Errorf("%+v", e)
		}
	})
	t.Run("one unlabelled item", func(t *testing.T) {
		e, err := Mean(Sample{Human: h, JudgeLabelled: h, JudgeUnlabelled: []float64{2}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.PPI.Lambda != 0 || e.PPI.Interval != e.Human {
			t.Errorf("%+v", e)
		}
	})
	t.Run("people all agree", func(t *testing.T) {
		e, err := Mean(Sample{Human: []float64{1, 1, 1}, JudgeLabelled: []float64{1, 0, 1}, JudgeUnlabelled: []float64{0, 1, 1, 0}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.PPI.Lambda != 0 || e.PPI.Interval != (Interval{1, 1, 1}) || e.EffectiveHumanLabels != 3 {
			t.Errorf("%+v", e)
		}
	})
	t.Run("people and judge differ by a constant", func(t *testing.T) {
		// h − j is constant on the labelled items and the judge constant on
		// the unlabelled: PPI's variance is 0, and the judge is worth
		// every item.
		e, err := Mean(Sample{Human: []float64{2, 3}, JudgeLabelled: []float64{1, 2}, JudgeUnlabelled: []float64{1.5, 1.5, 1.5}}, Options{FixLambda: true, Lambda: 1})
		if err != nil {
			t.Fatal(err)
		}
		if e.Var.PPI != 0 || e.EffectiveHumanLabels != 5 || e.PPI.Mean != 2.5 {
			t.Errorf("%+v", e)
		}
	})
	for _, c := range []struct {
		name string
		s    Sample
		o    Options
		want string
	}{
		{"no labels", Sample{JudgeUnlabelled: h}, Options{}, "fewer than two labelled items: 0"},
		{"one label", Sample{Human: []float64{1}, JudgeLabelled: []float64{1}, JudgeUnlabelled: h}, Options{}, "fewer than two labelled items: 1"},
		{"unpaired", Sample{Human: h, JudgeLabelled: h[:3]}, Options{}, "4 human values but 3 judge values"},
		{"NaN", Sample{Human: h, JudgeLabelled: h, JudgeUnlabelled: []float64{1, math.NaN()}}, Options{}, "judge value on unlabelled item 1 is NaN"},
		{"infinite", Sample{Human: []float64{1, math.Inf(1)}, JudgeLabelled: []float64{1, 2}}, Options{}, "human value 1 is +Inf"},
		{"level", Sample{Human: h, JudgeLabelled: h}, Options{Level: 1}, "confidence level 1 is outside (0, 1)"},
		{"lambda", Sample{Human: h, JudgeLabelled: h}, Options{FixLambda: true, Lambda: 1.5}, "fixed λ 1.5 is outside [0, 1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Mean(c.s, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if strings.Contains(c.want, "fewer than two") && !errors.Is(err, ErrTooFewLabelled) {
				t.Errorf("%v is not ErrTooFewLabelled", err)
			}
		})
	}
}
