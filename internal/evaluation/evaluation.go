// Package evaluation is the one flow of a prediction-powered evaluation
// for every adapter: `attune estimate`, GET /api/v1/projects/{id}/estimates
// and the report read their input into a Query and call Estimate, so each
// refuses the same input with the same words and assembles the same
// figures from the same read (docs/estimates.md).
package evaluation

import (
	"context"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// DefaultSystemKey is the system key of a project that was not given
// another; a query that names none reads the project's.
const DefaultSystemKey = attune.DefaultSystemKey

// The engine's outputs an estimate may be of, by their Query.Outcome: the
// final score, the share of answer sets that pass, and the share that
// fail the safety gate.
const (
	OutcomeFinal  = "final"
	OutcomePass   = "pass"
	OutcomeSafety = "safety"
)

// Whose answers are the human value, by their Query.Human: the mean of
// the people's ("" means this) or the item's gold answer.
const (
	HumanPeople = "people"
	HumanGold   = "gold"
)

// Query is one estimate asked for: a judge, and either a rubric item or
// one of the engine's outcomes, split by the system each item names under
// SystemKey, against the people's answers or the gold (Human).
type Query struct {
	ProjectID  int64
	Judge      string
	RubricItem string
	Outcome    string
	Human      string
	SystemKey  string
}

// Field names of a Query's problems, as the API spells its parameters;
// the command line prints them before the message.
const (
	FieldJudge      = "judge"
	FieldRubricItem = "rubric_item"
	FieldOutcome    = "outcome"
	FieldHuman      = "human"
	FieldSystemKey  = "system_key"
)

// Check says what is wrong with q, as an attune.ValidationError naming
// the field, or nil. An empty SystemKey is not a problem: it means the
// project's (attune.Project.SystemKey). Whether the rubric has the outcome asked for is
// checked by Estimate, which reads the rubric.
func Check(q Query) error {
	switch {
	case q.Judge == "":
		return attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	case q.Outcome != "" && q.RubricItem != "":
		return attune.Invalid(FieldOutcome, "ask for a rubric item or an outcome, not both")
	case q.Outcome != "" && q.Outcome != OutcomeFinal && q.Outcome != OutcomePass && q.Outcome != OutcomeSafety:
		return attune.Invalid(FieldOutcome, fmt.Sprintf("outcome %q: choose final (the final score), pass or safety (the safety gate)", q.Outcome))
	case q.Outcome == "" && q.RubricItem == "":
		return attune.Invalid(FieldRubricItem, "name the rubric item to estimate, by key, or ask for an outcome")
	case q.Human != "" && q.Human != HumanPeople && q.Human != HumanGold:
		return attune.Invalid(FieldHuman, fmt.Sprintf("human %q: choose people (the mean of the people's answers) or gold", q.Human))
	}
	return nil
}

// Source is what the flow needs of the database; *store.DB satisfies it.
type Source interface {
	FindProjectByID(ctx context.Context, id int64) (*attune.Project, error)
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	StreamEstimateSets(ctx context.Context, q store.EstimateRead, fn func(*store.EstimateSets) error) error
	ReadEstimates(ctx context.Context, q store.EstimateRead, keys []string, sets func(*store.EstimateSets) error) (map[string]*store.EstimateColumn, error)
	DrawLister
}

// Estimates is the answer to a Query: what was estimated, the estimates
// per system, overall and between systems, and whether the judge alone
// would change their conclusion. Its JSON is what `attune estimate`, the
// API and the report publish.
type Estimates struct {
	RubricItem string `json:"rubric_item,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	Human      string `json:"human"`
	SystemKey  string `json:"system_key"`
	ppi.SystemEstimates
	Conclusion ppi.Conclusion `json:"conclusion"`
}

// Estimate checks q, reads the judge's and the human values and
// estimates the mean per system, overall and between systems, with the
// conclusion check (ppi.Conclude) beside them; on a rubric with a safety
// gate the check is made on the gate's failure rate as well.
func Estimate(ctx context.Context, src Source, q Query) (Estimates, error) {
	if err := Check(q); err != nil {
		return Estimates{}, err
	}
	p, err := src.FindProjectByID(ctx, q.ProjectID)
	if err != nil {
		return Estimates{}, err
	}
	def, err := src.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return Estimates{}, err
	}
	return estimate(ctx, src, p, def, q, nil)
}

// estimate is Estimate once the project and its rubric are read; safety,
// when not nil, is the safety gate's conclusion already worked out for
// the same judge, human and system key.
func estimate(ctx context.Context, src Source, p *attune.Project, def *rubric.Definition, q Query, safety *ppi.Conclusion) (Estimates, error) {
	if q.SystemKey == "" {
		q.SystemKey = p.SystemKeyOr("")
	}
	if q.Human == "" {
		q.Human = HumanPeople
	}
	if err := checkRubric(def, q); err != nil {
		return Estimates{}, err
	}
	var col *store.EstimateColumn
	var err error
	if q.RubricItem != "" && hasGate(def) && safety == nil {
		col, safety, err = readWithGate(ctx, src, def, q)
	} else {
		col, err = readColumn(ctx, src, def, q)
	}
	if err != nil {
		return Estimates{}, err
	}
	draws, err := src.ListDraws(ctx, q.ProjectID)
	if err != nil {
		return Estimates{}, err
	}
	return estimateColumn(ctx, src, def, q, col, draws, safety)
}

// readWithGate reads q's rubric item and scores the safety gate of the
// same answer sets in one pass over them, as EstimateEvery does for every
// rubric item: the values, and the gate's conclusion for the same judge,
// human and system key.
func readWithGate(ctx context.Context, src Source, def *rubric.Definition, q Query) (*store.EstimateColumn, *ppi.Conclusion, error) {
	read := store.EstimateRead{ProjectID: q.ProjectID, Judge: q.Judge, SystemKey: q.SystemKey, Gold: q.Human == HumanGold}
	gate, scoreGate := outcomeScorer(def, read.Gold, OutcomeSafety)
	byKey, err := src.ReadEstimates(ctx, read, []string{q.RubricItem}, scoreGate)
	if err != nil {
		return nil, nil, err
	}
	c, err := conclude(gate)
	if err != nil {
		return nil, nil, err
	}
	return byKey[q.RubricItem], &c, nil
}

// estimateColumn is estimate once q's values and the project's draws are
// read.
func estimateColumn(ctx context.Context, src Source, def *rubric.Definition, q Query, col *store.EstimateColumn, draws []store.Draw,
	safety *ppi.Conclusion) (Estimates, error) {
	est, err := col.BySystem(ppi.Options{})
	if err != nil {
		return Estimates{}, err
	}
	est.Sample = sampleOf(draws, col.Labelled)
	out := Estimates{RubricItem: q.RubricItem, Outcome: q.Outcome, Human: q.Human, SystemKey: q.SystemKey, SystemEstimates: est, Conclusion: ppi.Conclude(est)}
	if hasGate(def) && q.Outcome != OutcomeSafety {
		if safety == nil {
			c, err := safetyConclusion(ctx, src, def, q)
			if err != nil {
				return Estimates{}, err
			}
			safety = &c
		}
		out.Conclusion.SafetyGate = safety
	}
	return out, nil
}

// safetyConclusion is the conclusion check on the safety gate's failure
// rate for q's judge, human and system key.
func safetyConclusion(ctx context.Context, src Source, def *rubric.Definition, q Query) (ppi.Conclusion, error) {
	sq := q
	sq.RubricItem, sq.Outcome = "", OutcomeSafety
	col, err := readColumn(ctx, src, def, sq)
	if err != nil {
		return ppi.Conclusion{}, err
	}
	return conclude(col)
}

// conclude is the conclusion check on a column of values.
func conclude(col *store.EstimateColumn) (ppi.Conclusion, error) {
	est, err := col.BySystem(ppi.Options{})
	if err != nil {
		return ppi.Conclusion{}, err
	}
	return ppi.Conclude(est), nil
}

func hasGate(def *rubric.Definition) bool {
	return def.Kind == rubric.Criteria && len(def.Scoring.Gate) > 0
}

// checkRubric refuses a rubric item the rubric does not have and an
// outcome its kind has not: pass is a criteria rubric's, and the safety
// gate needs gate items.
func checkRubric(def *rubric.Definition, q Query) error {
	switch {
	case q.RubricItem != "":
		if _, ok := def.Item(q.RubricItem); !ok {
			keys := make([]string, len(def.Items))
			for i, it := range def.Items {
				keys[i] = it.Key
			}
			return attune.Invalid(FieldRubricItem, fmt.Sprintf("%s has no rubric item %q; its items are %s", def.Ref(), q.RubricItem, strings.Join(keys, ", ")))
		}
	case q.Outcome == OutcomePass && def.Kind != rubric.Criteria:
		return attune.Invalid(FieldOutcome, fmt.Sprintf("%s scores %s, with no pass or fail: ask for final", def.Ref(), def.Kind))
	case q.Outcome == OutcomeSafety && !hasGate(def):
		return attune.Invalid(FieldOutcome, fmt.Sprintf("%s has no safety gate: ask for final or a rubric item", def.Ref()))
	}
	return nil
}

// readColumn reads q's values over the items: a rubric item's straight
// from the store, an outcome's by scoring every answer set
// (outcomeColumn).
func readColumn(ctx context.Context, src Source, def *rubric.Definition, q Query) (*store.EstimateColumn, error) {
	read := store.EstimateRead{ProjectID: q.ProjectID, Judge: q.Judge, SystemKey: q.SystemKey, Gold: q.Human == HumanGold}
	if q.Outcome == "" {
		byKey, err := src.ReadEstimates(ctx, read, []string{q.RubricItem}, nil)
		if err != nil {
			return nil, err
		}
		return byKey[q.RubricItem], nil
	}
	return outcomeColumn(ctx, src, def, read, q.Outcome)
}

// EstimateEvery estimates, for one judge against the people, every rubric
// item of the project's rubric in the rubric's order, as the report
// carries them. The values of every rubric item and the answer sets the
// safety gate's conclusion scores are read in one pass, and the draws
// once for all.
func EstimateEvery(ctx context.Context, src Source, p *attune.Project, def *rubric.Definition, judge string) ([]Estimates, error) {
	q := Query{ProjectID: p.ID, Judge: judge}
	if err := Check(Query{Judge: judge, Outcome: OutcomeFinal}); err != nil {
		return nil, err
	}
	q.SystemKey, q.Human = p.SystemKeyOr(""), HumanPeople
	keys := make([]string, len(def.Items))
	for i, it := range def.Items {
		keys[i] = it.Key
	}
	read := store.EstimateRead{ProjectID: q.ProjectID, Judge: q.Judge, SystemKey: q.SystemKey, Gold: q.Human == HumanGold}
	var gate *store.EstimateColumn
	var scoreGate func(*store.EstimateSets) error
	if hasGate(def) {
		gate, scoreGate = outcomeScorer(def, read.Gold, OutcomeSafety)
	}
	byKey, err := src.ReadEstimates(ctx, read, keys, scoreGate)
	if err != nil {
		return nil, err
	}
	var safety *ppi.Conclusion
	if gate != nil {
		c, err := conclude(gate)
		if err != nil {
			return nil, err
		}
		safety = &c
	}
	draws, err := src.ListDraws(ctx, q.ProjectID)
	if err != nil {
		return nil, err
	}
	out := make([]Estimates, 0, len(def.Items))
	for _, k := range keys {
		q.RubricItem = k
		e, err := estimateColumn(ctx, src, def, q, byKey[k], draws, safety)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
