package agreement

import (
	"slices"
	"strconv"
	"strings"
)

// TurnSet is the turns one rater marked as where a criterion fails: turn
// numbers as the workspace shows them, from 1. Order and repeats do not
// matter; the functions here read it as a set.
type TurnSet []int

// canonical is the set's sorted, de-duplicated turns.
func (t TurnSet) canonical() TurnSet {
	c := slices.Clone(t)
	slices.Sort(c)
	return slices.Compact(c)
}

// key names the set for interning: its sorted turns joined by commas.
func (t TurnSet) key() string {
	var b strings.Builder
	for i, x := range t {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// MASIDistance is Passonneau's (2006) Measuring Agreement on Set-valued
// Items distance between two turn sets: 1 − J·M, where J is the Jaccard
// ratio |A∩B| / |A∪B| and M is 1 when the sets are equal, 2/3 when one
// holds the other, 1/3 when they only overlap and 0 when they are
// disjoint. Two empty sets are at distance 0; one empty set and one not
// are at distance 1. It is a distance on sets, so 0 only for equal sets.
func MASIDistance(a, b TurnSet) float64 {
	a, b = a.canonical(), b.canonical()
	return masi(a, b)
}

func masi(a, b TurnSet) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	union := len(a) + len(b) - inter
	var m float64
	switch {
	case inter == 0:
		return 1
	case inter == len(a) && inter == len(b):
		m = 1
	case inter == len(a) || inter == len(b):
		m = 2.0 / 3
	default:
		m = 1.0 / 3
	}
	return 1 - float64(inter)/float64(union)*m
}

// EvidenceAlpha is Krippendorff's alpha on the turn sets raters marked,
// with the MASI distance: each element of items is one item's sets, one
// per rater who marked one. Items with fewer than two sets drop out, as
// alpha's pairable values do. alpha = 1 − (n−1)·D_o / D_e, where D_o sums
// each item's ordered pairs' distances over m_u − 1 and D_e sums the
// distances of every ordered pair of pairable sets. Undefined when no item
// has two sets, or every pairable set is the same (no variation).
func EvidenceAlpha(items [][]TurnSet) Estimate {
	ids := map[string]int{}
	var distinct []TurnSet
	var counts []float64 // pairable sets per distinct set
	var n, do float64
	for _, sets := range items {
		if len(sets) < 2 {
			continue
		}
		canon := make([]TurnSet, len(sets))
		for i, s := range sets {
			c := s.canonical()
			canon[i] = c
			k := c.key()
			id, ok := ids[k]
			if !ok {
				id = len(distinct)
				ids[k] = id
				distinct = append(distinct, c)
				counts = append(counts, 0)
			}
			counts[id]++
		}
		var within float64
		for i := range canon {
			for j := range canon {
				if i != j {
					within += masi(canon[i], canon[j])
				}
			}
		}
		do += within / float64(len(sets)-1)
		n += float64(len(sets))
	}
	if n == 0 {
		return undefined(ReasonNoPairable)
	}
	var de float64
	for c := range distinct {
		for k := range distinct {
			if c != k {
				de += counts[c] * counts[k] * masi(distinct[c], distinct[k])
			}
		}
	}
	if de == 0 {
		return undefined(ReasonNoVariation)
	}
	return defined(1 - (n-1)*do/de)
}

// EvidenceOverlap is, among pairs of raters who both marked turns on the
// same item, the share whose sets name at least one turn in common: the
// plain-language figure beside EvidenceAlpha ("when two people both say it
// fails, how often do they point at the same place?"). Pairs counts the
// unordered pairs compared; Share is 0 when there are none.
type EvidenceOverlap struct {
	Pairs       int     `json:"pairs"`
	Overlapping int     `json:"overlapping"`
	Share       float64 `json:"share"`
}

// Overlap counts, item by item, the unordered pairs of non-empty turn
// sets that share a turn.
func Overlap(items [][]TurnSet) EvidenceOverlap {
	var o EvidenceOverlap
	for _, sets := range items {
		canon := make([]TurnSet, 0, len(sets))
		for _, s := range sets {
			if len(s) > 0 {
				canon = append(canon, s.canonical())
			}
		}
		for i := range canon {
			for j := i + 1; j < len(canon); j++ {
				o.Pairs++
				if masi(canon[i], canon[j]) < 1 {
					o.Overlapping++
				}
			}
		}
	}
	if o.Pairs > 0 {
		o.Share = float64(o.Overlapping) / float64(o.Pairs)
	}
	return o
}

// MinEvidenceItems is the fewest items, each with turns marked by two
// raters or more, on which the agreement on evidence is given as a
// figure. Below it one or two dialogues would decide the share and alpha
// alone, and a lead would read a 0 or a 1 that says nothing; the figures
// are then "too few" (EvidenceFigures.TooFew).
const MinEvidenceItems = 5

// ReasonFewEvidenceItems is the Reason of an evidence alpha withheld for
// too few items.
const ReasonFewEvidenceItems = "too few items where two raters both marked turns"

// EvidenceFigures is the agreement on turn evidence over a set of items:
// how many items and pairs of marked sets it rests on, the share of pairs
// naming a common turn, and alpha with the MASI distance.
type EvidenceFigures struct {
	// Items counts the items where at least two marked sets are compared.
	Items   int             `json:"n_items"`
	Overlap EvidenceOverlap `json:"overlap"`
	Alpha   Estimate        `json:"alpha"`
	// TooFew is set when Items is below MinEvidenceItems: Overlap keeps
	// its counts, but its share and Alpha are not to be shown as figures
	// (Alpha is undefined with ReasonFewEvidenceItems).
	TooFew bool `json:"too_few"`
}

// EvidenceAgreement is the agreement among raters on evidence: each
// element of items is one item's marked sets, one per rater who marked
// turns (empty sets are left out). It is Overlap and EvidenceAlpha over
// the same items, withheld as too few below MinEvidenceItems.
func EvidenceAgreement(items [][]TurnSet) EvidenceFigures {
	kept := make([][]TurnSet, 0, len(items))
	for _, sets := range items {
		var marked []TurnSet
		for _, s := range sets {
			if len(s) > 0 {
				marked = append(marked, s)
			}
		}
		if len(marked) >= 2 {
			kept = append(kept, marked)
		}
	}
	return evidenceFigures(kept, len(kept))
}

// EvidenceAgreementWith is one rater's (a judge's) agreement on evidence
// with others (the people), leaving out the others' agreement among
// themselves: rater[i] is the rater's set on item i (empty when it marked
// none) and others[i] the others' sets there. Each pair of the rater's set
// with one other's set is a unit of two, so the share counts those pairs,
// and alpha is the two-rater alpha of the rater against the others
// pooled. Items counts the items with at least one such pair.
func EvidenceAgreementWith(rater []TurnSet, others [][]TurnSet) EvidenceFigures {
	var units [][]TurnSet
	items := 0
	for i, mine := range rater {
		if len(mine) == 0 || i >= len(others) {
			continue
		}
		paired := false
		for _, o := range others[i] {
			if len(o) > 0 {
				units = append(units, []TurnSet{mine, o})
				paired = true
			}
		}
		if paired {
			items++
		}
	}
	return evidenceFigures(units, items)
}

func evidenceFigures(units [][]TurnSet, items int) EvidenceFigures {
	f := EvidenceFigures{Items: items, Overlap: Overlap(units)}
	if items < MinEvidenceItems {
		f.TooFew = true
		f.Alpha = undefined(ReasonFewEvidenceItems)
		return f
	}
	f.Alpha = EvidenceAlpha(units)
	return f
}
