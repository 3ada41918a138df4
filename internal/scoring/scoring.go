// Package scoring scores one rater's answer set against one rubric version.
// People and judges are scored by the same code: Score takes a parsed
// definition, the answers and the facts of the labelled item, and returns
// every item's value, the category scores, the final score, pass, the failed
// checks and the safety gate.
//
// For criteria rubrics Score implements the rubric's Python score() exactly,
// down to the order of floating-point additions and Python's rounding, so
// that the same answers give the same bits on every machine. Everything it
// uses (categories, weights and their order, points, threshold, gate items,
// NA-invalid items) is read from the definition.
package scoring

import (
	"fmt"
	"strconv"

	"github.com/attune/attune/internal/rubric"
)

// Result is the score of one answer set. Its JSON field names are those of
// the criteria rubric's score(): score, pass, category_scores,
// failed_checks, failed_safety, safety_gate_failed; plus values, item_scores,
// dimension_mean and warnings. Lists are never null in JSON.
type Result struct {
	// Rubric is the definition's key@version.
	Rubric string      `json:"rubric"`
	Kind   rubric.Kind `json:"kind"`
	// Values holds every item of the rubric with the value scored: the
	// answer as given, ERROR where it was missing.
	Values map[string]rubric.Value `json:"values"`
	// ItemScores holds the points each criterion earned (criteria only).
	ItemScores map[string]float64 `json:"item_scores,omitempty"`
	// Score is the final score: for criteria the weighted sum rounded as
	// Python's round() does; for likert the overall as given; for single
	// the one value. Nil when the scored item has no valid value.
	Score *float64 `json:"score"`
	// Pass is whether the unrounded final score reaches the threshold with
	// the safety gate passed (criteria only; nil otherwise).
	Pass *bool `json:"pass"`
	// CategoryScores holds each category's unrounded mean (criteria only).
	CategoryScores map[string]float64 `json:"category_scores"`
	// FailedChecks lists, in the rubric's item order, every item answered
	// NO or ERROR (a missing answer included), or NA where NA is invalid.
	FailedChecks []string `json:"failed_checks"`
	// FailedSafety lists the failed safety gate items, in gate order.
	FailedSafety     []string `json:"failed_safety"`
	SafetyGateFailed bool     `json:"safety_gate_failed"`
	// DimensionMean is the mean of the rubric's mean items (likert only;
	// nil when one of them has no valid value). It is a report: the score
	// is the overall as judged.
	DimensionMean *float64 `json:"dimension_mean,omitempty"`
	// Warnings holds the validation messages for the answer set, the
	// rubric's edge rules included, in a stable order.
	Warnings []string `json:"warnings"`
}

// Score scores one rater's answers for one labelled item. A missing answer
// counts as ERROR. It never refuses answers: what validation would block
// (an unknown item, a value out of range) is scored as the rubric says and
// reported in Warnings. An answer the item does not allow, such as NA
// where NA is invalid, ERROR, or an unknown value, scores 0 and is a failed
// check; an item the rubric does not have is ignored. Score returns an
// error only for a definition of unknown kind; def must come from
// rubric.Parse or rubric.Builtins.
func Score(def *rubric.Definition, answers rubric.Answers, facts rubric.Facts) (Result, error) {
	r := Result{
		Rubric:         def.Ref().String(),
		Kind:           def.Kind,
		Values:         make(map[string]rubric.Value, len(def.Items)),
		CategoryScores: map[string]float64{},
		FailedChecks:   []string{},
		FailedSafety:   []string{},
		Warnings:       []string{},
	}
	for _, it := range def.Items {
		v, ok := answers[it.Key]
		if !ok || v == "" {
			v = rubric.Error
		}
		r.Values[it.Key] = v
	}
	for _, is := range def.Validate(answers, facts, rubric.Options{AllowError: true}) {
		r.Warnings = append(r.Warnings, is.Message)
	}
	switch def.Kind {
	case rubric.Criteria:
		criteria(def, &r)
	case rubric.Likert, rubric.Single:
		scored(def, &r)
	default:
		return Result{}, fmt.Errorf("scoring: %s: unknown rubric kind %q", def.Ref(), def.Kind)
	}
	return r, nil
}

// criteria follows the rubric's score() step by step; the comments name the
// Python each step stands for.
func criteria(def *rubric.Definition, r *Result) {
	r.ItemScores = make(map[string]float64, len(def.Items))
	for i := range def.Items {
		it := &def.Items[i]
		p, failed := def.Points(it, r.Values[it.Key])
		r.ItemScores[it.Key] = p
		if failed {
			// failed_checks: NO, ERROR, or NA where NA is invalid.
			r.FailedChecks = append(r.FailedChecks, it.Key)
		}
	}

	// category_score: sum(scores) / len(scores), summing in item order.
	for _, c := range def.Categories {
		sum, n := 0.0, 0
		for _, it := range def.CategoryItems(c.Key) {
			sum += r.ItemScores[it.Key]
			n++
		}
		score := 1.0 // "if scores else 1.0"
		if n > 0 {
			score = sum / float64(n)
		}
		r.CategoryScores[c.Key] = score
	}

	// final_score = sum(category_scores[cat] * w for cat, w in weights.items()):
	// left to right in the order of the weights, from 0.
	final := 0.0
	for _, c := range def.Categories {
		final += r.CategoryScores[c.Key] * c.Weight
	}

	for _, key := range def.Scoring.Gate {
		it, _ := def.Item(key)
		if _, failed := def.Points(it, r.Values[key]); failed {
			r.FailedSafety = append(r.FailedSafety, key)
		}
	}
	r.SafetyGateFailed = len(r.FailedSafety) > 0

	pass := final >= def.Scoring.PassThreshold && !r.SafetyGateFailed
	rounded := Round(final, def.Scoring.Round)
	r.Pass = &pass
	r.Score = &rounded
}

// scored sets the score of a likert or single rubric: the score item's value
// as given, and the dimension mean.
func scored(def *rubric.Definition, r *Result) {
	if x, ok := number(def, r.Values, def.Scoring.ScoreItem); ok {
		r.Score = &x
	}
	if len(def.Scoring.Mean) == 0 {
		return
	}
	sum := 0.0
	for _, key := range def.Scoring.Mean {
		x, ok := number(def, r.Values, key)
		if !ok {
			return
		}
		sum += x
	}
	mean := sum / float64(len(def.Scoring.Mean))
	r.DimensionMean = &mean
}

// number returns the item's value as a number if it is an answer the item
// allows.
func number(def *rubric.Definition, values map[string]rubric.Value, key string) (float64, bool) {
	it, ok := def.Item(key)
	if !ok || !def.Allows(it, values[key]) {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(values[key]), 64)
	return x, err == nil
}

// Round rounds x to the given number of decimals as Python's round(x, n)
// does: correctly rounded from the exact binary value of x, ties to even.
// (math.Round(x*1000)/1000 is not the same: the multiplication rounds
// first, and ties go away from zero.)
func Round(x float64, decimals int) float64 {
	y, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', decimals, 64), 64)
	if err != nil {
		// FormatFloat always writes a number ParseFloat reads; NaN and
		// ±Inf come back as themselves.
		return x
	}
	return y
}
