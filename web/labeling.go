package web

import (
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
)

// The labeling flow (internal/labeling) checks, scores and stores a
// person's labels for the page and the API alike; these are its names as
// the web layer's other pages (gold, judges' answers, items) use them.

// labelProblems is a submission the rubric refuses or that needs its
// warnings confirmed; the page shows it beside the items, the API as
// problems.
type labelProblems = labeling.Problems

// factsOf are the facts of an item every path checks and scores answers
// with (labeling.FactsOf).
func factsOf(item *attune.Item) rubric.Facts { return labeling.FactsOf(item) }

// cleanAnswers trims answers and drops empty ones (labeling.CleanAnswers).
func cleanAnswers(in map[string]string) map[string]string { return labeling.CleanAnswers(in) }
