package agreement

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Scale is the ordered list of answer categories of one rubric item, such as
// "1".."5" or "YES","NO","NA". Each category has a position (1..q, in the
// order given) and a numeric value: the number its label spells when every
// label is a number, its position otherwise. Positions drive Cohen's weights,
// values drive Krippendorff's interval and ratio metrics and Gwet's AC2
// weights. A Scale is immutable once built and safe for concurrent use.
type Scale struct {
	labels  []string
	values  []float64
	numeric bool
	index   map[string]int
}

// NewScale returns the scale whose categories are labels, in that order.
// Labels are trimmed of surrounding space. It fails when there are no labels,
// a label is empty or repeated, or two numeric labels spell the same number
// ("1" and "1.0"), since their distance would be zero.
func NewScale(labels ...string) (*Scale, error) {
	if len(labels) == 0 {
		return nil, errors.New("agreement: scale has no categories")
	}
	s := &Scale{
		labels:  make([]string, len(labels)),
		values:  make([]float64, len(labels)),
		numeric: true,
		index:   make(map[string]int, len(labels)),
	}
	for i, l := range labels {
		l = strings.TrimSpace(l)
		if l == "" {
			return nil, fmt.Errorf("agreement: scale category %d is empty", i+1)
		}
		if _, dup := s.index[l]; dup {
			return nil, fmt.Errorf("agreement: scale category %q is repeated", l)
		}
		s.labels[i] = l
		s.index[l] = i
		v, ok := parseNumber(l)
		if !ok {
			s.numeric = false
		}
		s.values[i] = v
	}
	if !s.numeric {
		for i := range s.values {
			s.values[i] = float64(i + 1)
		}
		return s, nil
	}
	seen := make(map[float64]string, len(labels))
	for i, v := range s.values {
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("agreement: scale categories %q and %q have the same value", prev, s.labels[i])
		}
		seen[v] = s.labels[i]
	}
	return s, nil
}

// ParseScale returns the scale given as a comma-separated list of labels,
// as in the CLI's --categories 1,2,3,4,5. Errors are those of NewScale.
func ParseScale(list string) (*Scale, error) {
	return NewScale(strings.Split(list, ",")...)
}

// InferScale returns the scale made of the distinct labels given: sorted as
// numbers when every label is a number, as strings otherwise. It is the scale
// used when none is declared. Errors are those of NewScale.
func InferScale(labels []string) (*Scale, error) {
	distinct := make([]string, 0, len(labels))
	seen := make(map[string]bool, len(labels))
	numeric := true
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if seen[l] {
			continue
		}
		seen[l] = true
		distinct = append(distinct, l)
		if _, ok := parseNumber(l); !ok {
			numeric = false
		}
	}
	if numeric {
		slices.SortFunc(distinct, func(a, b string) int {
			x, _ := parseNumber(a)
			y, _ := parseNumber(b)
			if c := cmpFloat(x, y); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	} else {
		slices.Sort(distinct)
	}
	return NewScale(distinct...)
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// parseNumber reports the finite number a label spells, if any.
func parseNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// Len returns the number of categories q.
func (s *Scale) Len() int { return len(s.labels) }

// Labels returns a copy of the category labels in scale order.
func (s *Scale) Labels() []string { return slices.Clone(s.labels) }

// Label returns the label of the category at index k (0-based).
func (s *Scale) Label(k int) string { return s.labels[k] }

// Index returns the 0-based index of the category labelled label, and whether
// the scale has it. The label is matched after trimming surrounding space.
func (s *Scale) Index(label string) (int, bool) {
	k, ok := s.index[strings.TrimSpace(label)]
	return k, ok
}

// Numeric reports whether every label is a number, so that the values are
// measurements rather than positions.
func (s *Scale) Numeric() bool { return s.numeric }

// Values returns a copy of the categories' numeric values in scale order:
// the numbers the labels spell, or the positions 1..q for a non-numeric scale.
func (s *Scale) Values() []float64 { return slices.Clone(s.values) }

// Positions returns the positions 1..q of the categories, the coordinates
// Cohen's weights are computed on.
func (s *Scale) Positions() []float64 {
	p := make([]float64, len(s.labels))
	for i := range p {
		p[i] = float64(i + 1)
	}
	return p
}

// String returns the labels joined by commas, the form ParseScale reads.
func (s *Scale) String() string { return strings.Join(s.labels, ",") }
