package agreement

import "strconv"

// Boundary is one boundary between two adjacent answers of an ordered
// numeric scale, such as 3|4, and the share of the disagreement that
// falls on it.
type Boundary struct {
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	// Weight is the disagreement apportioned to the boundary: each pair of
	// different answers a < b counts 1, split evenly over the b − a
	// boundaries between them.
	Weight float64 `json:"weight"`
	// Share is Weight over the disagreeing pairs of answers: the shares
	// of a scale's boundaries add up to 1. Undefined (nil) when no pair
	// disagrees.
	Share *float64 `json:"share"`
	// Crossing counts the disagreeing pairs whose answers lie on either
	// side of the boundary, each pair in full.
	Crossing int `json:"n_crossing"`
}

// BoundarySplit is how the disagreement of some pairs of raters on an
// ordered numeric scale falls on its boundaries.
type BoundarySplit struct {
	// Disagreements counts the pairs of different numeric answers.
	Disagreements int `json:"n_disagreements"`
	// Other counts the disagreements that involve an answer off the
	// numeric scale (NA): they fall on no boundary.
	Other      int        `json:"n_other"`
	Boundaries []Boundary `json:"boundaries"`
}

// SplitByBoundary apportions the disagreement of the contingency tables
// counts (each q×q over the category labels scale, rows one rater's
// answers, columns the other's) to the boundaries between adjacent
// numeric categories. The categories whose label is a whole number, in
// the order of their values, form the ordered scale; the others (NA) are
// on no boundary. A disagreeing pair of answers a < b gives each boundary
// k|k+1 with a ≤ k < b the weight 1/(b − a), steps counted between
// adjacent numeric categories, so that every disagreement counts once
// whatever its size; the boundary's share is its weight over all the
// disagreements. ok is false when the scale has fewer than two numeric
// categories or a table does not match it.
func SplitByBoundary(scale []string, counts ...[][]int) (split BoundarySplit, ok bool) {
	q := len(scale)
	// pos[c] is category c's place on the numeric scale, or -1.
	type num struct{ cat, value int }
	var nums []num
	for c, l := range scale {
		if v, err := strconv.Atoi(l); err == nil {
			nums = append(nums, num{c, v})
		}
	}
	if len(nums) < 2 {
		return BoundarySplit{}, false
	}
	for i := 1; i < len(nums); i++ {
		for j := i; j > 0 && nums[j].value < nums[j-1].value; j-- {
			nums[j], nums[j-1] = nums[j-1], nums[j]
		}
	}
	pos := make([]int, q)
	for c := range pos {
		pos[c] = -1
	}
	for i, n := range nums {
		pos[n.cat] = i
	}
	split.Boundaries = make([]Boundary, len(nums)-1)
	for i := range split.Boundaries {
		split.Boundaries[i].Lower, split.Boundaries[i].Upper = scale[nums[i].cat], scale[nums[i+1].cat]
	}
	for _, t := range counts {
		if len(t) != q {
			return BoundarySplit{}, false
		}
		for r, row := range t {
			if len(row) != q {
				return BoundarySplit{}, false
			}
			for c, n := range row {
				if r == c || n == 0 {
					continue
				}
				lo, hi := pos[r], pos[c]
				if lo < 0 || hi < 0 {
					split.Other += n
					continue
				}
				if lo > hi {
					lo, hi = hi, lo
				}
				split.Disagreements += n
				w := float64(n) / float64(hi-lo)
				for k := lo; k < hi; k++ {
					split.Boundaries[k].Weight += w
					split.Boundaries[k].Crossing += n
				}
			}
		}
	}
	if split.Disagreements > 0 {
		for k := range split.Boundaries {
			s := split.Boundaries[k].Weight / float64(split.Disagreements)
			split.Boundaries[k].Share = &s
		}
	}
	return split, true
}
