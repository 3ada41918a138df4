package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"golang.org/x/term"

	"github.com/attune/attune/internal/config"
	"github.com/attune/attune/internal/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// errUsage marks a command line that could not be understood; main exits 2.
var errUsage = errors.New("usage error")

// env is what every command gets from run: the outside world, injected so
// that tests can run the whole binary in-process.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
	flags   func(fs *flag.FlagSet) // documents the command's flags for help
}

func commands() []command {
	return []command{
		{name: "serve", args: "[--addr ADDR]", summary: "serve the web application; creates the database if missing and applies pending migrations", run: runServe, flags: serveFlags},
		{name: "migrate", args: "up|down|status", summary: "apply all pending migrations, roll back the newest one, or list them", run: runMigrate},
		{name: "user", args: "add|list|set-role|set-password|disable|enable|unlock [flags]", summary: "manage accounts (see `attune help user`)", run: runUser, flags: userFlagsHelp},
		{name: "rubric", args: "list|show|validate|add", summary: "list rubric versions, print one as an annotator reads it, check or add a rubric file (see `attune help rubric`)", run: runRubric, flags: rubricFlagsHelp},
		{name: "score", args: "--rubric KEY@VERSION [FILE|-]", summary: "score answer sets (JSONL) with the engine attune uses, one JSON result per line", run: runScore, flags: scoreFlags},
		{name: "project", args: "create|list|show|add-member|remove-member", summary: "manage projects (see `attune help project`)", run: runProject, flags: projectFlagsHelp},
		{name: "import", args: "--project NAME [--update] [--format jsonl|csv] FILE", summary: "import dialogues into a project, all or nothing", run: runImport, flags: importFlags},
		{name: "token", args: "create|list|revoke --email E", summary: "manage a user's API tokens (create prints the token once)", run: runToken, flags: tokenFlags},
		{name: "judge", args: "add|list|run|status|pause|resume|cancel", summary: "LLM judges and their runs (see `attune help judge`)", run: runJudge, flags: judgeFlagsHelp},
		{name: "probe", args: "[start|results|thresholds] --project P [--judge J] [--k 3] …", summary: "a judge's robustness probes on the project's calibration items: retest, neutral rewrites and reply length (see `attune help probe`)", run: runProbe, flags: probeFlags},
		{name: "labels", args: "import --project NAME FILE.csv", summary: "bring labels made elsewhere (an earlier round, judges run elsewhere) into a project, all or nothing", run: runLabels, flags: labelsFlags},
		{name: "report", args: "--project NAME [--format json|csv] [--na-missing] …", summary: "print a project's agreement report", run: runReport, flags: reportFlags},
		{name: "estimate", args: "--project P --judge J (--rubric-item K | --outcome final|pass|safety) [--human people|gold] [--system-key KEY] [--format json|text]", summary: "prediction-powered estimates of a rubric item or of the engine's final score, pass rate or safety gate, per system and overall, with the differences between systems", run: runEstimate, flags: estimateFlags},
		{name: "draw", args: "--project P --k N [--system S] [--system-key KEY] [--seed X]", summary: "send N uniformly random judge-only items (of system S) to people's queues; the first draw holds every other untouched item back", run: runDraw, flags: drawFlags},
		{name: "failures", args: "--project P --judge J --rubric-item K [--system-key KEY] [--format json|text]", summary: "where a judge parts from people on a rubric item, by the kind of item", run: runFailures, flags: failuresFlags},
		{name: "trust", args: "--project P --judge J [--rubric-item K | --on | --off | --route] [--target 0.9] [--alpha 0.05] [--format json|text]", summary: "trust or escalate: the confidence above which a judge's agreement with people is guaranteed; --on lets the judge keep those items and sends the rest to people", run: runTrust, flags: trustFlags},
		{name: "agreement", args: "[--level L] [--weights W] [--categories C] FILE.csv", summary: "agreement statistics of a long-form CSV (item,rater,value) as one JSON object; needs no database", run: runAgreement, flags: agreementFlags},
		{name: "gold", args: "auto|status --project P [--all] [--max-spread N]", summary: "apply the consensus rule to a project's labelled items, or count where its gold set stands", run: runGold, flags: goldFlags},
		{name: "calibration", args: "add|list|remove|settings --project P [--item ID] [--explain K=TEXT]…", summary: "a project's calibration set: gold items served to annotators to check them against gold (see `attune help calibration`)", run: runCalibration, flags: calibrationFlags},
		{name: "export", args: "gold|labels|judge-calls|flags --project P [--format csv|jsonl] [--out FILE] [--with-raters]", summary: "stream a project's gold set, raw labels, judge calls or flags as CSV or JSON Lines (columns: README, Exports)", run: runExport, flags: exportFlags},
		{name: "fake-llm", args: "[--addr ADDR] [--latency D] [--rate-429 F] …", summary: "serve a deterministic OpenAI-compatible model for development and demos", run: runFakeLLM, flags: fakeLLMFlags},
		{name: "version", summary: "print the version", run: runVersion},
		{name: "help", args: "[COMMAND]", summary: "show this help, or a command's flags", run: nil},
	}
}

// run is the whole program: main only adds the process's signals, args
// and environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		writeHelp(stderr)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return writeCommandHelp(stdout, args[1])
		}
		writeHelp(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(ctx, e, args[1:])
		}
	}
	writeHelp(stderr)
	return fmt.Errorf("%w: unknown command %q", errUsage, name)
}

func writeHelp(w io.Writer) {
	fmt.Fprint(w, `attune: evaluate empathetic and supportive dialogue with people and LLM judges.

Usage: attune COMMAND [ARGS]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s %s\n      %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprint(w, `
Environment (every setting; none is required on a developer machine):
`)
	for _, v := range config.Vars {
		fmt.Fprintf(w, "  %s (default: %s)\n      %s\n", v.Name, orNone(v.Default), v.Help)
	}
	fmt.Fprint(w, `
Secrets: attune stores no secret of its own. Passwords are kept only as
argon2id hashes; session tokens are random and kept in PostgreSQL. Pass the
database password inside DATABASE_URL and the first admin's password in
ATTUNE_ADMIN_PASSWORD; neither is ever logged.

Run 'attune help COMMAND' for a command's flags.
`)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func writeCommandHelp(w io.Writer, name string) error {
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		fmt.Fprintf(w, "Usage: attune %s %s\n\n%s\n", c.name, c.args, c.summary)
		if c.flags != nil {
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fmt.Fprintln(w, "\nFlags:")
			fs.SetOutput(w)
			fs.PrintDefaults()
		}
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, name)
}

// parseFlags parses args into fs, turning flag errors into usage errors
// whose text says what was wrong.
func parseFlags(fs *flag.FlagSet, e env, args []string) error {
	fs.SetOutput(e.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
	}
	return nil
}

func runVersion(ctx context.Context, e env, args []string) error {
	fmt.Fprintf(e.stdout, "attune %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// newLogger logs to w in the format ATTUNE_LOG_FORMAT asks for; "auto",
// the default, is text for a person reading a terminal and JSON for
// whatever collects the logs (a file, a pipe, a journal).
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" || (cfg.LogFormat == "auto" && isTerminal(w)) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a terminal (not a file, a pipe, a
// socket or /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openFromEnv loads the configuration and opens the database as openDB
// does, for the commands that need both; close the DB when done.
func openFromEnv(ctx context.Context, e env) (*store.DB, config.Config, error) {
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return nil, cfg, err
	}
	db, err := openDB(ctx, cfg, e.stderr)
	return db, cfg, err
}

// openDB creates the database when missing, connects, applies pending
// migrations and loads the built-in rubrics, so that every command works on
// a fresh machine.
func openDB(ctx context.Context, cfg config.Config, log io.Writer) (*store.DB, error) {
	direct := cfg.DirectDatabaseURL
	if direct == "" {
		direct = cfg.DatabaseURL
	}
	if created, err := store.EnsureDatabase(ctx, direct); err != nil {
		return nil, err
	} else if created {
		fmt.Fprintln(log, "created the database")
	}
	var db *store.DB
	var err error
	if cfg.DirectDatabaseURL != "" {
		db, err = store.OpenPooled(ctx, cfg.DatabaseURL, cfg.DirectDatabaseURL)
	} else {
		if err := store.CheckSessions(ctx, cfg.DatabaseURL); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		db, err = store.Open(ctx, cfg.DatabaseURL)
	}
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, log); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.SetReadLimits(store.ReadLimits{SearchTimeout: cfg.SearchTimeout, ReportTimeout: cfg.ReportTimeout,
		ExportTimeout: cfg.ExportTimeout, Slots: cfg.LeadReads})
	return db, nil
}

// lineWriter sends each line written to it to a logger, for libraries that
// report progress through an io.Writer.
type lineWriter struct {
	log *slog.Logger
	msg string
}

func (l lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			l.log.Info(l.msg, "detail", line)
		}
	}
	return len(p), nil
}
