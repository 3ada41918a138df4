// Package calibration holds the rules of calibration items: how a person's
// (or a judge's) answers are graded against an item's gold, when a person
// is qualified to label real items, when a calibration item is due next,
// and whether a series of grades shows drift. It is pure: it reads rubric
// definitions and knows nothing of the database or the web.
package calibration

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
)

// Tolerance is how far an answer may sit from gold on a rubric item and
// still match it: one point on a numeric scale (1–5), none on YES / NO /
// NA. A numeric item answered NA (or gold NA) matches only NA.
func Tolerance(def *rubric.Definition, it *rubric.Item) int {
	if gold.Numeric(def, it) {
		return 1
	}
	return 0
}

// ItemGrade is one rubric item of a graded answer set.
type ItemGrade struct {
	Key   string
	Given string // "" when the rubric item was left unanswered
	Gold  string
	Match bool
	// Diff is the signed difference given − gold on a numeric item where
	// both are numbers (the leniency measure); nil otherwise.
	Diff *int
}

// Grade is an answer set held against gold.
type Grade struct {
	Items    []ItemGrade // in the rubric's order, rubric items with gold only
	Matched  int
	Compared int
	Passed   bool
}

// Accuracy is the share of compared rubric items that matched, 0 when
// none were compared.
func (g Grade) Accuracy() float64 {
	if g.Compared == 0 {
		return 0
	}
	return float64(g.Matched) / float64(g.Compared)
}

// GradeAnswers holds the given answers against gold, rubric item by rubric
// item, each within the tolerance of its kind. Rubric items without gold
// are not compared; an unanswered one with gold counts as missed. The set
// passes when at least passPercent of the compared rubric items match.
func GradeAnswers(def *rubric.Definition, goldAnswers, given map[string]string, passPercent int) Grade {
	var g Grade
	for i := range def.Items {
		it := &def.Items[i]
		want, ok := goldAnswers[it.Key]
		if !ok {
			continue
		}
		got := given[it.Key]
		ig := ItemGrade{Key: it.Key, Given: got, Gold: want}
		if got != "" {
			tol := Tolerance(def, it)
			x, errX := strconv.Atoi(got)
			y, errY := strconv.Atoi(want)
			switch {
			case errX == nil && errY == nil:
				d := x - y
				ig.Diff = &d
				ig.Match = abs(d) <= tol
			default:
				ig.Match = got == want
			}
		}
		g.Compared++
		if ig.Match {
			g.Matched++
		}
		g.Items = append(g.Items, ig)
	}
	g.Passed = g.Compared > 0 && g.Matched*100 >= passPercent*g.Compared
	return g
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Policy is a project's calibration rules.
type Policy struct {
	// Qualify is how many calibration items a person must pass before real
	// items are served to them; 0 asks for no qualification.
	Qualify int
	// Every puts one calibration item in every Every items served once a
	// person is qualified; 0 serves none after qualification.
	Every int
	// PassPercent is the share of rubric items, in percent, an answer set
	// must get right to pass.
	PassPercent int
}

// DefaultPassPercent is a new project's pass mark.
const DefaultPassPercent = 80

// The bounds of a policy's settings.
const (
	MaxQualify = 1000
	MaxEvery   = 1000
)

// Check says what is wrong with a policy, naming the setting.
func (p Policy) Check() error {
	var errs []error
	if p.Qualify < 0 || p.Qualify > MaxQualify {
		errs = append(errs, fmt.Errorf("qualify must be 0 (no qualification) to %d calibration items", MaxQualify))
	}
	if p.Every != 0 && (p.Every < 2 || p.Every > MaxEvery) {
		errs = append(errs, fmt.Errorf("every must be 0 (no calibration items after qualification) or 2 to %d: one item in that many is a calibration item", MaxEvery))
	}
	if p.PassPercent < 1 || p.PassPercent > 100 {
		errs = append(errs, errors.New("pass must be a percentage from 1 to 100"))
	}
	return errors.Join(errs...)
}

// Standing is where one person stands with a project's calibration items.
type Standing struct {
	// Passed is how many calibration items they passed.
	Passed int
	// RealSince is how many real items they submitted since they were
	// last served a calibration item (or ever, when never).
	RealSince int
}

// Qualifying reports whether the person still has to qualify: real items
// are not served to them, and each calibration answer is followed by
// feedback.
func (p Policy) Qualifying(s Standing) bool {
	return p.Qualify > 0 && s.Passed < p.Qualify
}

// Due reports whether the next item served to the person is a calibration
// item: always while they qualify, and after that once every Every items,
// i.e. after Every − 1 real ones. The claim of the work queue
// (internal/store) applies this rule inside its statement; a store test
// holds the two to the same table.
func (p Policy) Due(s Standing) bool {
	return p.Qualifying(s) || (p.Every > 0 && s.RealSince >= p.Every-1)
}

// Feedback is what a person reads after a calibration answer while they
// qualify: per rubric item their answer, the gold, the lead's
// explanation, and the rubric's text for the level they chose.
type Feedback struct {
	Items []FeedbackItem
	Grade Grade
}

// FeedbackItem is one rubric item of Feedback.
type FeedbackItem struct {
	ItemGrade
	Label       string // the rubric item's label
	Explanation string // the lead's explanation, "" when none
	// ChosenText and GoldText are the rubric's descriptions of the level
	// chosen and of the gold level ("" when the rubric has none).
	ChosenText, GoldText string
}

// FeedbackFor builds the feedback on a graded answer set.
func FeedbackFor(def *rubric.Definition, g Grade, explanations map[string]string) Feedback {
	f := Feedback{Grade: g}
	for _, ig := range g.Items {
		it, ok := def.Item(ig.Key)
		if !ok {
			continue
		}
		f.Items = append(f.Items, FeedbackItem{ItemGrade: ig, Label: it.Label, Explanation: explanations[ig.Key],
			ChosenText: levelText(def, it, ig.Given), GoldText: levelText(def, it, ig.Gold)})
	}
	return f
}

// levelText is the rubric's description of one answer of an item: the
// item's own level, else the rubric's meaning of the answer.
func levelText(def *rubric.Definition, it *rubric.Item, v string) string {
	if v == "" {
		return ""
	}
	if i := slices.IndexFunc(it.Levels, func(l rubric.Level) bool { return string(l.Value) == v }); i >= 0 {
		l := it.Levels[i]
		if l.Label != "" {
			return l.Label + ": " + l.Description
		}
		return l.Description
	}
	for _, a := range def.Answers {
		if string(a.Value) == v {
			return a.Meaning
		}
	}
	return ""
}

// CheckExplanations refuses explanations for rubric items the rubric does
// not have, or longer than MaxExplanation characters.
func CheckExplanations(def *rubric.Definition, explanations map[string]string) error {
	for k, v := range explanations {
		if _, ok := def.Item(k); !ok {
			return fmt.Errorf("explanation for %q: %s has no such rubric item", k, def.Ref())
		}
		if n := len([]rune(v)); n > MaxExplanation {
			return fmt.Errorf("explanation for %q is %d characters; at most %d", k, n, MaxExplanation)
		}
	}
	return nil
}

// MaxExplanation is the longest explanation of one rubric item.
const MaxExplanation = 2000
