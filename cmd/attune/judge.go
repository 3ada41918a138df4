package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

func judgeFlagsHelp(fs *flag.FlagSet) {
	fs.String("name", "", "judge name (add)")
	fs.String("provider", "openai", "openai (any OpenAI-compatible endpoint) or anthropic (add)")
	fs.String("base-url", "", "the endpoint, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (add)")
	fs.String("model", "", "model name (add)")
	fs.String("api-key-env", "", "name of the environment variable that holds the API key; the key is never stored (add)")
	// Numbers are read as text, by the same parser as the web form, so
	// that both refuse the same values with the same messages.
	fs.String("concurrency", "", fmt.Sprintf("calls at once per worker process, 1 to %d (default %d); backs off on 429 (add)", attune.MaxConcurrency, attune.DefaultConcurrency))
	fs.String("rpm", "", "requests per minute across all workers; empty for no limit (add)")
	fs.String("tpm", "", "tokens per minute across all workers; empty for no limit (add)")
	fs.String("samples", "", fmt.Sprintf("answers per prompt, 1 to %d (default %d); with more than one, the majority or median is kept (add)", attune.MaxSamples, attune.DefaultSamples))
	fs.Bool("logprobs", false, "ask for token log-probabilities and keep the probability-weighted score (add)")
	fs.String("temperature", "", "sampling temperature, 0 to 2; the provider's default when empty (add)")
	fs.String("max-tokens", "", fmt.Sprintf("output token limit per call, 1 to %d; the provider's default when empty (add)", attune.MaxMaxTokens))
	fs.String("seed", "", "sampling seed, where the endpoint supports it (add)")
	fs.String("price-input", "", "US dollars per million input tokens (add)")
	fs.String("price-cached", "", "US dollars per million cached input tokens (add)")
	fs.String("price-output", "", "US dollars per million output tokens (add)")
	fs.String("project", "", "project name (run)")
	fs.String("judge", "", "judge name (run)")
	// The run's numbers are read as text by the rules the page and the API
	// share (runs.LimitProblem and the rest), so that all three refuse the
	// same values with the same messages.
	fs.String("limit", "", "judge only the first N items, 1 up (run); every item when left out")
	fs.String("prompt", "", "ask with the judge's prompt version N, 1 up, for the project's rubric (run); the rubric's own when left out")
	fs.String("budget", "", "stop at this many US dollars, above 0 (run; with resume, the new cap); no cap when left out")
	fs.Bool("wait", false, "also work the run in this process until it ends (run)")
	fs.Bool("json", false, "print JSON (list, status)")
	fs.Float64("epsilon", -1, "alt-test ε (experiment); the project's setting when left out")
	fs.Bool("alt-unusual-epsilon", false, "accept an --epsilon outside 0.05 to 0.3 (experiment); it is marked unusual")
	fs.Int("replicates", 1000, "bootstrap replicates of the paired intervals (experiment); 0 for none")
	fs.Uint64("bootstrap-seed", 1, "seed of the bootstrap (experiment)")
}

const judgeUsage = `attune judge add --name J --provider openai|anthropic --base-url URL --model M --api-key-env VAR [--concurrency N] [--rpm N] [--samples N] [--logprobs] …
attune judge list [--json]
attune judge run --project P --judge J [--limit N] [--budget USD] [--prompt N] [--wait]
attune judge status RUN [--json]
attune judge pause|cancel RUN
attune judge resume RUN [--budget USD]
attune judge experiment --project P --judge J[@N],J2[@N]… [--epsilon E [--alt-unusual-epsilon]] [--replicates B] [--bootstrap-seed S]`

func runJudge(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: judge takes add, list, run, status, pause, resume, cancel or experiment:\n%s", errUsage, judgeUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("judge "+verb, flag.ContinueOnError)
	judgeFlagsHelp(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	switch verb {
	case "add", "list", "run", "status", "pause", "resume", "cancel", "experiment":
	default:
		return fmt.Errorf("%w: unknown judge command %q:\n%s", errUsage, verb, judgeUsage)
	}
	var runID int64
	if verb == "status" || verb == "pause" || verb == "resume" || verb == "cancel" {
		if fs.NArg() == 0 {
			return fmt.Errorf("%w: judge %s takes a run id", errUsage, verb)
		}
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %q is not a run id", errUsage, fs.Arg(0))
		}
		runID = id
		if err := parseFlags(fs, e, fs.Args()[1:]); err != nil {
			return err
		}
	}
	db, cfg, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: e.getenv, Policy: cfg.JudgePolicy, Logger: newLogger(cfg, e.stderr)})
	if err != nil {
		return err
	}
	flow := runs.New(db, runner)

	switch verb {
	case "experiment":
		return judgeExperiment(ctx, e, db, get)
	case "add":
		nj, err := judgeFromFlags(get, cfg.JudgePolicy)
		if err != nil {
			return flagErrors(err, judgeFlagOf)
		}
		j, err := db.CreateJudge(ctx, nil, cfg.JudgePolicy, nj)
		if err != nil {
			return flagErrors(err, judgeFlagOf)
		}
		fmt.Fprintf(e.stdout, "added judge %q (%s %s)\n", j.Name, j.Provider, j.Model)
	case "list":
		js, err := db.ListJudges(ctx)
		if err != nil {
			return err
		}
		if get("json") == "true" {
			type row struct {
				Name      string               `json:"name"`
				Provider  string               `json:"provider"`
				BaseURL   string               `json:"base_url"`
				Model     string               `json:"model"`
				APIKeyEnv string               `json:"api_key_env"`
				Settings  attune.JudgeSettings `json:"settings"`
			}
			out := []row{}
			for _, j := range js {
				out = append(out, row{j.Name, j.Provider, j.BaseURL, j.Model, j.APIKeyEnv, j.Settings})
			}
			return writeJSON(e, out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPROVIDER\tMODEL\tBASE URL\tKEY FROM")
		for _, j := range js {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Name, j.Provider, j.Model, j.BaseURL, j.APIKeyEnv)
		}
		return tw.Flush()
	case "run":
		if get("project") == "" || get("judge") == "" {
			return fmt.Errorf("%w: judge run needs --project and --judge", errUsage)
		}
		p, err := db.FindProjectByName(ctx, get("project"))
		if err != nil {
			return err
		}
		j, err := db.FindJudgeByName(ctx, get("judge"))
		if err != nil {
			return err
		}
		in, errs, err := flow.Check(ctx, p, runs.Fields{Judge: strconv.FormatInt(j.ID, 10), Limit: get("limit"), Budget: get("budget"), Prompt: get("prompt")})
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return flagErrors(&attune.ValidationError{Fields: errs}, nil)
		}
		est, err := flow.Estimate(ctx, p, in)
		if err != nil {
			return flagErrors(err, nil)
		}
		run, err := flow.Start(ctx, nil, p, in)
		if err != nil {
			return flagErrors(err, nil)
		}
		fmt.Fprintf(e.stderr, "run %d: judge %q over %d items of %q, %d calls, about %d input and %d output tokens, estimated $%.4f\n",
			run.ID, j.Name, run.ItemsTotal, p.Name, est.Calls, est.InputTokens, est.OutputTokens, est.USD)
		fmt.Fprintln(e.stdout, run.ID)
		if get("wait") != "true" {
			return nil
		}
		return workUntilDone(ctx, e, db, runner, run.ID)
	case "status":
		return printRunStatus(ctx, e, db, runID, get("json") == "true")
	case "pause", "resume", "cancel":
		run, err := db.FindRun(ctx, runID)
		if errors.Is(err, attune.ErrNotFound) {
			return fmt.Errorf("no run %d", runID)
		}
		if err != nil {
			return err
		}
		// The flow's checks refuse what the run's page refuses (pausing a
		// run that has ended, say); the lines printed stay the command's.
		var done string
		switch verb {
		case "pause":
			_, err = flow.Pause(ctx, run, "paused from the command line")
			done = "paused"
		case "cancel":
			_, err = flow.Cancel(ctx, run)
			done = "cancelled"
		case "resume":
			budget, msg := runs.BudgetProblem(get("budget"))
			if msg != "" {
				return flagErrors(attune.Invalid("budget", msg), nil)
			}
			_, err = flow.Resume(ctx, run, budget)
			done = "queued again"
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "run %d %s\n", runID, done)
	}
	return nil
}

// judgeFromFlags reads the judge flags by the rules every path shares
// (attune.ParseJudge), returning the judge or a message per bad field.
func judgeFromFlags(get func(string) string, policy attune.JudgePolicy) (store.NewJudge, error) {
	j, err := attune.ParseJudge(attune.JudgeInput{
		Name: get("name"), Provider: get("provider"), BaseURL: get("base-url"), Model: get("model"), KeyEnv: get("api-key-env"),
		Temperature: get("temperature"), MaxTokens: get("max-tokens"), Samples: get("samples"), Seed: get("seed"),
		Logprobs: get("logprobs") == "true", Concurrency: get("concurrency"), RPM: get("rpm"), TPM: get("tpm"),
		PriceInput: get("price-input"), PriceCached: get("price-cached"), PriceOut: get("price-output"),
	}, policy)
	return store.NewJudge{Name: j.Name, Provider: j.Provider, BaseURL: j.BaseURL, Model: j.Model, APIKeyEnv: j.APIKeyEnv, Settings: j.Settings}, err
}

// judgeFlagOf names the flag of each field of a judge.
var judgeFlagOf = map[string]string{
	"name": "name", "provider": "provider", "base_url": "base-url", "model": "model", "key_env": "api-key-env",
	"temperature": "temperature", "max_tokens": "max-tokens", "samples": "samples", "seed": "seed", "concurrency": "concurrency",
	"rpm": "rpm", "tpm": "tpm", "price_input": "price-input", "price_cached": "price-cached", "price_output": "price-output",
}

// flagErrors writes a validation error's messages under the flags that
// set the fields, one per line, in a stable order; other errors pass.
func flagErrors(err error, flagOf map[string]string) error {
	var v *attune.ValidationError
	if !errors.As(err, &v) {
		return err
	}
	fields := make([]string, 0, len(v.Fields))
	for f := range v.Fields {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	lines := make([]string, len(fields))
	for i, f := range fields {
		name := "--" + f
		if fl, ok := flagOf[f]; ok {
			name = "--" + fl
		}
		lines[i] = name + ": " + v.Fields[f]
	}
	return &flagError{v: v, text: strings.Join(lines, "\n")}
}

// flagError is a validation error written for the command line: the
// same messages as the web form's, under the flags' names.
type flagError struct {
	v    *attune.ValidationError
	text string
}

func (e *flagError) Error() string { return e.text }
func (e *flagError) Unwrap() error { return e.v }

// workUntilDone works the run's jobs in this process (beside any serve
// that may be working them too) and reports progress until it ends.
func workUntilDone(ctx context.Context, e env, db *store.DB, runner *judge.Runner, runID int64) error {
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer runner.Stop(context.WithoutCancel(ctx))
	stopReport := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopReport:
				return
			case <-t.C:
				if run, err := db.FindRun(ctx, runID); err == nil {
					if p, err := db.RunProgress(ctx, run); err == nil {
						fmt.Fprintf(e.stderr, "run %d: %d/%d items, %d errors, %d calls, $%.4f\n", runID, p.ItemsDone, p.ItemsTotal, p.Errors, p.Calls, p.CostUSD)
					}
				}
			}
		}
	}()
	run, err := runner.Wait(ctx, runID)
	close(stopReport)
	if err != nil {
		return err
	}
	if err := printRunStatus(ctx, e, db, runID, false); err != nil {
		return err
	}
	if run.Status == attune.RunPaused {
		return fmt.Errorf("run %d paused: %s", runID, run.Reason)
	}
	return nil
}

// runStatusJSON is `attune judge status --json`.
type runStatusJSON struct {
	ID           int64           `json:"id"`
	Judge        string          `json:"judge"`
	ProjectID    int64           `json:"project_id"`
	Status       string          `json:"status"`
	Reason       string          `json:"reason,omitempty"`
	ItemsTotal   int             `json:"items_total"`
	ItemsDone    int             `json:"items_done"`
	Labels       int             `json:"labels"`
	Errors       int             `json:"errors"`
	Calls        int             `json:"calls"`
	InputTokens  int64           `json:"input_tokens"`
	CachedTokens int64           `json:"cached_tokens"`
	OutputTokens int64           `json:"output_tokens"`
	CostUSD      float64         `json:"cost_usd"`
	EstimateUSD  float64         `json:"estimate_usd"`
	BudgetUSD    *float64        `json:"budget_usd,omitempty"`
	TimeLeftSec  float64         `json:"time_left_seconds,omitempty"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
}

func printRunStatus(ctx context.Context, e env, db *store.DB, runID int64, asJSON bool) error {
	run, err := db.FindRun(ctx, runID)
	if errors.Is(err, attune.ErrNotFound) {
		return fmt.Errorf("no run %d", runID)
	}
	if err != nil {
		return err
	}
	p, err := db.RunProgress(ctx, run)
	if err != nil {
		return err
	}
	out := runStatusJSON{ID: run.ID, Judge: run.JudgeName, ProjectID: run.ProjectID, Status: string(run.Status), Reason: run.Reason,
		ItemsTotal: p.ItemsTotal, ItemsDone: p.ItemsDone, Labels: p.Labels, Errors: p.Errors, Calls: p.Calls,
		InputTokens: p.InputTokens, CachedTokens: p.CachedTokens, OutputTokens: p.OutputTokens, CostUSD: p.CostUSD,
		EstimateUSD: run.EstimateUSD, BudgetUSD: run.BudgetUSD, TimeLeftSec: p.TimeLeft.Seconds()}
	if len(run.Capabilities) > 2 {
		out.Capabilities = run.Capabilities
	}
	if asJSON {
		return writeJSON(e, out)
	}
	w := e.stdout
	fmt.Fprintf(w, "run %d · judge %q · %s", run.ID, run.JudgeName, run.Status)
	if run.Reason != "" {
		fmt.Fprintf(w, " (%s)", run.Reason)
	}
	fmt.Fprintf(w, "\n  %d of %d items, %d labels, %d ERROR\n  %d calls, %d input tokens (%d cached), %d output tokens, $%.4f of an estimated $%.4f\n",
		p.ItemsDone, p.ItemsTotal, p.Labels, p.Errors, p.Calls, p.InputTokens, p.CachedTokens, p.OutputTokens, p.CostUSD, run.EstimateUSD)
	if p.TimeLeft > 0 {
		fmt.Fprintf(w, "  about %s left\n", p.TimeLeft.Round(time.Second))
	}
	return nil
}
