package evaluation

import (
	"context"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Defaults of a trust query: the judge agrees with people on at least 90 %
// of the items it keeps, guaranteed with probability 0.95.
const (
	DefaultTrustTarget = 0.9
	DefaultTrustAlpha  = 0.05
)

// TrustQuery asks where a judge may label one rubric item alone.
type TrustQuery struct {
	ProjectID  int64
	Judge      string
	RubricItem string
	Target     float64 // 0 means DefaultTrustTarget
	Alpha      float64 // 0 means DefaultTrustAlpha
}

// Field names of a trust query's own problems.
const (
	FieldTarget = "target"
	FieldAlpha  = "alpha"
)

// ParseTrustTerms reads the target and alpha as a form or query gives
// them, as a share or in percent ("0.9", "90" or "90%"); empty means the
// default.
func ParseTrustTerms(target, alpha string) (t, a float64, err error) {
	read := func(field, s string, def float64) (float64, error) {
		s = strings.TrimSpace(s)
		percent := strings.HasSuffix(s, "%")
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
		if s == "" && !percent {
			return def, nil
		}
		x, err := strconv.ParseFloat(s, 64)
		if percent || x >= 1 {
			x /= 100 // a share is below 1, so 1 and more are percentages
		}
		if err != nil || !(x > 0 && x < 1) {
			return 0, attune.Invalid(field, "enter a share between 0 and 1, or a percentage between 0 and 100 (exclusive)")
		}
		return x, nil
	}
	if t, err = read(FieldTarget, target, DefaultTrustTarget); err != nil {
		return 0, 0, err
	}
	a, err = read(FieldAlpha, alpha, DefaultTrustAlpha)
	return t, a, err
}

// TrustSource is what trust calibration needs of the database; *store.DB
// satisfies it.
type TrustSource interface {
	TrustRows(ctx context.Context, projectID int64, judge, rubricItem string) ([]store.TrustRow, error)
}

// TrustResult is the calibrated rule for one rubric item and what it
// would do: Calibration counts the human-labelled items it was
// calibrated on; NoConfidence the judge's answers that recorded no
// certainty (one sample, no log-probabilities), which it cannot use;
// PeopleTied the labelled items left out because people tied; JudgeOnly
// the items no person labelled, JudgeOnlyKept those the judge would keep
// under the rule, the rest going to people.
type TrustResult struct {
	RubricItem    string  `json:"rubric_item"`
	Target        float64 `json:"target"`
	Alpha         float64 `json:"alpha"`
	Calibration   int     `json:"calibration_items"`
	NoConfidence  int     `json:"no_confidence"`
	PeopleTied    int     `json:"people_tied"`
	JudgeOnly     int     `json:"judge_only_items"`
	JudgeOnlyKept int     `json:"judge_only_kept"`
	agreement.Trust
}

// Trust calibrates, on the items people labelled, the confidence
// threshold above which the judge's agreement with people on the rubric
// item is guaranteed at the query's terms (agreement.CalibrateTrust). The
// people's answer on an item is their most common one; an item on which
// people tie has none and is left out. The judge's confidence is
// judge.Confidence of its answer.
func Trust(ctx context.Context, src TrustSource, q TrustQuery) (TrustResult, error) {
	switch {
	case q.Judge == "":
		return TrustResult{}, attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	case q.RubricItem == "":
		return TrustResult{}, attune.Invalid(FieldRubricItem, "name the rubric item, by key")
	}
	if q.Target == 0 {
		q.Target = DefaultTrustTarget
	}
	if q.Alpha == 0 {
		q.Alpha = DefaultTrustAlpha
	}
	rows, err := src.TrustRows(ctx, q.ProjectID, q.Judge, q.RubricItem)
	if err != nil {
		return TrustResult{}, err
	}
	return calibrate(rows, q)
}

// calibrate is Trust on the rows read, the query's terms filled in.
func calibrate(rows []store.TrustRow, q TrustQuery) (TrustResult, error) {
	res := TrustResult{RubricItem: q.RubricItem, Target: q.Target, Alpha: q.Alpha}
	var judged []agreement.Judged
	var judgeOnly []float64
	for _, r := range rows {
		c, ok := judge.Confidence(rubric.Value(r.Judge), r.Distribution, r.Samples)
		if !ok {
			res.NoConfidence++
			continue
		}
		if len(r.People) == 0 {
			judgeOnly = append(judgeOnly, c)
			continue
		}
		people, ok := majority(r.People)
		if !ok {
			res.PeopleTied++
			continue
		}
		judged = append(judged, agreement.Judged{Confidence: c, Agrees: r.Judge == people})
	}
	t, err := agreement.CalibrateTrust(judged, agreement.TrustOptions{Target: q.Target, Alpha: q.Alpha})
	if err != nil {
		var field = FieldTarget
		if !(q.Alpha > 0 && q.Alpha < 1) {
			field = FieldAlpha
		}
		return TrustResult{}, attune.Invalid(field, err.Error())
	}
	res.Trust, res.Calibration, res.JudgeOnly = t, len(judged), len(judgeOnly)
	for _, c := range judgeOnly {
		if t.Keeps(c) {
			res.JudgeOnlyKept++
		}
	}
	return res, nil
}

// majority is the strictly most common answer; ok is false on a tie.
func majority(answers []string) (string, bool) {
	counts := map[string]int{}
	for _, a := range answers {
		counts[a]++
	}
	best, bestN, tied := "", 0, false
	for a, n := range counts {
		switch {
		case n > bestN:
			best, bestN, tied = a, n, false
		case n == bestN:
			tied = true
		}
	}
	return best, !tied
}
