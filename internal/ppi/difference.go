package ppi

import (
	"fmt"
	"math"
)

// Difference is the difference a − b between two systems' means, in the
// shape of an Estimate. Paired says how it was formed: true when both
// systems were rated on the same items and the difference was taken item by
// item (PairedDifference), false when it is the difference of two
// independent estimates on disjoint items (IndependentDifference). A paired
// difference is usually much narrower, since what the items share cancels.
type Difference struct {
	Paired bool `json:"paired"`
	// NLabelled and NUnlabelled count items: the paired items, or the two
	// systems' items together.
	NLabelled   int             `json:"n_labelled"`
	NUnlabelled int             `json:"n_unlabelled"`
	Human       Interval        `json:"human"`
	Judge       Interval        `json:"judge"`
	PPI         TunedDifference `json:"ppi"`
	// EffectiveHumanLabels is, as on an Estimate, how many human labels
	// (in all, split between the systems as now) a human-only difference
	// would need for an interval as narrow as PPI's.
	EffectiveHumanLabels float64 `json:"effective_human_labels"`

	Level float64   `json:"-"`
	Var   Variances `json:"-"`

	// paired is the estimate of the item-by-item differences; a and b the
	// two sides of an independent difference. Budget projects from them.
	paired *Estimate
	a, b   *Estimate
}

// TunedDifference is the prediction-powered interval of a difference.
// Lambda is the λ tuned on the item-by-item differences of a paired
// difference, and null on an independent one, whose two sides were each
// tuned on their own.
type TunedDifference struct {
	Interval
	Lambda *float64 `json:"lambda"`
}

// PairedDifference estimates the mean of a − b over items both systems
// were rated on: a.Human[i] and b.Human[i] are the human values of the same
// item under the two systems, and likewise for the judge's values, so each
// part of a and b must have the same length. The differences are estimated
// by Mean with o; its errors and degenerate cases apply.
func PairedDifference(a, b Sample, o Options) (Difference, error) {
	if len(a.Human) != len(b.Human) || len(a.JudgeLabelled) != len(b.JudgeLabelled) || len(a.JudgeUnlabelled) != len(b.JudgeUnlabelled) {
		return Difference{}, fmt.Errorf("ppi: paired difference needs the same items on both sides: %d/%d labelled and %d/%d unlabelled",
			len(a.Human), len(b.Human), len(a.JudgeUnlabelled), len(b.JudgeUnlabelled))
	}
	d := Sample{
		Human:           subtract(a.Human, b.Human),
		JudgeLabelled:   subtract(a.JudgeLabelled, b.JudgeLabelled),
		JudgeUnlabelled: subtract(a.JudgeUnlabelled, b.JudgeUnlabelled),
	}
	e, err := Mean(d, o)
	if err != nil {
		return Difference{}, fmt.Errorf("paired difference: %w", err)
	}
	lambda := e.PPI.Lambda
	return Difference{
		Paired:               true,
		NLabelled:            e.NLabelled,
		NUnlabelled:          e.NUnlabelled,
		Human:                e.Human,
		Judge:                e.Judge,
		PPI:                  TunedDifference{Interval: e.PPI.Interval, Lambda: &lambda},
		EffectiveHumanLabels: e.EffectiveHumanLabels,
		Level:                e.Level,
		Var:                  e.Var,
		paired:               &e,
	}, nil
}

// IndependentDifference is a − b for two estimates on disjoint sets of
// items: each figure's mean is the difference of means and its variance
// the sum of variances. Both must be at the same level.
func IndependentDifference(a, b Estimate) (Difference, error) {
	if a.Level != b.Level {
		return Difference{}, fmt.Errorf("ppi: independent difference of estimates at levels %v and %v", a.Level, b.Level)
	}
	if a.NLabelled < 2 || b.NLabelled < 2 {
		// The zero Estimate, not one from Mean.
		return Difference{}, fmt.Errorf("%w: independent difference of estimates with %d and %d", ErrTooFewLabelled, a.NLabelled, b.NLabelled)
	}
	z := zFor(a.Level)
	v := Variances{
		Human: a.Var.Human + b.Var.Human,
		Judge: a.Var.Judge + b.Var.Judge,
		PPI:   a.Var.PPI + b.Var.PPI,
	}
	n := a.NLabelled + b.NLabelled
	d := Difference{
		NLabelled:            n,
		NUnlabelled:          a.NUnlabelled + b.NUnlabelled,
		Human:                interval(a.Human.Mean-b.Human.Mean, v.Human, z),
		Judge:                interval(a.Judge.Mean-b.Judge.Mean, v.Judge, z),
		PPI:                  TunedDifference{Interval: interval(a.PPI.Mean-b.PPI.Mean, v.PPI, z)},
		EffectiveHumanLabels: effective(n, v.Human, v.PPI, n+a.NUnlabelled+b.NUnlabelled),
		Level:                a.Level,
		Var:                  v,
		a:                    &a,
		b:                    &b,
	}
	if !finite(d.Var.Human) || !finite(d.Var.PPI) || !finite(d.Var.Judge) || !finite(d.PPI.Mean) || !finite(d.Human.Mean) || !finite(d.Judge.Mean) || !finite(d.EffectiveHumanLabels) {
		return Difference{}, ErrOverflow
	}
	return d, nil
}

func subtract(x, y []float64) []float64 {
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	return d
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
