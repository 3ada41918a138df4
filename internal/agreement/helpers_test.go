package agreement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// matrix is a raters × items table of category indices; -1 is missing.
type matrix [][]int

// ratings builds a Ratings from labels in rater-major order; "" is missing
// and is recorded as such.
func ratingsOf(t testing.TB, rows [][]string) *Ratings {
	t.Helper()
	r := NewRatings()
	for j, row := range rows {
		for i, v := range row {
			if err := r.Add(fmt.Sprintf("i%02d", i), fmt.Sprintf("r%d", j), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// ratingsFromMatrix labels categories by the scale.
func ratingsFromMatrix(t testing.TB, s *Scale, m matrix) *Ratings {
	t.Helper()
	rows := make([][]string, len(m))
	for j, row := range m {
		rows[j] = make([]string, len(row))
		for i, k := range row {
			if k >= 0 {
				rows[j][i] = s.Label(k)
			}
		}
	}
	return ratingsOf(t, rows)
}

// itemUnits turns a matrix into Units with one unit per item, no grouping:
// a second path to the counts, independent of Ratings.Units.
func itemUnits(t testing.TB, s *Scale, m matrix) Units {
	t.Helper()
	var list []Unit
	for i := range m[0] {
		c := make([]int, s.Len())
		for j := range m {
			if m[j][i] >= 0 {
				c[m[j][i]]++
			}
		}
		list = append(list, Unit{Counts: c, Weight: 1})
	}
	u, err := NewUnits(s, list)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// pairTable builds the contingency table of rows a and b of m.
func pairTable(t testing.TB, s *Scale, a, b []int) Contingency {
	t.Helper()
	cells := make([][]int, s.Len())
	for k := range cells {
		cells[k] = make([]int, s.Len())
	}
	for i := range a {
		if a[i] >= 0 && b[i] >= 0 {
			cells[a[i]][b[i]]++
		}
	}
	c, err := NewContingency(s, cells)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomMatrix draws raters × items answers over q categories with the given
// share of missing values, favouring low categories so that marginals are
// uneven.
func randomMatrix(rng *rand.Rand, raters, items, q int, missing float64) matrix {
	m := make(matrix, raters)
	for j := range m {
		m[j] = make([]int, items)
		for i := range m[j] {
			switch {
			case rng.Float64() < missing:
				m[j][i] = -1
			default:
				m[j][i] = min(rng.IntN(q), rng.IntN(q+1))
				if m[j][i] >= q {
					m[j][i] = q - 1
				}
			}
		}
	}
	return m
}

func mustScale(t testing.TB, labels ...string) *Scale {
	t.Helper()
	s, err := NewScale(labels...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func likert(t testing.TB) *Scale { return mustScale(t, "1", "2", "3", "4", "5") }

// near reports whether two estimates agree: both undefined with the same
// reason, or both defined within tol.
func near(a, b Estimate, tol float64) bool {
	if a.Defined != b.Defined {
		return false
	}
	if !a.Defined {
		return a.Reason == b.Reason
	}
	return math.Abs(a.Value-b.Value) <= tol
}

func checkNear(t *testing.T, name string, got Estimate, want float64, tol float64) {
	t.Helper()
	if !got.Defined {
		t.Errorf("%s: undefined (%s), want %.6f", name, got.Reason, want)
		return
	}
	if math.Abs(got.Value-want) > tol {
		t.Errorf("%s = %.10f, want %.10f (±%g)", name, got.Value, want, tol)
	}
}
