package judge

import (
	"slices"
	"strconv"

	"github.com/attune/attune/internal/rubric"
)

// Aggregate combines the values of several samples of one prompt into one
// value and a spread that says how far the samples disagree. Samples are
// given in sample order.
//
// ERROR samples are left out: a failed call says nothing about the answer,
// and each sample is kept on its own beside the aggregate. The value is
// ERROR, with spread 0, only when no sample is left.
//
// Categorical (numeric false): the value is the most frequent one; a tie
// goes to the tied value that came first in sample order, which makes the
// result reproducible. spread is the share of the counted samples that
// differ from the value: 0 when all agree, 0.5 on an even split of two.
//
// Numeric (numeric true, values such as "1"…"5"): the value is the median;
// with an even count the lower of the two middle values, so the result is
// always one of the given integers and leans to the stricter score. A
// value that is not an integer is left out like ERROR. spread is the range,
// largest minus smallest.
func Aggregate(numeric bool, values []rubric.Value) (value rubric.Value, spread float64) {
	if numeric {
		return median(values)
	}
	counts := map[rubric.Value]int{}
	var order []rubric.Value
	n := 0
	for _, v := range values {
		if v == rubric.Error || v == "" {
			continue
		}
		if counts[v] == 0 {
			order = append(order, v)
		}
		counts[v]++
		n++
	}
	if n == 0 {
		return rubric.Error, 0
	}
	best := order[0]
	for _, v := range order[1:] {
		if counts[v] > counts[best] {
			best = v
		}
	}
	return best, float64(n-counts[best]) / float64(n)
}

func median(values []rubric.Value) (rubric.Value, float64) {
	var xs []int
	for _, v := range values {
		if x, err := strconv.Atoi(string(v)); err == nil {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return rubric.Error, 0
	}
	slices.Sort(xs)
	mid := xs[(len(xs)-1)/2]
	return rubric.Value(strconv.Itoa(mid)), float64(xs[len(xs)-1] - xs[0])
}
