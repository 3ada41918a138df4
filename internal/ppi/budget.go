package ppi

import (
	"errors"
	"fmt"
	"math"
)

// ErrCannotSeparate is returned (wrapped, with the best standard error) by
// LabelsToSeparate when even labelling every judge-only item would not
// tell the two systems apart at the margin.
var ErrCannotSeparate = errors.New("ppi: not separable at this margin with the items there are")

// Projection is how wide the intervals would be with K more human labels:
// the half-widths of the human-only and the prediction-powered intervals
// (each interval is its mean ± its half-width), in the values' units.
type Projection struct {
	K     int     `json:"k"`
	Human float64 `json:"human_half_width"`
	PPI   float64 `json:"ppi_half_width"`
}

// Project returns the intervals' half-widths if k more items, drawn
// uniformly from the judge-only ones, were labelled by people: n becomes
// n + k and N becomes N − k. It assumes the variances and the covariance
// stay what they are now, re-tunes λ for the new counts (unless it was
// fixed), and so is a forecast, not a promise. k = 0 gives the current
// half-widths. k must be in [0, N], and e must come from Mean: the
// moments a projection needs are not part of the JSON.
func (e Estimate) Project(k int) (Projection, error) {
	if !e.m.set {
		return Projection{}, errors.New("ppi: projection of an estimate not made by Mean")
	}
	if k < 0 || k > e.NUnlabelled {
		return Projection{}, fmt.Errorf("ppi: %d more labels asked of %d judge-only items", k, e.NUnlabelled)
	}
	vh, vp := e.projected(k)
	z := zFor(e.Level)
	return Projection{K: k, Human: z * math.Sqrt(vh), PPI: z * math.Sqrt(vp)}, nil
}

// projected is the variances of the human-only and PPI means with k more
// labels.
func (e Estimate) projected(k int) (human, ppi float64) {
	if k == 0 {
		return e.Var.Human, e.Var.PPI
	}
	n, N := e.NLabelled+k, e.NUnlabelled-k
	m := e.m
	human = m.vh / float64(n)
	l := m.lambdaFor(n, N)
	if l == 0 {
		return human, human
	}
	resid := max(0, m.vh-2*l*m.c+l*l*m.vjl)
	return human, l*l*m.vjn/float64(N) + resid/float64(n)
}

// Project is Estimate.Project for a difference: k more paired items for a
// paired difference, k more items of each system for an independent one.
func (d Difference) Project(k int) (Projection, error) {
	vh, vp, err := d.projected(k)
	if err != nil {
		return Projection{}, err
	}
	z := zFor(d.Level)
	return Projection{K: k, Human: z * math.Sqrt(vh), PPI: z * math.Sqrt(vp)}, nil
}

// projectable reports whether d holds the moments of its sides.
func (d Difference) projectable() bool {
	if d.paired != nil {
		return true
	}
	return d.a != nil && d.a.m.set && d.b.m.set
}

// maxK is the most labels Project accepts.
func (d Difference) maxK() int {
	if d.paired != nil {
		return d.paired.NUnlabelled
	}
	if d.a == nil {
		return 0
	}
	return min(d.a.NUnlabelled, d.b.NUnlabelled)
}

func (d Difference) projected(k int) (human, ppi float64, err error) {
	if !d.projectable() {
		return 0, 0, errors.New("ppi: projection of a difference not made by PairedDifference or IndependentDifference from estimates made by Mean")
	}
	if k < 0 || k > d.maxK() {
		return 0, 0, fmt.Errorf("ppi: %d more labels asked of a difference with %d judge-only items to draw from", k, d.maxK())
	}
	if d.paired != nil {
		human, ppi = d.paired.projected(k)
		return human, ppi, nil
	}
	ha, pa := d.a.projected(k)
	hb, pb := d.b.projected(k)
	return ha + hb, pa + pb, nil
}

// LabelsToSeparate returns the fewest more labels k (counted as Project
// counts them) after which the PPI interval of the difference would
// exclude 0 with the given power, if the true difference were margin.
//
// The assumption, plainly: the difference's estimate is normal around the
// true difference with the projected standard error se(k), so its interval
// misses 0 with probability power when |margin| ≥ (z + z_power)·se(k),
// where z is the interval's quantile and z_power the normal quantile of
// power. Power 0.5 is the bare condition that the half-width be below the
// margin: an estimate landing exactly on the margin would just exclude 0.
// k = 0 means the current labels already suffice. margin must be non-zero
// and finite and power in (0, 1); ErrCannotSeparate says no k up to every
// judge-only item will do.
func (d Difference) LabelsToSeparate(margin, power float64) (int, error) {
	if margin == 0 || !finite(margin) {
		return 0, fmt.Errorf("ppi: margin %v must be a non-zero finite difference", margin)
	}
	if !(power > 0 && power < 1) {
		return 0, fmt.Errorf("ppi: power %v is outside (0, 1)", power)
	}
	if !d.projectable() {
		return 0, errors.New("ppi: labels to separate a difference not made by PairedDifference or IndependentDifference from estimates made by Mean")
	}
	need := math.Abs(margin) / (zFor(d.Level) + quantile(power))
	if need <= 0 {
		// So low a power that any interval would do.
		return 0, nil
	}
	// The projected variance need not fall with k (moving an item from the
	// judge-only side shrinks the judge's term's denominator), so every k
	// is tried, smallest first: each costs a few flops.
	need2 := need * need
	best := math.Inf(1)
	for k := range d.maxK() + 1 {
		var v float64
		if d.paired != nil {
			_, v = d.paired.projected(k)
		} else {
			_, va := d.a.projected(k)
			_, vb := d.b.projected(k)
			v = va + vb
		}
		if v <= need2 {
			return k, nil
		}
		best = min(best, v)
	}
	return 0, fmt.Errorf("%w: margin %v needs a standard error of %.4g, the best is %.4g", ErrCannotSeparate, margin, need, math.Sqrt(best))
}

// quantile is the standard normal quantile of p.
func quantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
