package agreement

import (
	"math"
	"slices"
	"testing"
)

// decodeMatrix turns fuzz bytes into a small raters × items table: byte 0
// picks the raters (1-5), byte 1 the categories (1-5), the rest the answers
// (0 is missing).
func decodeMatrix(data []byte) (matrix, int, bool) {
	if len(data) < 3 {
		return nil, 0, false
	}
	raters, q := int(data[0])%5+1, int(data[1])%5+1
	vals := data[2:]
	items := min(len(vals)/raters, 40)
	if items == 0 {
		return nil, 0, false
	}
	m := make(matrix, raters)
	for j := range m {
		m[j] = make([]int, items)
		for i := range m[j] {
			m[j][i] = int(vals[i*raters+j])%(q+1) - 1
		}
	}
	return m, q, true
}

var fuzzSeeds = [][]byte{
	{3, 4, 1, 2, 3, 1, 2, 2, 3, 3, 3, 0, 1, 1, 4, 4, 4, 2, 1, 0},
	{1, 4, 1, 2, 3, 4, 5},                // one rater
	{1, 4, 1, 0, 0, 2, 3, 0, 0, 4},       // two raters who never share an item
	{2, 2, 1, 1, 1, 1, 1, 1, 1, 1},       // everyone answers the same
	{4, 0, 1, 1, 1, 1, 1, 1, 0, 1},       // a one-category scale
	{2, 4, 1, 5, 5, 1, 2, 4, 4, 2, 3, 3}, // perfect disagreement patterns
	{4, 4, 5, 4, 3, 2, 1, 0, 5, 4, 3, 2, 1, 0, 5, 5, 5, 5, 1, 1, 1, 1},
}

// FuzzCountsEqualDefinitions checks every count-based statistic against its
// brute-force definition on raw tables.
func FuzzCountsEqualDefinitions(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, q, ok := decodeMatrix(data)
		if !ok {
			return
		}
		compareBrute(t, metricScale(t, q), m)
	})
}

// FuzzSummaryInvariants checks, on any table, that defined statistics are
// finite and within their bounds, and that the order of raters and of items
// changes nothing.
func FuzzSummaryInvariants(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint8(i), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, level, weights uint8) {
		m, q, ok := decodeMatrix(data)
		if !ok {
			return
		}
		s := metricScale(t, q)
		opts := Options{Scale: s, Level: Level(level % 4), Weights: Weighting(weights % 6)}
		got, err := Summarize(ratingsFromMatrix(t, s, m), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range got.fields() {
			e := *f.e
			if !e.Defined {
				if e.Reason == "" || e.Value != 0 {
					t.Errorf("%s undefined without a reason or with a value: %+v", f.name, e)
				}
				continue
			}
			if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
				t.Errorf("%s = %v", f.name, e.Value)
			}
			if e.Value > 1+1e-12 {
				t.Errorf("%s = %v > 1", f.name, e.Value)
			}
			lower := math.Inf(-1)
			switch f.name {
			case "percent_agreement":
				lower = 0
			case "spearman", "kendall_tau_b":
				lower = -1
			}
			if e.Value < lower-1e-12 {
				t.Errorf("%s = %v < %v", f.name, e.Value, lower)
			}
		}

		// Raters and items reversed: the same data under other names.
		rev := make(matrix, len(m))
		for j := range m {
			rev[len(m)-1-j] = slices.Clone(m[j])
			slices.Reverse(rev[len(m)-1-j])
		}
		again, err := Summarize(ratingsFromMatrix(t, s, rev), opts)
		if err != nil {
			t.Fatal(err)
		}
		af := again.fields()
		for i, f := range got.fields() {
			if !near(*f.e, *af[i].e, 1e-12) {
				t.Errorf("%s changed when raters and items were reordered: %+v, then %+v", f.name, *f.e, *af[i].e)
			}
		}
	})
}
