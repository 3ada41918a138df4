package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

func probeFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name")
	fs.String("judge", "", "judge name (start, results)")
	fs.String("k", "", fmt.Sprintf("asks of each calibration item as it is, %d to %d (start; default %d)", probe.MinRetestK, runs.MaxProbeK, probe.MinRetestK))
	fs.String("prompt", "", "probe the judge's prompt version N for the project's rubric (start, results); the rubric's own when left out")
	fs.String("budget", "", "stop at this many US dollars, above 0 (start); no cap when left out")
	fs.Bool("wait", false, "also work the probe in this process until it ends, then print its results (start)")
	fs.Bool("json", false, "print JSON (results, thresholds)")
	fs.String("retest", "", fmt.Sprintf("the largest share of items whose answer may change across the asks (thresholds; default %v)", probe.DefaultRetestChange))
	fs.String("perturb", "", fmt.Sprintf("the largest share of items whose answer may move under one rewrite (thresholds; default %v)", probe.DefaultPerturbMove))
	fs.String("min-items", "", fmt.Sprintf("the fewest items a probe judges on (thresholds; default %d)", probe.DefaultMinItems))
	fs.String("length", "", fmt.Sprintf("the largest difference of slopes per doubling of reply length (thresholds; default %v)", probe.DefaultLengthSlope))
}

const probeUsage = `attune probe [start] --project P --judge J [--k 3] [--prompt N] [--budget USD] [--wait]
attune probe results --project P --judge J [--prompt N] [--json]
attune probe thresholds --project P [--retest S] [--perturb S] [--min-items N] [--length D] [--json]`

// runProbe is `attune probe`: a judge's robustness probes on a project's
// calibration items (docs/judges.md, "Robustness probes").
func runProbe(ctx context.Context, e env, args []string) error {
	verb := "start"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	switch verb {
	case "start", "results", "thresholds":
	default:
		return fmt.Errorf("%w: unknown probe command %q:\n%s", errUsage, verb, probeUsage)
	}
	fs := flag.NewFlagSet("probe "+verb, flag.ContinueOnError)
	probeFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if get("project") == "" || verb != "thresholds" && get("judge") == "" {
		return fmt.Errorf("%w: probe %s needs --project%s:\n%s", errUsage, verb, map[bool]string{true: "", false: " and --judge"}[verb == "thresholds"], probeUsage)
	}
	db, cfg, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, get("project"))
	if err != nil {
		return err
	}
	if verb == "thresholds" {
		return probeThresholds(ctx, e, db, p, get, set)
	}
	j, err := db.FindJudgeByName(ctx, get("judge"))
	if err != nil {
		return err
	}
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: e.getenv, Policy: cfg.JudgePolicy, Logger: newLogger(cfg, e.stderr)})
	if err != nil {
		return err
	}
	flow := runs.New(db, runner)
	if verb == "results" {
		version, msg := runs.PromptProblem(get("prompt"))
		if msg != "" {
			return flagErrors(attune.Invalid("prompt", msg), nil)
		}
		list, err := db.ListProbes(ctx, p.ID, j.ID)
		if err != nil {
			return err
		}
		for _, run := range list {
			if max(run.PromptVersion, 1) == max(version, 1) {
				return printProbe(ctx, e, db, p, run, get("json") == "true")
			}
		}
		return fmt.Errorf("judge %q has no probe with prompt version %d on %q", j.Name, max(version, 1), p.Name)
	}
	in, errs, err := flow.CheckProbe(ctx, p, runs.ProbeFields{Judge: strconv.FormatInt(j.ID, 10), K: get("k"), Prompt: get("prompt"), Budget: get("budget")})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return flagErrors(&attune.ValidationError{Fields: errs}, nil)
	}
	run, err := flow.StartProbe(ctx, nil, p, in)
	if err != nil {
		return flagErrors(err, nil)
	}
	fmt.Fprintf(e.stderr, "probe %d: judge %q, prompt version %d, over %d calibration items of %q, each asked %d times and once per rewrite\n",
		run.ID, j.Name, max(run.PromptVersion, 1), run.ItemsTotal, p.Name, run.ProbeK)
	fmt.Fprintln(e.stdout, run.ID)
	if get("wait") != "true" {
		return nil
	}
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer runner.Stop(context.WithoutCancel(ctx))
	done, err := runner.Wait(ctx, run.ID)
	if err != nil {
		return err
	}
	return printProbe(ctx, e, db, p, done, get("json") == "true")
}

// printProbe prints a probe's results, as text or JSON.
func printProbe(ctx context.Context, e env, db *store.DB, p *attune.Project, run *attune.JudgeRun, asJSON bool) error {
	res, err := probes.Read(ctx, db, p, run)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e, res)
	}
	w := e.stdout
	fmt.Fprintf(w, "probe %d of %s, prompt version %d: %s%s, %d items, k %d\n", run.ID, run.JudgeName, max(run.PromptVersion, 1), run.Status,
		map[bool]string{true: " (" + run.Reason + ")", false: ""}[run.Reason != ""], res.Items, run.ProbeK)
	for _, r := range res.Summary.Retest {
		kappa := "undefined"
		if r.Kappa != nil {
			kappa = strconv.FormatFloat(*r.Kappa, 'f', 2, 64)
		}
		fmt.Fprintf(w, "retest %s: %d of %d items changed (%.2f, at most %.2f), test-retest kappa %s: %s\n", r.Criterion, r.Changed, r.Items, r.ChangeShare, r.Threshold, kappa, r.Verdict)
	}
	for _, r := range res.Summary.Perturbation {
		fmt.Fprintf(w, "%s %s (%s): %d of %d items moved (%.2f, at most %.2f): %s\n", r.Rewrite, r.Criterion, r.Rewrite.Describe(), r.Moved, r.Items, r.MoveShare, r.Threshold, r.Verdict)
	}
	for _, r := range res.Summary.Length {
		fmt.Fprintf(w, "length %s: %s: %s\n", r.Criterion, lengthLine(r), r.Verdict)
	}
	if res.Unstable {
		fmt.Fprintf(w, "unstable: %s\n", strings.Join(res.Failed, ", "))
	} else {
		fmt.Fprintln(w, "no probe failed its threshold")
	}
	return nil
}

// lengthLine says the length probe's slopes in words.
func lengthLine(r probe.LengthResult) string {
	l := r.Length
	if !l.Defined {
		return l.Reason
	}
	return fmt.Sprintf("judge %+.2f, people %+.2f per %s; difference %+.2f (95%% %+.2f to %+.2f, at most ±%.2f)",
		*l.Judge, *l.People, l.Unit, *l.Difference, *l.Low, *l.High, r.Threshold)
}

// probeThresholds prints the project's probe thresholds, first setting
// those given.
func probeThresholds(ctx context.Context, e env, db *store.DB, p *attune.Project, get func(string) string, set map[string]bool) error {
	t, err := db.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return err
	}
	// Read and checked by the project settings' rules, named by this
	// command's flags.
	flagOf := map[string]string{probe.FieldRetestChange: "retest", probe.FieldPerturbMove: "perturb", probe.FieldMinItems: "min-items", probe.FieldLengthSlope: "length"}
	typed := map[string]string{}
	for field, name := range flagOf {
		if set[name] {
			typed[field] = get(name)
		}
	}
	if len(typed) > 0 {
		next, bad := probe.ReadThresholds(t, typed)
		err := next.Validate()
		if len(bad) > 0 {
			err = &attune.ValidationError{Fields: bad}
		}
		if err == nil {
			err = db.SetProbeThresholds(ctx, nil, p.ID, next)
		}
		if err != nil {
			return flagErrors(err, flagOf)
		}
		t = next
	}
	if get("json") == "true" {
		return writeJSON(e, t)
	}
	fmt.Fprintf(e.stdout, "project %q: retest at most %v changed, each rewrite at most %v moved, on at least %d items; length difference at most %v per doubling\n",
		p.Name, t.RetestChange, t.PerturbMove, t.MinItems, t.LengthSlope)
	return nil
}
