// Package evaluation is the one flow of a prediction-powered evaluation
// for every adapter: `attune estimate`, GET /api/v1/projects/{id}/estimates
// and the report read their input into a Query and call Estimate, so each
// refuses the same input with the same words and assembles the same
// figures from the same read (docs/estimates.md).
package evaluation

import (
	"context"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/store"
)

// DefaultSystemKey is the item meta key that names an item's system when
// the query names none.
const DefaultSystemKey = "system"

// Query is one estimate asked for: a judge, and either a rubric item or
// one of the engine's outcomes, split by the system each item names under
// SystemKey.
type Query struct {
	ProjectID  int64
	Judge      string
	RubricItem string
	Outcome    string
	SystemKey  string
}

// Field names of a Query's problems, as the API spells its parameters;
// the command line prints them before the message.
const (
	FieldJudge      = "judge"
	FieldRubricItem = "rubric_item"
	FieldOutcome    = "outcome"
	FieldSystemKey  = "system_key"
)

// Check says what is wrong with q, as an attune.ValidationError naming
// the field, or nil. An empty SystemKey is not a problem: it means
// DefaultSystemKey.
func Check(q Query) error {
	switch {
	case q.Judge == "":
		return attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	case q.Outcome != "" && q.RubricItem != "":
		return attune.Invalid(FieldOutcome, "ask for a rubric item or an outcome, not both")
	case q.Outcome != "":
		// Scoring the engine's outputs needs the report's scoring path
		// wired to this read; until then say so rather than guess.
		return attune.Invalid(FieldOutcome, "estimates of the engine's outputs are not available yet; ask for a rubric item")
	case q.RubricItem == "":
		return attune.Invalid(FieldRubricItem, "name the rubric item to estimate, by key")
	}
	return nil
}

// Source is what the flow needs of the database; *store.DB satisfies it.
type Source interface {
	EstimateRubricItem(ctx context.Context, projectID int64, judge, rubricItem, systemKey string) ([]store.EstimateRow, error)
	DrawLister
}

// Estimate checks q, reads the judge's and the people's values and
// estimates the mean per system, overall and between systems.
func Estimate(ctx context.Context, src Source, q Query) (ppi.SystemEstimates, error) {
	if err := Check(q); err != nil {
		return ppi.SystemEstimates{}, err
	}
	if q.SystemKey == "" {
		q.SystemKey = DefaultSystemKey
	}
	rows, err := src.EstimateRubricItem(ctx, q.ProjectID, q.Judge, q.RubricItem, q.SystemKey)
	if err != nil {
		return ppi.SystemEstimates{}, err
	}
	rated := make([]ppi.Rated, len(rows))
	for i, r := range rows {
		rated[i] = ppi.Rated{System: r.System, Judge: r.Judge, Human: r.Human, Labelled: r.Labelled}
	}
	est, err := ppi.BySystem(rated, ppi.Options{})
	return withSample(ctx, src, q.ProjectID, rows, est, err)
}
