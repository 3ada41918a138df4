package agreement_test

import (
	"math"
	"testing"

	"github.com/attune/attune/internal/agreement"
)

// table is a 1–5 contingency table with the given cells (row, column,
// count), rows and columns being the answers 1 to 5.
func table(cells ...[3]int) [][]int {
	t := make([][]int, 5)
	for i := range t {
		t[i] = make([]int, 5)
	}
	for _, c := range cells {
		t[c[0]-1][c[1]-1] += c[2]
	}
	return t
}

var oneToFive = []string{"1", "2", "3", "4", "5"}

// Hand-worked cases: each disagreeing pair counts once, spread evenly
// over the boundaries between its two answers.
func TestSplitByBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		scale    []string
		tables   [][][]int
		ok       bool
		n, other int
		weights  []float64
		shares   []float64 // nil: undefined
		crossing []int
	}{
		{"one pair 1 and 3: half on 1|2, half on 2|3", oneToFive, [][][]int{table([3]int{1, 3, 1}, [3]int{2, 2, 7})}, true, 1, 0,
			[]float64{0.5, 0.5, 0, 0}, []float64{0.5, 0.5, 0, 0}, []int{1, 1, 0, 0}},
		{"either orientation: 4 against 3 twice", oneToFive, [][][]int{table([3]int{1, 3, 1}, [3]int{4, 3, 2})}, true, 3, 0,
			[]float64{0.5, 0.5, 2, 0}, []float64{1.0 / 6, 1.0 / 6, 2.0 / 3, 0}, []int{1, 1, 2, 0}},
		{"1 against 5: a quarter on each", oneToFive, [][][]int{table([3]int{5, 1, 1})}, true, 1, 0,
			[]float64{0.25, 0.25, 0.25, 0.25}, []float64{0.25, 0.25, 0.25, 0.25}, []int{1, 1, 1, 1}},
		{"tables add up", oneToFive, [][][]int{table([3]int{2, 3, 1}), table([3]int{3, 2, 1}, [3]int{5, 4, 2})}, true, 4, 0,
			[]float64{0, 2, 0, 2}, []float64{0, 0.5, 0, 0.5}, []int{0, 2, 0, 2}},
		{"agreement only: shares undefined", oneToFive, [][][]int{table([3]int{3, 3, 9})}, true, 0, 0,
			[]float64{0, 0, 0, 0}, nil, []int{0, 0, 0, 0}},
		{"no table", oneToFive, nil, true, 0, 0, []float64{0, 0, 0, 0}, nil, []int{0, 0, 0, 0}},
		{"NA is on no boundary", []string{"1", "2", "3", "NA"}, [][][]int{{{0, 0, 1, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 3, 0, 0}}}, true, 1, 3,
			[]float64{0.5, 0.5}, []float64{0.5, 0.5}, []int{1, 1}},
		{"categories out of order", []string{"3", "1", "2"}, [][][]int{{{0, 1, 0}, {0, 0, 0}, {0, 0, 0}}}, true, 1, 0,
			[]float64{0.5, 0.5}, []float64{0.5, 0.5}, []int{1, 1}},
		{"words have no boundaries", []string{"YES", "NO", "NA"}, [][][]int{{{0, 1, 0}, {0, 0, 0}, {0, 0, 0}}}, false, 0, 0, nil, nil, nil},
		{"a table of another size", oneToFive, [][][]int{{{0, 1}, {0, 0}}}, false, 0, 0, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := agreement.SplitByBoundary(tc.scale, tc.tables...)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got.Disagreements != tc.n || got.Other != tc.other || len(got.Boundaries) != len(tc.weights) {
				t.Fatalf("got %+v", got)
			}
			sum := 0.0
			for k, b := range got.Boundaries {
				if math.Abs(b.Weight-tc.weights[k]) > 1e-12 || b.Crossing != tc.crossing[k] {
					t.Errorf("boundary %s|%s: weight %v crossing %d, want %v %d", b.Lower, b.Upper, b.Weight, b.Crossing, tc.weights[k], tc.crossing[k])
				}
				switch {
				case tc.shares == nil && b.Share != nil:
					t.Errorf("boundary %s|%s: share %v, want undefined", b.Lower, b.Upper, *b.Share)
				case tc.shares != nil && (b.Share == nil || math.Abs(*b.Share-tc.shares[k]) > 1e-12):
					t.Errorf("boundary %s|%s: share %v, want %v", b.Lower, b.Upper, b.Share, tc.shares[k])
				case b.Share != nil:
					sum += *b.Share
				}
			}
			if tc.shares != nil && math.Abs(sum-1) > 1e-12 {
				t.Errorf("shares add up to %v", sum)
			}
		})
	}
	got, _ := agreement.SplitByBoundary([]string{"3", "1", "2"})
	if got.Boundaries[0].Lower != "1" || got.Boundaries[0].Upper != "2" || got.Boundaries[1].Lower != "2" || got.Boundaries[1].Upper != "3" {
		t.Fatalf("boundaries out of order: %+v", got.Boundaries)
	}
}
