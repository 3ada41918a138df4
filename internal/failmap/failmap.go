// Package failmap breaks a judge's agreement with people down by what the
// items are, so a lead sees on which kinds of item the judge parts from
// people: the number of turns, whether crisis signals are present, the
// length of the reply being judged, the system that produced it, and
// whether people agreed among themselves.
//
// Items on which people disagree are always reported apart. A pooled
// figure flatters a judge when human labels are noisy: where people split,
// any answer matches some of them, and where they agree the judge is held
// to one answer. So each band gives the judge's agreement on the items
// people agreed on (a share of items, with an interval) and, beside it,
// on the items they split on, next to how often people matched each other
// there.
//
// Beside the bands, the length probe (LengthBias) sets how the judge's
// answers move with reply length against how the people's do.
//
// It imports only the standard library, internal/agreement and
// internal/rubric (for the answer words): the caller works out each item's
// features (crisis signals by rubric.FactsOf) and answers.
package failmap

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/attune/attune/internal/agreement"
)

// Item is one item as the map reads it, for one rubric item: its
// features and the answers given to it.
type Item struct {
	Turns      int    // turns of the dialogue; 0 when unknown
	Crisis     bool   // crisis signals present (rubric.FactsOf)
	ReplyChars int    // characters of the last assistant reply; -1 when none
	System     string // the system that produced it; "" when it names none
	People     []string
	Judge      string // the judge's answer; "" when it gave none
}

// Dimensions of the map, in the order shown.
const (
	DimPeople = "people"
	DimTurns  = "turns"
	DimCrisis = "crisis signals"
	DimLength = "reply length"
	DimSystem = "system"
)

// NoSystem names the band of items that name no system.
const NoSystem = "(none)"

// Band is one kind of item and how the judge did on it.
type Band struct {
	Dimension string `json:"dimension"`
	Band      string `json:"band"`
	// Items the judge answered in this band, with at least one person's
	// answer.
	Items int `json:"items"`
	// Agreed: items two or more people answered alike. Matched is how
	// many of them the judge answered the same way, Share that over
	// Agreed, and Low and High its exact 95 % interval.
	Agreed  int      `json:"agreed"`
	Matched int      `json:"matched"`
	Share   *float64 `json:"share"`
	Low     *float64 `json:"low"`
	High    *float64 `json:"high"`
	// Split: items two or more people answered differently. JudgeShare
	// is the mean, over them, of the share of people the judge matched;
	// PeopleShare the mean share of pairs of people who matched.
	Split       int      `json:"split"`
	JudgeShare  *float64 `json:"judge_share"`
	PeopleShare *float64 `json:"people_share"`
	// Single: items only one person answered; SingleMatched how many of
	// them the judge matched.
	Single        int `json:"single"`
	SingleMatched int `json:"single_matched"`
}

// Map is the breakdown of one rubric item, band by band, dimension by
// dimension.
type Map struct {
	Bands []Band `json:"bands"`
	// Length is the length probe over the same items (LengthBias).
	Length Length `json:"length"`
}

// turnBands and lengthBands are the fixed cut points: the same bands in
// every project, so maps can be compared. Each band is [lo, next lo).
var (
	turnBands   = []int{1, 3, 6, 11, 21}
	lengthBands = []int{0, 200, 600, 1500}
)

func bandOf(cuts []int, x int, unit string) (string, int) {
	i := len(cuts) - 1
	for i > 0 && x < cuts[i] {
		i--
	}
	if i == len(cuts)-1 {
		return fmt.Sprintf("%d+ %s", cuts[i], unit), i
	}
	hi := cuts[i+1] - 1
	if cuts[i] == hi {
		return fmt.Sprintf("%d %s", hi, unit), i
	}
	return fmt.Sprintf("%d–%d %s", cuts[i], hi, unit), i
}

// Build maps the items. Items with no judge answer or no person's answer
// are left out: they say nothing of agreement. Bands come in a fixed
// order: people (agreed, split, one person), turns and reply length from
// short to long, crisis signals then none, systems by name.
func Build(items []Item) Map {
	type key struct {
		dim   string
		order int
		name  string
	}
	acc := map[key]*tally{}
	add := func(k key, it Item) {
		t := acc[k]
		if t == nil {
			t = &tally{}
			acc[k] = t
		}
		t.add(it)
	}
	for _, it := range items {
		if it.Judge == "" || len(it.People) == 0 {
			continue
		}
		switch kind(it.People) {
		case agreed:
			add(key{DimPeople, 0, "people agreed"}, it)
		case split:
			add(key{DimPeople, 1, "people split"}, it)
		default:
			add(key{DimPeople, 2, "one person"}, it)
		}
		if it.Turns > 0 {
			name, i := bandOf(turnBands, it.Turns, "turns")
			add(key{DimTurns, i, name}, it)
		}
		if it.Crisis {
			add(key{DimCrisis, 0, "present"}, it)
		} else {
			add(key{DimCrisis, 1, "none"}, it)
		}
		if it.ReplyChars >= 0 {
			name, i := bandOf(lengthBands, it.ReplyChars, "characters")
			add(key{DimLength, i, name}, it)
		}
		sys := it.System
		if sys == "" {
			sys = NoSystem
		}
		add(key{DimSystem, 0, sys}, it)
	}
	dims := map[string]int{DimPeople: 0, DimTurns: 1, DimCrisis: 2, DimLength: 3, DimSystem: 4}
	keys := make([]key, 0, len(acc))
	for k := range acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(dims[a.dim], dims[b.dim]), cmp.Compare(a.order, b.order), cmp.Compare(a.name, b.name))
	})
	m := Map{Bands: make([]Band, 0, len(keys)), Length: LengthBias(items)}
	for _, k := range keys {
		m.Bands = append(m.Bands, acc[k].band(k.dim, k.name))
	}
	return m
}

type peopleKind int

const (
	single peopleKind = iota
	agreed
	split
)

func kind(people []string) peopleKind {
	if len(people) < 2 {
		return single
	}
	for _, p := range people[1:] {
		if p != people[0] {
			return split
		}
	}
	return agreed
}

type tally struct {
	items, agreed, matched, split, single, singleMatched int
	judgeShare, peopleShare                              float64
}

func (t *tally) add(it Item) {
	t.items++
	switch kind(it.People) {
	case agreed:
		t.agreed++
		if it.Judge == it.People[0] {
			t.matched++
		}
	case split:
		t.split++
		same := 0
		for _, p := range it.People {
			if p == it.Judge {
				same++
			}
		}
		t.judgeShare += float64(same) / float64(len(it.People))
		pairs, alike := 0, 0
		for i := range it.People {
			for j := i + 1; j < len(it.People); j++ {
				pairs++
				if it.People[i] == it.People[j] {
					alike++
				}
			}
		}
		t.peopleShare += float64(alike) / float64(pairs)
	default:
		t.single++
		if it.Judge == it.People[0] {
			t.singleMatched++
		}
	}
}

func (t *tally) band(dim, name string) Band {
	b := Band{Dimension: dim, Band: name, Items: t.items, Agreed: t.agreed, Matched: t.matched,
		Split: t.split, Single: t.single, SingleMatched: t.singleMatched}
	if t.agreed > 0 {
		share := float64(t.matched) / float64(t.agreed)
		lo, hi := Exact(t.matched, t.agreed)
		b.Share, b.Low, b.High = &share, &lo, &hi
	}
	if t.split > 0 {
		j, p := t.judgeShare/float64(t.split), t.peopleShare/float64(t.split)
		b.JudgeShare, b.PeopleShare = &j, &p
	}
	return b
}

// Exact is the 95 % Clopper–Pearson interval of a share of k in n
// (n > 0): the shares p at which k is not in either 2.5 % tail of the
// binomial. Its coverage is at least 0.95 at every share and every n,
// which the Wilson and normal intervals do not keep near 0 or 1 with few
// items, and the map's bands are often few.
func Exact(k, n int) (low, high float64) {
	const tail = 0.025
	if k > 0 {
		// P(X ≥ k; p) rises with p: the lowest p where it reaches the tail.
		low = bisect(func(p float64) bool { return 1-agreement.BinomialAtMost(k-1, n, p) >= tail })
	}
	high = 1
	if k < n {
		// P(X ≤ k; p) falls with p: the highest p where it is still the tail.
		high = bisect(func(p float64) bool { return agreement.BinomialAtMost(k, n, p) < tail })
	}
	return low, high
}

// bisect finds the p in [0, 1] where ok turns from false to true.
func bisect(ok func(p float64) bool) float64 {
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return (lo + hi) / 2
}
