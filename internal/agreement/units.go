package agreement

import (
	"errors"
	"fmt"
	"slices"
)

// Unit is one pattern of answers to an item and how many items share it.
// Counts[k] is how many raters put the item in category k of the scale
// (r_ik); Weight is how many items have exactly these counts. SQL produces
// units with GROUP BY over the per-item counts, so the input to every
// multi-rater statistic grows with the number of answer patterns, not with
// the number of labels.
type Unit struct {
	Counts []int
	Weight int
}

// Units is the validated multi-rater input: units over one scale. The zero
// value holds no items. Units is immutable and safe for concurrent use.
type Units struct {
	scale *Scale
	list  []Unit
	items int
}

// NewUnits validates list against the scale and returns it as Units. Every
// Counts must have one entry per category of s; counts and weights must not
// be negative. Units whose counts are all zero (items nobody rated) and units
// of weight zero are dropped. The input is copied.
func NewUnits(s *Scale, list []Unit) (Units, error) {
	if s == nil {
		return Units{}, errors.New("agreement: units without a scale")
	}
	u := Units{scale: s, list: make([]Unit, 0, len(list))}
	for i, x := range list {
		if len(x.Counts) != s.Len() {
			return Units{}, fmt.Errorf("agreement: unit %d has %d counts for a scale of %d categories", i, len(x.Counts), s.Len())
		}
		if x.Weight < 0 {
			return Units{}, fmt.Errorf("agreement: unit %d has negative weight %d", i, x.Weight)
		}
		total := 0
		for _, c := range x.Counts {
			if c < 0 {
				return Units{}, fmt.Errorf("agreement: unit %d has a negative count", i)
			}
			total += c
		}
		if total == 0 || x.Weight == 0 {
			continue
		}
		u.list = append(u.list, Unit{Counts: slices.Clone(x.Counts), Weight: x.Weight})
		u.items += x.Weight
	}
	return u, nil
}

// Scale returns the scale the counts refer to (nil for the zero Units).
func (u Units) Scale() *Scale { return u.scale }

// List returns a copy of the units. The caller may change it freely.
func (u Units) List() []Unit {
	out := make([]Unit, len(u.list))
	for i, x := range u.list {
		out[i] = Unit{Counts: slices.Clone(x.Counts), Weight: x.Weight}
	}
	return out
}

// Items returns the number of items with at least one rating.
func (u Units) Items() int { return u.items }

// Pairable returns the number of items with at least two ratings, the items
// that carry agreement.
func (u Units) Pairable() int {
	n := 0
	for _, x := range u.list {
		if sum(x.Counts) >= 2 {
			n += x.Weight
		}
	}
	return n
}

// Coincidence returns Krippendorff's coincidence matrix o: o[c][k] counts the
// ordered pairs of values (c, k) from different raters within an item, each
// item's pairs weighted 1/(m-1) for an item of m ratings, so that every
// pairable value contributes 1 in total and row sums are the pairable values
// per category. Items with fewer than two ratings drop out. The matrix is
// q×q and symmetric.
func Coincidence(u Units) [][]float64 {
	q := 0
	if u.scale != nil {
		q = u.scale.Len()
	}
	o := make([][]float64, q)
	for k := range o {
		o[k] = make([]float64, q)
	}
	for _, x := range u.list {
		m := sum(x.Counts)
		if m < 2 {
			continue
		}
		f := float64(x.Weight) / float64(m-1)
		for c, nc := range x.Counts {
			if nc == 0 {
				continue
			}
			for k, nk := range x.Counts {
				pairs := nc * nk
				if c == k {
					pairs = nc * (nc - 1)
				}
				o[c][k] += float64(pairs) * f
			}
		}
	}
	return o
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// withWeights returns the same units with new multiplicities; weights[i] goes
// with u.list[i]. Counts are shared, never written.
func (u Units) withWeights(weights []int, dst []Unit) Units {
	dst = dst[:0]
	items := 0
	for i, x := range u.list {
		if weights[i] == 0 {
			continue
		}
		dst = append(dst, Unit{Counts: x.Counts, Weight: weights[i]})
		items += weights[i]
	}
	return Units{scale: u.scale, list: dst, items: items}
}
