package ppi

import (
	"errors"
	"fmt"
	"sort"
)

// NoSystem is how an item that names no system is shown.
const NoSystem = "(none)"

// Overall is the system name of the estimate over every item.
const Overall = "(all)"

// SampleCaveat is said beside every set of system estimates: attune did
// not draw these labels, so it cannot vouch that they are a random sample,
// which every interval here assumes.
const SampleCaveat = "not drawn by attune: valid only if people labelled a uniform random sample of the items"

// Rated is one item as the systems view needs it: the system that produced
// it ("" for none), the judge's value and, when Labelled, the human value
// (a mean of people's answers or a share of YES).
type Rated struct {
	System   string
	Judge    float64
	Human    float64
	Labelled bool
}

// SystemEstimate is the estimate of one system's mean, or of every item's
// when System is Overall.
type SystemEstimate struct {
	System string `json:"system"`
	Estimate
}

// SystemDifference is A − B between two systems.
type SystemDifference struct {
	A string `json:"a"`
	B string `json:"b"`
	Difference
}

// Skipped names a system that has no estimate and why (most often fewer
// than two labelled items).
type Skipped struct {
	System string `json:"system"`
	Reason string `json:"reason"`
}

// SystemEstimates is the systems view of one quantity: an estimate per
// system and overall, and the difference of every pair of systems.
// Sample says on what the intervals rest.
type SystemEstimates struct {
	Sample      string             `json:"sample"`
	Systems     []SystemEstimate   `json:"systems"`
	Overall     *SystemEstimate    `json:"overall"`
	Differences []SystemDifference `json:"differences"`
	Skipped     []Skipped          `json:"skipped"`
}

// BySystem estimates the mean per system (in name order, "" shown as
// NoSystem) and over all items, and the difference of every pair of
// estimated systems. Each item belongs to one system, so no two systems
// share items and every difference is an IndependentDifference. A system
// (or the whole) with fewer than two labelled items is listed in Skipped
// rather than failing the rest; any other error of Mean is returned.
func BySystem(items []Rated, o Options) (SystemEstimates, error) {
	// Counted first, so that each sample is made its size once: grown as
	// the items went by, the copying was a fifth of a report's estimates
	// (BenchmarkEstimates, pprof).
	type count struct{ labelled, unlabelled int }
	counts := map[string]*count{}
	var total count
	for _, it := range items {
		c := counts[it.System]
		if c == nil {
			c = &count{}
			counts[it.System] = c
		}
		if it.Labelled {
			c.labelled++
			total.labelled++
		} else {
			c.unlabelled++
			total.unlabelled++
		}
	}
	sized := func(c count) *Sample {
		return &Sample{Human: make([]float64, 0, c.labelled), JudgeLabelled: make([]float64, 0, c.labelled),
			JudgeUnlabelled: make([]float64, 0, c.unlabelled)}
	}
	groups := map[string]*Sample{}
	bySystem := make(map[string]*Sample, len(counts))
	for system, c := range counts {
		name := system
		if name == "" {
			name = NoSystem
		}
		s := groups[name]
		if s == nil {
			s = sized(*c)
			groups[name] = s
		}
		bySystem[system] = s
	}
	all := sized(total)
	for _, it := range items {
		for _, t := range []*Sample{bySystem[it.System], all} {
			if it.Labelled {
				t.Human = append(t.Human, it.Human)
				t.JudgeLabelled = append(t.JudgeLabelled, it.Judge)
			} else {
				t.JudgeUnlabelled = append(t.JudgeUnlabelled, it.Judge)
			}
		}
	}
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)

	out := SystemEstimates{Sample: SampleCaveat, Systems: []SystemEstimate{}, Differences: []SystemDifference{}, Skipped: []Skipped{}}
	estimate := func(name string, s *Sample) (*SystemEstimate, error) {
		e, err := Mean(*s, o)
		if errors.Is(err, ErrTooFewLabelled) {
			out.Skipped = append(out.Skipped, Skipped{System: name, Reason: fmt.Sprintf("%d labelled items; at least 2 are needed", len(s.Human))})
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("system %q: %w", name, err)
		}
		return &SystemEstimate{System: name, Estimate: e}, nil
	}
	for _, name := range names {
		e, err := estimate(name, groups[name])
		if err != nil {
			return SystemEstimates{}, err
		}
		if e != nil {
			out.Systems = append(out.Systems, *e)
		}
	}
	if len(items) > 0 {
		e, err := estimate(Overall, all)
		if err != nil {
			return SystemEstimates{}, err
		}
		out.Overall = e
	}
	for i, a := range out.Systems {
		for _, b := range out.Systems[i+1:] {
			d, err := IndependentDifference(a.Estimate, b.Estimate)
			if err != nil {
				return SystemEstimates{}, fmt.Errorf("difference %q − %q: %w", a.System, b.System, err)
			}
			out.Differences = append(out.Differences, SystemDifference{A: a.System, B: b.System, Difference: d})
		}
	}
	return out, nil
}
