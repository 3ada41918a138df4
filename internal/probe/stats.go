package probe

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/failmap"
)

// Thresholds decide when a probe calls a judge unstable. They are set per
// project; DefaultThresholds are used until a lead sets others.
type Thresholds struct {
	// RetestChange is the largest share of items whose answer may change
	// across the k asks of the same prompt.
	RetestChange float64 `json:"retest_change"`
	// PerturbMove is the largest share of items whose answer may move
	// under one neutral rewrite.
	PerturbMove float64 `json:"perturb_move"`
	// MinItems is the fewest items a probe judges on: below it a share says
	// more about the few items than about the judge.
	MinItems int `json:"min_items"`
	// LengthSlope is the largest difference, per doubling of the reply's
	// length, between the judge's slope and the people's that the length
	// probe lets pass: it fails when the difference's 95 % interval lies
	// wholly beyond it on one side.
	LengthSlope float64 `json:"length_slope"`
}

// The documented defaults (docs/judges.md, "Robustness probes"): one item
// in ten may change or move, on at least ten items.
const (
	DefaultRetestChange = 0.10
	DefaultPerturbMove  = 0.10
	DefaultMinItems     = 10
	DefaultLengthSlope  = 0.10
	// MinRetestK is the fewest asks of one prompt a retest takes: with two,
	// one odd answer and a changed answer cannot be told apart from a
	// judge that splits its answers evenly.
	MinRetestK = 3
)

// DefaultThresholds are the thresholds of a project that set none.
func DefaultThresholds() Thresholds {
	return Thresholds{RetestChange: DefaultRetestChange, PerturbMove: DefaultPerturbMove, MinItems: DefaultMinItems, LengthSlope: DefaultLengthSlope}
}

// Verdict is a probe's answer.
type Verdict string

const (
	Stable   Verdict = "stable"
	Unstable Verdict = "unstable"
	TooFew   Verdict = "too few items"
)

func verdict(n, bad, min int, limit float64) Verdict {
	switch {
	case n < min:
		return TooFew
	case float64(bad) > limit*float64(n):
		return Unstable
	}
	return Stable
}

// Answers are one item's answers from the judge to one criterion: the k
// asks of the same prompt for a retest. Empty strings are asks that gave no
// readable answer and are left out.
type Answers struct {
	Item    string
	Answers []string
}

// RetestResult is the retest of one criterion.
type RetestResult struct {
	Criterion string `json:"criterion"`
	// K is the most answers any item had.
	K int `json:"k"`
	// Items are those with at least two answers; Changed those among them
	// whose answers were not all the same.
	Items       int     `json:"items"`
	Changed     int     `json:"changed"`
	ChangeShare float64 `json:"change_share"`
	// Kappa is the test–retest kappa: Fleiss' kappa with the asks as the
	// raters, nil (KappaReason saying why) when it is undefined, as when
	// every answer is the same.
	Kappa       *float64 `json:"kappa"`
	KappaReason string   `json:"kappa_reason,omitempty"`
	Threshold   float64  `json:"threshold"`
	Verdict     Verdict  `json:"verdict"`
}

// Retest gives, for one criterion, the share of items whose answer changes
// across the asks and the test–retest kappa. scale lists the criterion's
// answers in order (its allowed values); an answer off it is an error.
// The verdict is Unstable when more than t.RetestChange of the items
// change, TooFew under t.MinItems items.
func Retest(criterion string, scale []string, items []Answers, t Thresholds) (RetestResult, error) {
	if err := t.Validate(); err != nil {
		return RetestResult{}, err
	}
	res := RetestResult{Criterion: criterion, Threshold: t.RetestChange}
	ratings := agreement.NewRatings()
	for _, it := range items {
		given := slices.DeleteFunc(slices.Clone(it.Answers), func(a string) bool { return a == "" })
		res.K = max(res.K, len(given))
		if len(given) < 2 {
			continue
		}
		res.Items++
		if slices.ContainsFunc(given, func(a string) bool { return a != given[0] }) {
			res.Changed++
		}
		for i, a := range given {
			if !slices.Contains(scale, a) {
				return RetestResult{}, fmt.Errorf("probe: %s item %s: answer %q is not one of %v", criterion, it.Item, a, scale)
			}
			if err := ratings.Add(it.Item, "ask "+strconv.Itoa(i+1), a); err != nil {
				return RetestResult{}, fmt.Errorf("probe: %s item %s: %w", criterion, it.Item, err)
			}
		}
	}
	if res.Items > 0 {
		res.ChangeShare = float64(res.Changed) / float64(res.Items)
	}
	res.Verdict = verdict(res.Items, res.Changed, t.MinItems, t.RetestChange)
	res.KappaReason = agreement.ReasonNoPairable
	if res.Items > 0 {
		s, err := agreement.NewScale(scale...)
		if err != nil {
			return RetestResult{}, fmt.Errorf("probe: %s: %w", criterion, err)
		}
		u, err := ratings.Units(s)
		if err != nil {
			return RetestResult{}, fmt.Errorf("probe: %s: %w", criterion, err)
		}
		if k := agreement.FleissKappa(u, agreement.NoWeights); k.Defined {
			v := k.Value
			res.Kappa, res.KappaReason = &v, ""
		} else {
			res.KappaReason = k.Reason
		}
	}
	return res, nil
}

// Pair is one item's answer to the original dialogue and to its rewrite.
type Pair struct {
	Item                string
	Original, Rewritten string
}

// PerturbResult is one rewrite's probe of one criterion.
type PerturbResult struct {
	Criterion string  `json:"criterion"`
	Rewrite   Rewrite `json:"rewrite"`
	// Items are those with a readable answer to both; Moved those whose
	// two answers differ.
	Items     int     `json:"items"`
	Moved     int     `json:"moved"`
	MoveShare float64 `json:"move_share"`
	Threshold float64 `json:"threshold"`
	Verdict   Verdict `json:"verdict"`
}

// Perturbation gives, for one criterion and one rewrite, the share of
// items whose answer moved from the original's. The verdict is Unstable
// when more than t.PerturbMove of the items move, TooFew under t.MinItems.
func Perturbation(criterion string, r Rewrite, pairs []Pair, t Thresholds) (PerturbResult, error) {
	if err := t.Validate(); err != nil {
		return PerturbResult{}, err
	}
	if _, err := ParseRewrite(string(r)); err != nil {
		return PerturbResult{}, err
	}
	res := PerturbResult{Criterion: criterion, Rewrite: r, Threshold: t.PerturbMove}
	for _, p := range pairs {
		if p.Original == "" || p.Rewritten == "" {
			continue
		}
		res.Items++
		if p.Original != p.Rewritten {
			res.Moved++
		}
	}
	if res.Items > 0 {
		res.MoveShare = float64(res.Moved) / float64(res.Items)
	}
	res.Verdict = verdict(res.Items, res.Moved, t.MinItems, t.PerturbMove)
	return res, nil
}

// LengthResult is the length probe of one criterion: the judge's and the
// people's slopes of the answer on the reply's length (failmap.LengthBias)
// and the verdict against the threshold.
type LengthResult struct {
	Criterion string         `json:"criterion"`
	Length    failmap.Length `json:"length"`
	Threshold float64        `json:"threshold"`
	Verdict   Verdict        `json:"verdict"`
}

// LengthProbe regresses, for one criterion, the judge's answers and the
// people's on the replies' lengths. The verdict is Unstable when the 95 %
// interval of the difference of the slopes lies wholly above
// t.LengthSlope or wholly below −t.LengthSlope; TooFew when the slopes are
// undefined (too few items, or replies all of one length).
func LengthProbe(criterion string, items []failmap.Item, t Thresholds) (LengthResult, error) {
	if err := t.Validate(); err != nil {
		return LengthResult{}, err
	}
	l := failmap.LengthBias(items)
	res := LengthResult{Criterion: criterion, Length: l, Threshold: t.LengthSlope, Verdict: Stable}
	switch {
	case !l.Defined:
		res.Verdict = TooFew
	case *l.Low > t.LengthSlope || *l.High < -t.LengthSlope:
		res.Verdict = Unstable
	}
	return res, nil
}

// Summary is every probe of one judge and prompt version.
type Summary struct {
	Retest       []RetestResult  `json:"retest"`
	Perturbation []PerturbResult `json:"perturbation"`
	Length       []LengthResult  `json:"length"`
}

// For is the part of s on one criterion.
func (s Summary) For(criterion string) Summary {
	out := Summary{}
	for _, r := range s.Retest {
		if r.Criterion == criterion {
			out.Retest = append(out.Retest, r)
		}
	}
	for _, p := range s.Perturbation {
		if p.Criterion == criterion {
			out.Perturbation = append(out.Perturbation, p)
		}
	}
	for _, l := range s.Length {
		if l.Criterion == criterion {
			out.Length = append(out.Length, l)
		}
	}
	return out
}

// Unstable reports whether any probe failed its threshold. A probe with
// too few items does not fail: it says nothing either way, and the page
// says so beside it.
func (s Summary) Unstable() bool {
	for _, r := range s.Retest {
		if r.Verdict == Unstable {
			return true
		}
	}
	for _, p := range s.Perturbation {
		if p.Verdict == Unstable {
			return true
		}
	}
	for _, l := range s.Length {
		if l.Verdict == Unstable {
			return true
		}
	}
	return false
}

// Failed lists the probes that failed, in words: "retest of empathy",
// "rename of empathy".
func (s Summary) Failed() []string {
	var out []string
	for _, r := range s.Retest {
		if r.Verdict == Unstable {
			out = append(out, "retest of "+r.Criterion)
		}
	}
	for _, p := range s.Perturbation {
		if p.Verdict == Unstable {
			out = append(out, string(p.Rewrite)+" of "+p.Criterion)
		}
	}
	for _, l := range s.Length {
		if l.Verdict == Unstable {
			out = append(out, "length of "+l.Criterion)
		}
	}
	return out
}

// PassedUnstable is the certification's verdict for a judge that passed
// the alt-test while a probe failed.
const PassedUnstable = "passed, but unstable"

// Certify joins the alt-test's verdict in words (word, "passed" or
// "passed, but on 2 annotators") with the probes: a pass becomes
// PassedUnstable when a probe failed, a qualified pass keeps its
// qualification and adds the instability. Any other verdict stands, since
// a judge that did not pass is not made worse, nor better, by its probes.
func Certify(passed bool, word string, s *Summary) string {
	if !passed || s == nil || !s.Unstable() {
		return word
	}
	if word == "passed" {
		return PassedUnstable
	}
	return word + ", and unstable"
}
