package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/attune/attune/internal/ppi"
)

func estimateFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("judge", "", "the judge: a rater id or a judge's name (required)")
	fs.String("rubric-item", "", "the rubric item to estimate, by key (required)")
	fs.String("outcome", "", "final, pass or safety: an engine output instead of a rubric item (not yet available)")
	fs.String("system-key", "system", "the item meta key that names an item's system")
	fs.String("format", "json", "json or text")
}

// runEstimate is `attune estimate`: prediction-powered estimates of one
// rubric item's mean per system and overall, from the judge's answers on
// every item and the people's on the items they labelled.
func runEstimate(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("estimate", flag.ContinueOnError)
	estimateFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	const usage = "attune estimate --project P --judge J --rubric-item K [--system-key KEY] [--format json|text]"
	switch {
	case get("project") == "":
		return fmt.Errorf("%w: --project is required: %s", errUsage, usage)
	case get("judge") == "":
		return fmt.Errorf("%w: --judge is required: %s", errUsage, usage)
	case get("outcome") != "" && get("rubric-item") != "":
		return fmt.Errorf("%w: --rubric-item and --outcome are one or the other", errUsage)
	case get("outcome") != "":
		// Scoring the engine's outputs needs the report's scoring path
		// wired to this read; until then say so rather than guess.
		return fmt.Errorf("%w: --outcome is not available yet; estimate a --rubric-item", errUsage)
	case get("rubric-item") == "":
		return fmt.Errorf("%w: --rubric-item is required: %s", errUsage, usage)
	case get("system-key") == "":
		return fmt.Errorf("%w: --system-key must name a meta key", errUsage)
	}
	format := get("format")
	if format != "json" && format != "text" {
		return fmt.Errorf("%w: --format must be json or text", errUsage)
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, get("project"))
	if err != nil {
		return err
	}
	rows, err := db.EstimateRubricItem(ctx, p.ID, get("judge"), get("rubric-item"), get("system-key"))
	if err != nil {
		return err
	}
	rated := make([]ppi.Rated, len(rows))
	for i, r := range rows {
		rated[i] = ppi.Rated{System: r.System, Judge: r.Judge, Human: r.Human, Labelled: r.Labelled}
	}
	est, err := ppi.BySystem(rated, ppi.Options{})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	if format == "text" {
		writeEstimatesText(w, est)
	} else {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(est); err != nil {
			return err
		}
	}
	return w.Flush()
}

// writeEstimatesText writes one line per system, overall and difference,
// the caveat first.
func writeEstimatesText(w *bufio.Writer, est ppi.SystemEstimates) {
	fmt.Fprintf(w, "sample: %s\n", est.Sample)
	line := func(name string, nl, nu int, h, j ppi.Interval, p ppi.Interval, eff float64) {
		fmt.Fprintf(w, "%-20s n=%d N=%d  human %.3f [%.3f, %.3f]  judge %.3f [%.3f, %.3f]  ppi %.3f [%.3f, %.3f]  worth %.1f labels\n",
			name, nl, nu, h.Mean, h.Low, h.High, j.Mean, j.Low, j.High, p.Mean, p.Low, p.High, eff)
	}
	all := est.Systems
	if est.Overall != nil {
		all = append(all[:len(all):len(all)], *est.Overall)
	}
	for _, s := range all {
		line(s.System, s.NLabelled, s.NUnlabelled, s.Human, s.Judge, s.PPI.Interval, s.EffectiveHumanLabels)
	}
	for _, d := range est.Differences {
		line(d.A+" − "+d.B+" (independent)", d.NLabelled, d.NUnlabelled, d.Human, d.Judge, d.PPI.Interval, d.EffectiveHumanLabels)
	}
	for _, s := range est.Skipped {
		fmt.Fprintf(w, "%-20s skipped: %s\n", s.System, s.Reason)
	}
}
