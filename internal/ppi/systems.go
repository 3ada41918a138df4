package ppi

import (
	"errors"
	"fmt"
	"slices"
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

// Gathered is rated items gathered into a sample per system as they are
// read, without a Rated per item: what BySystem estimates from. Systems
// are named by their place in Names, which the caller may share between
// many Gathered (one per quantity of the same items) and give by index
// to AddAt, so that an item's system is looked up once, not once per
// quantity.
type Gathered struct {
	// Names are the systems' names by index ("" for an item of none).
	Names   []string
	samples []Sample
	index   map[string]int // for Add
}

// Add gathers an item of the named system.
func (g *Gathered) Add(system string, judge, human float64, labelled bool) {
	if g.index == nil {
		g.index = make(map[string]int, len(g.Names))
		for i, n := range g.Names {
			g.index[n] = i
		}
	}
	i, ok := g.index[system]
	if !ok {
		i = len(g.Names)
		g.Names = append(g.Names, system)
		g.index[system] = i
	}
	g.AddAt(i, judge, human, labelled)
}

// AddAt gathers an item of the system Names[system], which the caller
// keeps.
func (g *Gathered) AddAt(system int, judge, human float64, labelled bool) {
	if system >= len(g.samples) {
		g.samples = append(g.samples, make([]Sample, system+1-len(g.samples))...)
	}
	s := &g.samples[system]
	if labelled {
		s.Human = append(s.Human, human)
		s.JudgeLabelled = append(s.JudgeLabelled, judge)
	} else {
		s.JudgeUnlabelled = append(s.JudgeUnlabelled, judge)
	}
}

// BySystem estimates the mean per system (in name order, "" shown as
// NoSystem) and over all items, and the difference of every pair of
// estimated systems. Each item belongs to one system, so no two systems
// share items and every difference is an IndependentDifference. A system
// (or the whole) with fewer than two labelled items is listed in Skipped
// rather than failing the rest; any other error of Mean is returned.
func BySystem(items []Rated, o Options) (SystemEstimates, error) {
	var g Gathered
	for _, it := range items {
		g.Add(it.System, it.Judge, it.Human, it.Labelled)
	}
	return g.BySystem(o)
}

// BySystem is BySystem of the items gathered.
func (g *Gathered) BySystem(o Options) (SystemEstimates, error) {
	// The samples by shown name ("" and NoSystem are one), and over all
	// in name order, so that the same items always sum alike.
	groups := map[string]*Sample{}
	for i := range g.samples {
		s := &g.samples[i]
		if len(s.Human)+len(s.JudgeUnlabelled) == 0 {
			continue
		}
		name := g.Names[i]
		if name == "" {
			name = NoSystem
		}
		if t := groups[name]; t != nil {
			groups[name] = &Sample{Human: slices.Concat(t.Human, s.Human), JudgeLabelled: slices.Concat(t.JudgeLabelled, s.JudgeLabelled),
				JudgeUnlabelled: slices.Concat(t.JudgeUnlabelled, s.JudgeUnlabelled)}
		} else {
			groups[name] = s
		}
	}
	names := make([]string, 0, len(groups))
	n, nu := 0, 0
	for name, s := range groups {
		names = append(names, name)
		n, nu = n+len(s.Human), nu+len(s.JudgeUnlabelled)
	}
	sort.Strings(names)
	all := Sample{Human: make([]float64, 0, n), JudgeLabelled: make([]float64, 0, n), JudgeUnlabelled: make([]float64, 0, nu)}
	for _, name := range names {
		s := groups[name]
		all.Human = append(all.Human, s.Human...)
		all.JudgeLabelled = append(all.JudgeLabelled, s.JudgeLabelled...)
		all.JudgeUnlabelled = append(all.JudgeUnlabelled, s.JudgeUnlabelled...)
	}

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
	if n+nu > 0 {
		e, err := estimate(Overall, &all)
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
