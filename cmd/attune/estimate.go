package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/ppi"
)

// estimateFlagOf names the flag of each field of an evaluation query.
var estimateFlagOf = map[string]string{
	evaluation.FieldJudge: "judge", evaluation.FieldRubricItem: "rubric-item",
	evaluation.FieldOutcome: "outcome", evaluation.FieldHuman: "human", evaluation.FieldSystemKey: "system-key",
	evaluation.FieldTarget: "target", evaluation.FieldAlpha: "alpha",
}

func estimateFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("judge", "", "the judge: a rater id or a judge's name (required)")
	fs.String("rubric-item", "", "the rubric item to estimate, by key (this or --outcome)")
	fs.String("outcome", "", "final, pass or safety: the scoring engine's final score, pass rate or safety-gate failure rate instead of a rubric item")
	fs.String("human", evaluation.HumanPeople, "the human value of an item: people (the mean of the people's answers) or gold (its gold answer)")
	systemKeyFlag(fs)
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
	if get("project") == "" {
		return fmt.Errorf("%w: --project is required: attune estimate --project P --judge J (--rubric-item K | --outcome final|pass|safety) [--human people|gold] [--system-key KEY] [--format json|text]", errUsage)
	}
	if err := checkSystemKeyFlag(fs); err != nil {
		return err
	}
	format := get("format")
	if format != "json" && format != "text" {
		return fmt.Errorf("%w: --format must be json or text", errUsage)
	}
	q := evaluation.Query{Judge: get("judge"), RubricItem: get("rubric-item"), Outcome: get("outcome"), Human: get("human"), SystemKey: get("system-key")}
	if err := evaluation.Check(q); err != nil {
		return flagErrors(err, estimateFlagOf)
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
	q.ProjectID = p.ID
	est, err := evaluation.Estimate(ctx, db, q)
	if err != nil {
		return flagErrors(err, estimateFlagOf)
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
// the caveat first and the conclusion check last.
func writeEstimatesText(w *bufio.Writer, res evaluation.Estimates) {
	est := res.SystemEstimates
	of := "rubric item " + res.RubricItem
	if res.Outcome != "" {
		of = "outcome " + res.Outcome
	}
	fmt.Fprintf(w, "%s against %s, systems by meta key %q\n", of, res.Human, res.SystemKey)
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
	fmt.Fprintf(w, "conclusion: %s\n", res.Conclusion.Summary)
	if g := res.Conclusion.SafetyGate; g != nil {
		fmt.Fprintf(w, "safety gate: %s\n", g.Summary)
	}
}
