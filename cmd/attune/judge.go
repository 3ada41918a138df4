package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"net/url"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

func judgeFlagsHelp(fs *flag.FlagSet) {
	fs.String("name", "", "judge name (add)")
	fs.String("provider", "openai", "openai (any OpenAI-compatible endpoint) or anthropic (add)")
	fs.String("base-url", "", "the endpoint, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (add)")
	fs.String("model", "", "model name (add)")
	fs.String("api-key-env", "", "name of the environment variable that holds the API key; the key is never stored (add)")
	fs.Int("concurrency", 8, "calls at once per worker process; backs off on 429 (add)")
	fs.Int("rpm", 0, "requests per minute across all workers, 0 for no limit (add)")
	fs.Int("tpm", 0, "tokens per minute across all workers, 0 for no limit (add)")
	fs.Int("samples", 1, "answers per prompt; with more than one, the majority or median is kept (add)")
	fs.Bool("logprobs", false, "ask for token log-probabilities and keep the probability-weighted score (add)")
	fs.String("temperature", "", "sampling temperature; the provider's default when empty (add)")
	fs.Int("max-tokens", 0, "output token limit per call, 0 for the provider's default (add)")
	fs.String("seed", "", "sampling seed, where the endpoint supports it (add)")
	fs.Float64("price-input", 0, "US dollars per million input tokens (add)")
	fs.Float64("price-cached", 0, "US dollars per million cached input tokens (add)")
	fs.Float64("price-output", 0, "US dollars per million output tokens (add)")
	fs.String("project", "", "project name (run)")
	fs.String("judge", "", "judge name (run)")
	fs.Int("limit", 0, "judge only the first N items (run)")
	fs.Float64("budget", 0, "stop at this many US dollars (run; with resume, the new cap)")
	fs.Bool("wait", false, "also work the run in this process until it ends (run)")
	fs.Bool("json", false, "print JSON (list, status)")
}

const judgeUsage = `attune judge add --name J --provider openai|anthropic --base-url URL --model M --api-key-env VAR [--concurrency N] [--rpm N] [--samples N] [--logprobs] …
attune judge list [--json]
attune judge run --project P --judge J [--limit N] [--budget USD] [--wait]
attune judge status RUN [--json]
attune judge pause|cancel RUN
attune judge resume RUN [--budget USD]`

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func runJudge(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: judge takes add, list, run, status, pause, resume or cancel:\n%s", errUsage, judgeUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("judge "+verb, flag.ContinueOnError)
	judgeFlagsHelp(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	switch verb {
	case "add", "list", "run", "status", "pause", "resume", "cancel":
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
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: e.getenv, Logger: newLogger(cfg, e.stderr)})
	if err != nil {
		return err
	}

	switch verb {
	case "add":
		nj, err := judgeFromFlags(get)
		if err != nil {
			return err
		}
		j, err := db.CreateJudge(ctx, nil, nj)
		if err != nil {
			return err
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
		limit, _ := strconv.Atoi(get("limit"))
		est, err := runner.EstimateRun(ctx, j, p, limit)
		if err != nil {
			return err
		}
		nr := store.NewRun{JudgeID: j.ID, ProjectID: p.ID, EstimateUSD: est.USD}
		if limit > 0 {
			nr.ItemLimit = &limit
		}
		if b, _ := strconv.ParseFloat(get("budget"), 64); b > 0 {
			nr.BudgetUSD = &b
		}
		run, err := db.CreateRun(ctx, nil, nr)
		if err != nil {
			return err
		}
		if err := runner.Queue(ctx, run.ID); err != nil {
			return err
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
	case "pause":
		if err := runner.Pause(ctx, runID, "paused from the command line"); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "run %d paused\n", runID)
	case "resume":
		if b, _ := strconv.ParseFloat(get("budget"), 64); b > 0 {
			if err := runner.RaiseBudget(ctx, runID, &b); err != nil {
				return err
			}
		}
		if err := runner.Resume(ctx, runID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "run %d queued again\n", runID)
	case "cancel":
		if err := runner.Cancel(ctx, runID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "run %d cancelled\n", runID)
	}
	return nil
}

// judgeFromFlags checks the judge flags and names the wrong one.
func judgeFromFlags(get func(string) string) (store.NewJudge, error) {
	nj := store.NewJudge{Name: strings.TrimSpace(get("name")), Provider: get("provider"), BaseURL: strings.TrimRight(get("base-url"), "/"),
		Model: get("model"), APIKeyEnv: get("api-key-env")}
	if nj.Name == "" || nj.Model == "" {
		return nj, fmt.Errorf("%w: judge add needs --name and --model", errUsage)
	}
	if nj.Provider != "openai" && nj.Provider != "anthropic" {
		return nj, fmt.Errorf("--provider must be openai or anthropic, not %q", nj.Provider)
	}
	if nj.BaseURL != "" {
		if u, err := url.Parse(nj.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nj, fmt.Errorf("--base-url must be an http or https URL, not %q", nj.BaseURL)
		}
	}
	if nj.APIKeyEnv != "" && !envName.MatchString(nj.APIKeyEnv) {
		// Never echo the value: it may be the key itself, pasted by mistake.
		return nj, fmt.Errorf("--api-key-env must be the name of an environment variable (letters, digits and _): give the variable's name, never the key")
	}
	s := &nj.Settings
	s.Concurrency, _ = strconv.Atoi(get("concurrency"))
	s.RPM, _ = strconv.Atoi(get("rpm"))
	s.TPM, _ = strconv.Atoi(get("tpm"))
	s.Samples, _ = strconv.Atoi(get("samples"))
	s.MaxTokens, _ = strconv.Atoi(get("max-tokens"))
	s.Logprobs = get("logprobs") == "true"
	if s.Concurrency < 1 || s.Concurrency > 1024 {
		return nj, fmt.Errorf("--concurrency must be from 1 to 1024")
	}
	if s.RPM < 0 || s.TPM < 0 || s.MaxTokens < 0 || s.Samples < 1 || s.Samples > 25 {
		return nj, fmt.Errorf("--rpm, --tpm and --max-tokens must not be negative, and --samples must be from 1 to 25")
	}
	if t := get("temperature"); t != "" {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v < 0 || v > 2 {
			return nj, fmt.Errorf("--temperature must be a number from 0 to 2")
		}
		s.Temperature = &v
	}
	if sd := get("seed"); sd != "" {
		v, err := strconv.ParseInt(sd, 10, 64)
		if err != nil {
			return nj, fmt.Errorf("--seed must be a whole number")
		}
		s.Seed = &v
	}
	for _, f := range []string{"price-input", "price-cached", "price-output"} {
		if v, _ := strconv.ParseFloat(get(f), 64); v < 0 {
			return nj, fmt.Errorf("--%s must not be negative", f)
		}
	}
	s.Prices.InputPerMTok, _ = strconv.ParseFloat(get("price-input"), 64)
	s.Prices.CachedInputPerMTok, _ = strconv.ParseFloat(get("price-cached"), 64)
	s.Prices.OutputPerMTok, _ = strconv.ParseFloat(get("price-output"), 64)
	return nj, nil
}

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
