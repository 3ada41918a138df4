package agreement

import (
	"errors"
	"fmt"
	"math"
)

// Contingency is the q×q table of two raters' paired answers over the items
// both rated: At(k, l) items got category k from the first rater (rows) and
// category l from the second (columns). It is the input of every pairwise
// statistic and the confusion matrix of a report. Immutable and safe for
// concurrent use.
type Contingency struct {
	scale *Scale
	cells [][]int
	n     int
}

// NewContingency validates counts (q rows of q non-negative entries, q the
// scale's length) and returns them as a Contingency. The input is copied.
func NewContingency(s *Scale, counts [][]int) (Contingency, error) {
	if s == nil {
		return Contingency{}, errors.New("agreement: contingency table without a scale")
	}
	q := s.Len()
	if len(counts) != q {
		return Contingency{}, fmt.Errorf("agreement: contingency table has %d rows for a scale of %d categories", len(counts), q)
	}
	c := Contingency{scale: s, cells: make([][]int, q)}
	for k, row := range counts {
		if len(row) != q {
			return Contingency{}, fmt.Errorf("agreement: contingency row %d has %d entries for a scale of %d categories", k, len(row), q)
		}
		c.cells[k] = make([]int, q)
		for l, x := range row {
			if x < 0 {
				return Contingency{}, fmt.Errorf("agreement: contingency cell (%d,%d) is negative", k, l)
			}
			c.cells[k][l] = x
			c.n += x
		}
	}
	return c, nil
}

// Scale returns the scale of the table's rows and columns.
func (c Contingency) Scale() *Scale { return c.scale }

// N returns the number of items both raters rated.
func (c Contingency) N() int { return c.n }

// At returns the number of items the first rater put in category k and the
// second in category l (0-based indices).
func (c Contingency) At(k, l int) int { return c.cells[k][l] }

// Counts returns a copy of the table, rows for the first rater.
func (c Contingency) Counts() [][]int {
	out := make([][]int, len(c.cells))
	for k, row := range c.cells {
		out[k] = append([]int(nil), row...)
	}
	return out
}

// margins returns the row and column totals.
func (c Contingency) margins() (rows, cols []int) {
	q := len(c.cells)
	rows, cols = make([]int, q), make([]int, q)
	for k, row := range c.cells {
		for l, x := range row {
			rows[k] += x
			cols[l] += x
		}
	}
	return rows, cols
}

// pairWeights builds the weight matrix over the scale's positions.
func (c Contingency) pairWeights(w Weighting) ([][]float64, string) {
	wm, err := WeightMatrix(w, c.scale.Positions())
	if err != nil {
		return nil, err.Error()
	}
	return wm, ""
}

// PairAgreement returns the two raters' observed agreement: the (weighted)
// share of the items both rated on which they agree, weights over the
// scale's positions. Undefined when no item was rated by both.
func PairAgreement(c Contingency, w Weighting) Estimate {
	if c.n == 0 {
		return undefined(ReasonNoPairable)
	}
	wm, reason := c.pairWeights(w)
	if reason != "" {
		return undefined(reason)
	}
	var po float64
	for k, row := range c.cells {
		for l, x := range row {
			po += wm[k][l] * float64(x)
		}
	}
	return defined(po / float64(c.n))
}

// CohenKappa returns Cohen's kappa for two raters over the items both rated:
// (p_o - p_e) / (1 - p_e) with p_o the weighted observed agreement and p_e
// the weighted agreement expected from each rater's own marginals (Cohen
// 1960; weighted, Cohen 1968). Weights are computed over the scale's
// positions, so linear and quadratic weights depend on the order of the
// categories, not their values. Undefined when no item was rated by both or
// when p_e = 1 (no variation).
func CohenKappa(c Contingency, w Weighting) Estimate {
	rows, cols := c.margins()
	return chanceCorrected(c, w, func(k, l int) float64 {
		return float64(rows[k]) * float64(cols[l])
	})
}

// CohenKappaCounts is CohenKappa(c, NoWeights) for the q×q table whose
// row k (the first rater's category) is counts[k*q:(k+1)*q], computed the
// same way to the last bit but without building a Contingency or
// allocating (for q up to 16): resampling evaluates it a million times.
// counts must hold q×q non-negative counts.
func CohenKappaCounts(counts []int, q int) Estimate {
	var rowBuf, colBuf [16]int
	rows, cols := rowBuf[:0], colBuf[:0]
	if q > len(rowBuf) {
		rows, cols = make([]int, 0, q), make([]int, 0, q)
	}
	rows, cols = rows[:q], cols[:q]
	n := 0
	for k := range q {
		for l, x := range counts[k*q : (k+1)*q] {
			rows[k] += x
			cols[l] += x
			n += x
		}
	}
	if n == 0 {
		return undefined(ReasonNoPairable)
	}
	// As chanceCorrected with the identity weights of NoWeights, term by
	// term in the same order, so that the result is identical.
	fn := float64(n)
	var po, pe, oneMinusPe float64
	for k := range q {
		for l, x := range counts[k*q : (k+1)*q] {
			var w float64
			if k == l {
				w = 1
			}
			e := float64(rows[k]) * float64(cols[l])
			po += w * float64(x) * fn
			pe += w * e
			oneMinusPe += (1 - w) * e
		}
	}
	if oneMinusPe <= 0 {
		return undefined(ReasonNoVariation)
	}
	return defined((po - pe) / oneMinusPe)
}

// ScottPi returns Scott's (1955) pi for two raters over the items both rated:
// as CohenKappa, but chance agreement comes from the raters' pooled
// marginals, π_k = (row_k + col_k) / 2n. Weights as in CohenKappa. Undefined
// in the same cases.
func ScottPi(c Contingency, w Weighting) Estimate {
	rows, cols := c.margins()
	return chanceCorrected(c, w, func(k, l int) float64 {
		return float64(rows[k]+cols[k]) * float64(rows[l]+cols[l]) / 4
	})
}

// chanceCorrected computes (p_o - p_e)/(1 - p_e) where expected(k,l)/n² is
// the chance probability of the pair (k,l). Everything is scaled by n², so
// that without weights every sum is an integer (or a quarter of one) and
// exact in floating point.
func chanceCorrected(c Contingency, w Weighting, expected func(k, l int) float64) Estimate {
	if c.n == 0 {
		return undefined(ReasonNoPairable)
	}
	wm, reason := c.pairWeights(w)
	if reason != "" {
		return undefined(reason)
	}
	n := float64(c.n)
	var po, pe, oneMinusPe float64
	for k, row := range c.cells {
		for l, x := range row {
			e := expected(k, l)
			po += wm[k][l] * float64(x) * n
			pe += wm[k][l] * e
			// Summed from non-negative terms so that p_e = 1 is an exact zero.
			oneMinusPe += (1 - wm[k][l]) * e
		}
	}
	if oneMinusPe <= 0 {
		return undefined(ReasonNoVariation)
	}
	return defined((po - pe) / oneMinusPe)
}

// midRanks returns the mid-rank of each category given its count: the mean
// of the ranks its tied values would occupy.
func midRanks(counts []int) []float64 {
	r := make([]float64, len(counts))
	before := 0
	for k, x := range counts {
		r[k] = float64(before) + float64(x+1)/2
		before += x
	}
	return r
}

// used counts the categories with a non-zero count.
func used(counts []int) int {
	u := 0
	for _, x := range counts {
		if x > 0 {
			u++
		}
	}
	return u
}

// Spearman returns Spearman's rho over the items both rated: the Pearson
// correlation of the two raters' mid-ranks (ties share the mean of their
// ranks), in scale order. Undefined when no item was rated by both, or when
// either rater used a single category (no variation).
func Spearman(c Contingency) Estimate {
	if c.n == 0 {
		return undefined(ReasonNoPairable)
	}
	rows, cols := c.margins()
	if used(rows) < 2 || used(cols) < 2 {
		return undefined(ReasonNoVariation)
	}
	ra, rb := midRanks(rows), midRanks(cols)
	mean := float64(c.n+1) / 2
	var sxx, syy, sxy float64
	for k, x := range rows {
		d := ra[k] - mean
		sxx += float64(x) * d * d
	}
	for l, x := range cols {
		d := rb[l] - mean
		syy += float64(x) * d * d
	}
	for k, row := range c.cells {
		for l, x := range row {
			sxy += float64(x) * (ra[k] - mean) * (rb[l] - mean)
		}
	}
	return defined(clamp(sxy / math.Sqrt(sxx*syy)))
}

// KendallTauB returns Kendall's tau-b over the items both rated:
// (P - Q) / sqrt((n0 - n1)(n0 - n2)), with P and Q the concordant and
// discordant pairs of items, n0 = n(n-1)/2 and n1, n2 the pairs tied by the
// first and by the second rater (Kendall 1945). Counting is exact, in
// integers. Undefined when no item was rated by both, or when either rater
// used a single category (no variation).
func KendallTauB(c Contingency) Estimate {
	if c.n == 0 {
		return undefined(ReasonNoPairable)
	}
	rows, cols := c.margins()
	if used(rows) < 2 || used(cols) < 2 {
		return undefined(ReasonNoVariation)
	}
	q := len(c.cells)
	// Walking rows from the bottom up, colBelow[l] holds the items in rows
	// below the current one and column l; its prefix and suffix sums give,
	// for a cell, the items below it to the left (discordant) and to the
	// right (concordant).
	colBelow := make([]int64, q)
	right := make([]int64, q+1)
	var concordant, discordant int64
	for k := q - 1; k >= 0; k-- {
		for l := q - 1; l >= 0; l-- {
			right[l] = right[l+1] + colBelow[l]
		}
		var left int64
		for l := range q {
			x := int64(c.cells[k][l])
			concordant += x * right[l+1]
			discordant += x * left
			left += colBelow[l]
		}
		for l := range q {
			colBelow[l] += int64(c.cells[k][l])
		}
	}
	n0 := int64(c.n) * int64(c.n-1) / 2
	var n1, n2 int64
	for _, x := range rows {
		n1 += int64(x) * int64(x-1) / 2
	}
	for _, x := range cols {
		n2 += int64(x) * int64(x-1) / 2
	}
	den := math.Sqrt(float64(n0-n1)) * math.Sqrt(float64(n0-n2))
	return defined(clamp(float64(concordant-discordant) / den))
}

// clamp keeps a correlation computed in floating point inside [-1, 1].
func clamp(x float64) float64 { return max(-1, min(1, x)) }
