package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

// judgeExperiment compares judge variants on a project's frozen gold
// items and prints the result as JSON (see package experiment). --judge
// lists the variants, comma-separated: a judge's name for its answers
// with the rubric's own prompt, name@N for its prompt version N.
func judgeExperiment(ctx context.Context, e env, db *store.DB, get func(string) string) error {
	if get("project") == "" || get("judge") == "" {
		return fmt.Errorf("%w: judge experiment needs --project and --judge (comma-separated, name or name@version)", errUsage)
	}
	p, err := db.FindProjectByName(ctx, get("project"))
	if err != nil {
		return err
	}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	var variants []experiment.Variant
	for _, spec := range strings.Split(get("judge"), ",") {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		v, err := experiment.ParseVariant(spec)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		variants = append(variants, v)
	}
	if len(variants) == 0 {
		return fmt.Errorf("%w: --judge names no variant", errUsage)
	}
	// The project's ε is the lead's own setting; another, given here,
	// must be usual unless --alt-unusual-epsilon.
	eps, unusual := p.Epsilon, true
	if x, _ := strconv.ParseFloat(get("epsilon"), 64); x >= 0 {
		eps, unusual = x, get("alt-unusual-epsilon") == "true"
	}
	if err := checkEpsilonFlag(eps, unusual); err != nil {
		return err
	}
	reps, _ := strconv.Atoi(get("replicates"))
	if reps < 0 {
		return fmt.Errorf("%w: --replicates must be 0 or more", errUsage)
	}
	seed, _ := strconv.ParseUint(get("bootstrap-seed"), 10, 64)
	in, raters, err := db.ExperimentInput(ctx, p.ID, variants)
	if err != nil {
		return err
	}
	in.Def = def
	in.Bootstrap = agreement.Bootstrap{Replicates: reps, Level: 0.95, Seed: seed}
	res, err := experiment.Run(in)
	if err != nil {
		return err
	}
	// The alt-test is the agreement report's, as on the experiment page.
	if res, err = report.ExperimentAltTests(ctx, db, p, res, raters.Variants, eps); err != nil {
		return err
	}
	return writeJSON(e, res)
}
