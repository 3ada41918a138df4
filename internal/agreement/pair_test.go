package agreement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// CohenKappaCounts gives CohenKappa's unweighted figure to the last bit,
// and its reasons, on tables small and large (past its stack buffers),
// sparse, empty and without variation.
func TestCohenKappaCounts(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, q := range []int{1, 2, 3, 5, 16, 17, 24} {
		labels := make([]string, q)
		for k := range labels {
			labels[k] = fmt.Sprint("c", k)
		}
		s := mustScale(t, labels...)
		for trial := range 200 {
			flat := make([]int, q*q)
			rows := make([][]int, q)
			for k := range rows {
				rows[k] = flat[k*q : (k+1)*q]
			}
			switch {
			case trial == 0: // empty
			case trial == 1: // one category only
				flat[0] = 7
			case trial%3 == 0: // mostly agreement
				for k := range q {
					flat[k*q+k] = rng.IntN(400)
				}
				flat[rng.IntN(q*q)] += rng.IntN(20)
			default:
				for i := range flat {
					if rng.IntN(4) > 0 {
						flat[i] = rng.IntN(3000)
					}
				}
			}
			c, err := NewContingency(s, rows)
			if err != nil {
				t.Fatal(err)
			}
			want, got := CohenKappa(c, NoWeights), CohenKappaCounts(flat, q)
			if got.Defined != want.Defined || got.Reason != want.Reason || math.Float64bits(got.Value) != math.Float64bits(want.Value) {
				t.Fatalf("q=%d trial %d: %+v, CohenKappa gives %+v", q, trial, got, want)
			}
		}
	}
}
