package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"

	"github.com/attune/attune/internal/evaluation"
)

func trustFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("judge", "", "the judge: a rater id or a judge's name (required)")
	fs.String("rubric-item", "", "calibrate on this rubric item only, by key, and show what it would keep")
	fs.String("target", "", "the agreement wanted on the items the judge keeps, as a share or a percentage (default 0.9, or the stored one)")
	fs.String("alpha", "", "the risk allowed that the guarantee is wrong, as a share or a percentage (default 0.05, or the stored one)")
	fs.Bool("on", false, "turn trust routing on for the judge and route now: items below a threshold go to people, the rest keep the judge's answers")
	fs.Bool("off", false, "turn trust routing off: items the judge kept go back to people's queue")
	fs.Bool("route", false, "calibrate again on the human labels there are now and route again (routing must be on)")
	fs.String("format", "text", "text or json")
}

// runTrust is `attune trust`: trust or escalate. With --rubric-item it is
// the calibration on one rubric item, as the failures page shows it;
// otherwise the judge's trust routing on every rubric item, as the trust
// page shows it, turned on or off with --on and --off or routed again
// with --route, audited with no account as actor.
func runTrust(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	trustFlags(fs)
	get, err := readCommand(fs, e, args)
	if err != nil {
		return err
	}
	if get("project") == "" {
		return fmt.Errorf("%w: --project is required: attune trust --project P --judge J [--rubric-item K | --on | --off | --route]", errUsage)
	}
	format, err := formatOf(get, "text", "json")
	if err != nil {
		return err
	}
	on, off, route := get("on") == "true", get("off") == "true", get("route") == "true"
	acts := 0
	for _, b := range []bool{on, off, route, get("rubric-item") != ""} {
		if b {
			acts++
		}
	}
	if acts > 1 {
		return fmt.Errorf("%w: give one of --rubric-item, --on, --off and --route", errUsage)
	}
	target, alpha, err := evaluation.ParseTrustTerms(get("target"), get("alpha"))
	if err != nil {
		return flagErrors(err, estimateFlagOf)
	}
	if get("rubric-item") != "" {
		return runTrustItem(ctx, e, get, format, target, alpha)
	}
	if get("judge") == "" {
		return fmt.Errorf("%w: --judge is required: attune trust --project P --judge J [--on | --off | --route]", errUsage)
	}
	// Terms left out keep the stored ones: only those given are passed on.
	if get("target") == "" {
		target = 0
	}
	if get("alpha") == "" {
		alpha = 0
	}
	db, p, err := openProject(ctx, e, get("project"))
	if err != nil {
		return err
	}
	defer db.Close()
	var res evaluation.TrustRouting
	switch {
	case on || off:
		res, err = evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, Judge: get("judge"), Target: target, Alpha: alpha, On: on})
	case route:
		res, err = evaluation.RouteTrust(ctx, db, p.ID, get("judge"), nil)
	default:
		if target != 0 || alpha != 0 {
			return fmt.Errorf("%w: --target and --alpha are stored with --on (or --off)", errUsage)
		}
		res, err = evaluation.TrustStatus(ctx, db, p.ID, get("judge"))
	}
	if err != nil {
		return flagErrors(err, estimateFlagOf)
	}
	w := bufio.NewWriter(e.stdout)
	if format == "json" {
		return writeIndentedJSON(w, res)
	}
	writeTrustRouting(w, res)
	return w.Flush()
}

// writeTrustRouting writes the setting, a line per rubric item and what
// routing left.
func writeTrustRouting(w *bufio.Writer, res evaluation.TrustRouting) {
	s := res.Setting
	state := "off"
	if s.On {
		state = "on"
	}
	fmt.Fprintf(w, "trust routing for judge %s: %s, target %.3g, alpha %.3g\n", s.Judge, state, s.Target, s.Alpha)
	for _, c := range res.Criteria {
		if !c.Found {
			fmt.Fprintf(w, "  %-20s no threshold guaranteed: %s\n", c.RubricItem, c.Reason)
			continue
		}
		fmt.Fprintf(w, "  %-20s confidence >= %.3g keeps %.0f%% of %d labelled items (agreeing on %.0f%%); of %d items only the judge labelled, %d\n",
			c.RubricItem, c.Threshold, 100*c.Coverage, c.Calibration, 100*c.Agreement, c.JudgeOnly, c.JudgeOnlyKept)
	}
	if !res.Guaranteed {
		fmt.Fprintf(w, "%s\n", res.Reason)
	}
	if r := res.Routed; r != nil {
		fmt.Fprintf(w, "routed now: %d kept by the judge, %d escalated to people, %d passed over (in people's hands, drawn, out of the pool or adjudicated)\n", r.Kept, r.Escalated, r.Skipped)
	}
	fmt.Fprintf(w, "items kept by the judge: %d; escalated to people: %d\n", res.Kept, res.Escalated)
}

// runTrustItem is trust or escalate on one rubric item.
func runTrustItem(ctx context.Context, e env, get func(string) string, format string, target, alpha float64) error {
	db, p, err := openProject(ctx, e, get("project"))
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := evaluation.Trust(ctx, db, evaluation.TrustQuery{ProjectID: p.ID, Judge: get("judge"), RubricItem: get("rubric-item"), Target: target, Alpha: alpha})
	if err != nil {
		return flagErrors(err, estimateFlagOf)
	}
	w := bufio.NewWriter(e.stdout)
	if format == "json" {
		return writeIndentedJSON(w, res)
	}
	fmt.Fprintf(w, "calibrated on %d labelled items (left out: %d without certainty, %d where people tied)\n", res.Calibration, res.NoConfidence, res.PeopleTied)
	if !res.Found {
		fmt.Fprintf(w, "no threshold guaranteed: %s; every item stays with people\n", res.Reason)
	} else {
		fmt.Fprintf(w, "confidence >= %.3g: the judge keeps %.0f%% of labelled items, agreeing on %.0f%%; guaranteed %.0f%% with %.0f%% certainty\n",
			res.Threshold, 100*res.Coverage, 100*res.Agreement, 100*res.Target, 100*(1-res.Alpha))
		fmt.Fprintf(w, "of %d items only the judge labelled it keeps %d, sending %d to people\n", res.JudgeOnly, res.JudgeOnlyKept, res.JudgeOnly-res.JudgeOnlyKept)
	}
	return w.Flush()
}
