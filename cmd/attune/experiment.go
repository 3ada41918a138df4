package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/experiment"
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
	var names []string
	var raters []int64
	for _, spec := range strings.Split(get("judge"), ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		name, version := spec, 1
		if i := strings.LastIndex(spec, "@"); i > 0 {
			if n, err := strconv.Atoi(spec[i+1:]); err == nil {
				if n < 1 {
					return fmt.Errorf("%w: %q: a prompt version is 1 or more", errUsage, spec)
				}
				name, version = spec[:i], n
			}
		}
		id, err := db.JudgeVariantRater(ctx, p.ID, name, version)
		if err != nil {
			return err
		}
		label := name
		if version > 1 {
			label = fmt.Sprintf("%s@%d", name, version)
		}
		names = append(names, label)
		raters = append(raters, id)
	}
	if len(raters) == 0 {
		return fmt.Errorf("%w: --judge names no variant", errUsage)
	}
	eps := p.Epsilon
	if x, _ := strconv.ParseFloat(get("epsilon"), 64); x >= 0 {
		eps = x
	}
	if !(eps >= 0 && eps <= 1) {
		return fmt.Errorf("%w: --epsilon must be from 0 to 1 (0.2 experts, 0.15 trained, 0.1 a crowd)", errUsage)
	}
	reps, _ := strconv.Atoi(get("replicates"))
	if reps < 0 {
		return fmt.Errorf("%w: --replicates must be 0 or more", errUsage)
	}
	seed, _ := strconv.ParseUint(get("bootstrap-seed"), 10, 64)
	items, humans, usage, err := db.ExperimentItems(ctx, p.ID, raters)
	if err != nil {
		return err
	}
	res, err := experiment.Run(experiment.Input{Def: def, Variants: names, Humans: humans, Items: items, Usage: usage,
		Alt:       agreement.AltOptions{Epsilon: eps},
		Bootstrap: agreement.Bootstrap{Replicates: reps, Level: 0.95, Seed: seed}})
	if err != nil {
		return err
	}
	return writeJSON(e, res)
}
