package calibration

import (
	"fmt"
	"strings"
	"time"

	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
)

// Record is one calibration answer set as it was graded: the answers given
// and the gold of that moment, rubric item key → value.
type Record struct {
	Given, Gold map[string]string
	// Run and At are a judge's sentinel answer's run and time (see
	// Sentinels); zero for a person's answer.
	Run int64
	At  time.Time
	// Item is the calibration item answered: a judge's sentinel test
	// pairs its runs item by item (see Sentinels).
	Item int64
}

// Summary is how one rater has done on a project's calibration items, on
// the same yardstick for a person and a judge.
type Summary struct {
	// N is the number of calibration answer sets.
	N int `json:"n"`
	// Accuracy is the share of compared rubric items that matched gold
	// within their kind's tolerance, over all N answer sets.
	Accuracy float64 `json:"accuracy"`
	// Leniency is the mean signed difference (given − gold) over numeric
	// rubric items; nil when no numeric rubric item was compared.
	Leniency *float64 `json:"leniency"`
	// Drifting reports whether any rubric item's accuracy or leniency chart
	// has signalled; DriftingOn names those rubric items, in the rubric's
	// order. A steady person is flagged by chance with probability at most
	// FalseAlarm within their first Horizon answers.
	Drifting   bool     `json:"drifting"`
	DriftingOn []string `json:"drifting_on"`
}

// Summarize grades a rater's calibration records, oldest first, against
// the gold stored with each, and runs every rubric item's series through
// the drift charts: accuracy on every rubric item and leniency on numeric
// ones. Charts are per rubric item because a person can drift on one
// dimension while holding steady on the rest; the rubric's charts share
// FalseAlarm equally (ChartAlpha), so that a steady person is flagged by
// chance at most that often over their first Horizon answers, not that
// often on each chart.
func Summarize(def *rubric.Definition, records []Record) Summary {
	s, _ := summarize(def, records)
	return s
}

// summarize is Summarize, and the index of the first observation at which
// some chart signalled (-1: none). The charts look only backwards, so the
// summary of the first n records drifts exactly when that index is below
// n (with gold on every rubric item of every record).
func summarize(def *rubric.Definition, records []Record) (Summary, int) {
	s := Summary{N: len(records), DriftingOn: []string{}}
	first := -1
	earliest := func(c Chart) bool {
		if c.AlarmAt >= 0 && (first < 0 || c.AlarmAt < first) {
			first = c.AlarmAt
		}
		return c.Drifting()
	}
	matches := make(map[string][]bool, len(def.Items))
	diffs := make(map[string][]int, len(def.Items))
	var matched, compared, diffSum, diffN int
	for _, r := range records {
		// The pass mark plays no part here: only the per-item grades count.
		g := GradeAnswers(def, r.Gold, r.Given, 100)
		matched += g.Matched
		compared += g.Compared
		for _, ig := range g.Items {
			matches[ig.Key] = append(matches[ig.Key], ig.Match)
			if ig.Diff != nil {
				diffs[ig.Key] = append(diffs[ig.Key], *ig.Diff)
				diffSum += *ig.Diff
				diffN++
			}
		}
	}
	if compared > 0 {
		s.Accuracy = float64(matched) / float64(compared)
	}
	if diffN > 0 {
		l := float64(diffSum) / float64(diffN)
		s.Leniency = &l
	}
	alpha := ChartAlpha(def)
	for _, it := range def.Items {
		drifting := earliest(AccuracyChart(matches[it.Key], alpha))
		if d := diffs[it.Key]; len(d) > 0 && earliest(LeniencyChart(d, alpha)) {
			drifting = true
		}
		if drifting {
			s.DriftingOn = append(s.DriftingOn, it.Key)
		}
	}
	s.Drifting = len(s.DriftingOn) > 0
	return s, first
}

// Charts is how many drift charts a rubric gives each rater: an accuracy
// chart per rubric item and a leniency chart per numeric one. It is fixed
// by the rubric, not by the answers, so that the share of each chart does
// not depend on what the rater did.
func Charts(def *rubric.Definition) int {
	n := len(def.Items)
	for i := range def.Items {
		if gold.Numeric(def, &def.Items[i]) {
			n++
		}
	}
	return n
}

// ChartAlpha is each of a rubric's drift charts' share of FalseAlarm:
// FalseAlarm / Charts (Bonferroni), which bounds the chance that any chart
// of a steady person signals by FalseAlarm whatever the dependence between
// the charts (an item's accuracy and leniency charts watch the same
// answers).
func ChartAlpha(def *rubric.Definition) float64 {
	return FalseAlarm / float64(max(1, Charts(def)))
}

// AlertMinAnswers is how many calibration answer sets a person gives before
// their accuracy alone (without a drift signal) raises an alert: a miss or
// two while qualifying is what qualification is for.
const AlertMinAnswers = 5

// Alert says, in a phrase, why a lead should look at this rater: a drift
// signal, or accuracy below the pass mark (percent) over at least
// AlertMinAnswers answer sets. It is "" when nothing calls for a look.
func (s Summary) Alert(passPercent int) string {
	var what []string
	if s.Drifting {
		what = append(what, "drifting on "+strings.Join(s.DriftingOn, ", "))
	}
	if s.N >= AlertMinAnswers && s.Accuracy*100 < float64(passPercent) {
		what = append(what, fmt.Sprintf("%.0f%% against gold over %d calibration items, below the pass mark of %d%%", 100*s.Accuracy, s.N, passPercent))
	}
	return strings.Join(what, "; ")
}
