package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/config"
	"github.com/attune/attune/internal/demo"
	"github.com/attune/attune/internal/devdb"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/webhook"
	"github.com/attune/attune/web"
)

func serveFlags(fs *flag.FlagSet) {
	fs.String("addr", "", "address to listen on, overriding ATTUNE_ADDR (host:port; :0 picks a free port)")
	fs.Bool("demo", false, "on an empty database, set up demo accounts and a project per built-in rubric (make run does)")
	fs.String("dev-dir", "", "a developer's directory (make run passes .attune): when DATABASE_URL is not set and nothing answers at its default, run a private PostgreSQL cluster in DIR/pgdata for as long as attune serves; first sign-ins are also written to DIR/sign-ins.txt, readable only by you")
}

// defaultDatabaseURL is where serve looks for PostgreSQL when DATABASE_URL
// is not set (a variable so that tests can point it where nothing answers).
var defaultDatabaseURL = config.DefaultDatabaseURL

// pgSearchDirs are where, besides PATH, PostgreSQL's server programs are
// looked for (a variable so that tests can hide them).
var pgSearchDirs = devdb.UsualDirs

// signInsFile is the name, in the --dev-dir directory, of the file that
// keeps the first start's sign-ins.
const signInsFile = "sign-ins.txt"

// useDatabase decides which PostgreSQL serve uses. A DATABASE_URL that
// was set is used as it is, and one where nothing answers is named in the
// error. Without one, the default is used when it answers; else, with a
// dev directory, a private cluster there (the returned stop function
// stops it); else the error says how to get PostgreSQL.
func useDatabase(ctx context.Context, e env, cfg *config.Config, devDir string, log *slog.Logger) (stop func(), err error) {
	noop := func() {}
	if e.getenv("DATABASE_URL") != "" {
		if !devdb.Answers(ctx, cfg.DatabaseURL) {
			return noop, fmt.Errorf("no PostgreSQL server answers at DATABASE_URL (%s): start it, or correct DATABASE_URL", redactURL(cfg.DatabaseURL))
		}
		return noop, nil
	}
	cfg.DatabaseURL = defaultDatabaseURL
	if devdb.Answers(ctx, cfg.DatabaseURL) {
		return noop, nil
	}
	if devDir == "" {
		return noop, fmt.Errorf("no PostgreSQL server answers at %s (the default; DATABASE_URL is not set): set DATABASE_URL to your server's, or try 'make run', which can run a private one", redactURL(cfg.DatabaseURL))
	}
	dataDir := filepath.Join(devDir, "pgdata")
	progs, err := devdb.Find(e.getenv("PATH"), pgSearchDirs, devdb.ClusterVersion(dataDir))
	if errors.Is(err, devdb.ErrNotInstalled) {
		return noop, fmt.Errorf("no PostgreSQL server answers at %s, and none is installed here.\n\n%s", redactURL(cfg.DatabaseURL), devdb.HowToInstall)
	}
	if err != nil {
		return noop, fmt.Errorf("private database in %s: %w", dataDir, err)
	}
	log.Info("no PostgreSQL answers at the default address: using a private one", "default", redactURL(cfg.DatabaseURL), "programs", progs.Bin)
	c, err := devdb.Start(ctx, devdb.Options{DataDir: dataDir, Programs: progs, Log: log})
	if err != nil {
		return noop, err
	}
	cfg.DatabaseURL = c.URL
	return func() {
		if err := c.Stop(); err != nil {
			log.Error(err.Error())
		}
	}, nil
}

// redactURL hides a password in a connection URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func runServe(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: serve takes no arguments, got %q", errUsage, fs.Args())
	}
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return err
	}
	if addr := fs.Lookup("addr").Value.String(); addr != "" {
		if cfg.BaseURL == "http://"+cfg.Addr {
			cfg.BaseURL = "http://" + addr
		}
		cfg.Addr = addr
	}
	log := newLogger(cfg, e.stderr)
	devDir := fs.Lookup("dev-dir").Value.String()

	stopDB, err := useDatabase(ctx, e, &cfg, devDir, log)
	if err != nil {
		return err
	}
	defer stopDB()
	db, err := openDB(ctx, cfg, lineWriter{log, "startup"})
	if err != nil {
		return err
	}
	defer db.Close()
	// Only the server reads the replica: its pages say how current what
	// they show is; the command line's reports and exports read the
	// primary.
	if cfg.ReplicaURL != "" {
		if err := db.OpenReplica(ctx, cfg.ReplicaURL, cfg.ReplicaMaxLag); err != nil {
			return fmt.Errorf("config: ATTUNE_REPLICA_URL: %w", err)
		}
	}
	// Items that submits gave their overlap of labels are settled (gold,
	// the queue of disagreements, full overlap) after those commit; the
	// settler stops before the database closes.
	settleCtx, stopSettling := context.WithCancel(context.WithoutCancel(ctx))
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		db.NewSettler(log.With("component", "settler")).Run(settleCtx)
	}()
	defer func() { stopSettling(); <-settled }()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	// With port 0 the real address is known only now; say it where people
	// (and tests) look.
	base := cfg.BaseURL
	if strings.HasSuffix(cfg.Addr, ":0") {
		scheme := "http"
		if cfg.TLSCert != "" {
			scheme = "https"
		}
		base = scheme + "://" + ln.Addr().String()
	}
	admin, err := ensureAdmin(ctx, db, cfg)
	fresh := admin != nil
	if err != nil {
		ln.Close()
		return err
	}
	isDemo := fs.Lookup("demo").Value.String() == "true"
	policy := cfg.JudgePolicy
	if isDemo {
		// The demo's judge calls the fake model this server serves
		// itself: allow exactly this server's address, so the demo works
		// with no configuration and nothing else on this machine opens.
		own, err := ownHostRule(base)
		if err != nil {
			ln.Close()
			return err
		}
		policy.Hosts = append(slices.Clone(policy.Hosts), own)
	}
	// Every serve works queued judge runs, so runs spread over replicas.
	// Webhook deliveries go out through the same queue client, to the
	// hosts judges may call, and imported items are indexed for search.
	sender := webhook.NewSender(db, policy, webhook.Options{Logger: log.With("component", "webhook")})
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: e.getenv, Policy: policy, Logger: log,
		Also: []judge.AddWorkers{sender.Register, db.ItemIndexer().Register}})
	if err != nil {
		ln.Close()
		return err
	}
	// Items whose indexing job was given up are indexed at the next start.
	if err := db.QueueItemIndexSweep(ctx); err != nil {
		ln.Close()
		return err
	}
	var fake http.Handler
	if isDemo {
		// The fake answers the demo judge's prompts as the demo's
		// simulated judge, and any other at random.
		sj, err := demo.NewSimulatedJudge()
		if err != nil {
			ln.Close()
			return err
		}
		fake = fakellm.New(fakellm.Options{Latency: 150 * time.Millisecond, Answer: sj.Answer})
	}
	var accounts []demo.Account
	if fresh && isDemo {
		accounts, err = demo.Seed(ctx, db)
		if err != nil {
			ln.Close()
			return err
		}
		if err := demo.SeedJudge(ctx, db, runner, policy, base+"/fake-llm/v1"); err != nil {
			ln.Close()
			return err
		}
	}

	srv := web.New(db, log, web.Options{
		SecureCookies:              cfg.SecureCookies(),
		BaseURL:                    cfg.BaseURL,
		SessionIdleTimeout:         cfg.SessionIdleTimeout,
		SessionLifetime:            cfg.SessionLifetime,
		SignInWindow:               cfg.SignInWindow,
		SignInMaxPerAccount:        cfg.SignInMaxPerAccount,
		SignInMaxPerAddressAccount: cfg.SignInMaxPerAddressAccount,
		SignInMaxPerAddress:        cfg.SignInMaxPerAddress,
		TrustedProxies:             cfg.TrustedProxies,
		PasswordParams:             password.Default,
		SessionCleanup:             10 * time.Minute,
		Runner:                     runner,
		FakeLLM:                    fake,
		JudgePolicy:                policy,
		BreakAfter:                 cfg.BreakAfter,
	})
	defer srv.Close()
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			served <- hs.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			served <- hs.Serve(ln)
		}
	}()
	if err := runner.Start(ctx); err != nil {
		hs.Close()
		return fmt.Errorf("judge runner: %w", err)
	}
	log.Info("serving", "addr", ln.Addr().String(), "version", version)
	// The sign-ins come last, after everything start-up logs, so that
	// they are on screen when the person who started attune looks.
	if admin != nil {
		var kept string
		if devDir != "" {
			kept = filepath.Join(devDir, signInsFile)
			if err := writeSignIns(kept, signIns(base, admin, accounts, "")); err != nil {
				log.Error("the sign-ins could not be kept", "file", kept, "error", err.Error())
				kept = ""
			}
		}
		fmt.Fprint(e.stdout, signIns(base, admin, accounts, kept))
	} else if isDemo && devDir != "" {
		if _, err := os.Stat(filepath.Join(devDir, signInsFile)); err == nil {
			fmt.Fprintf(e.stdout, "The first start's sign-ins are in %s.\n", filepath.Join(devDir, signInsFile))
		}
	}
	fmt.Fprintf(e.stdout, "attune is serving at %s\n", base)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// In-flight requests finish (up to the timeout); the deferred Close of
	// the pool runs only after Shutdown returns.
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// Judge jobs under way finish if they can within the timeout; those
	// cut off are taken up again by the next runner, repaying nothing.
	if err := runner.Stop(sctx); err != nil {
		runner.StopAndCancel(context.Background())
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// ownHostRule is the judge host rule that allows exactly the server at
// base (its host and port).
func ownHostRule(base string) (attune.HostRule, error) {
	u, err := url.Parse(base)
	if err != nil {
		return attune.HostRule{}, fmt.Errorf("demo: %w", err)
	}
	hostPort := u.Host
	if u.Port() == "" {
		hostPort = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	rules, err := attune.ParseHostRules(hostPort)
	if err != nil || len(rules) != 1 {
		return attune.HostRule{}, fmt.Errorf("demo: the judge cannot be allowed to call %s: %v", base, err)
	}
	return rules[0], nil
}

// ensureAdmin creates the first admin on a database that has none and
// returns its sign-in, to be shown once; nil when there was an admin
// already (then the database was not empty).
func ensureAdmin(ctx context.Context, db *store.DB, cfg config.Config) (*demo.Account, error) {
	email, err := attune.NormalizeEmail(cfg.AdminEmail)
	if err != nil {
		return nil, fmt.Errorf("config: ATTUNE_ADMIN_EMAIL: %w", err)
	}
	pw, generated := cfg.AdminPassword, false
	if pw == "" {
		pw, generated = password.Generate(), true
	} else if msg := password.Check(pw); msg != "" {
		return nil, fmt.Errorf("config: ATTUNE_ADMIN_PASSWORD %s", msg)
	}
	hash, err := password.Hash(pw, password.Default)
	if err != nil {
		return nil, err
	}
	created, err := db.EnsureAdmin(ctx, store.NewUser{Email: email, Name: "Admin", PasswordHash: hash})
	if err != nil || !created {
		return nil, err
	}
	shown := pw
	if !generated {
		shown = "(the value of ATTUNE_ADMIN_PASSWORD)"
	}
	return &demo.Account{Email: email, Password: shown, Role: attune.RoleAdmin}, nil
}

// signIns is the text that tells how to sign in to a database set up by
// this start: the admin attune created, and the demo's accounts if any;
// kept names the file they are also written to.
func signIns(base string, admin *demo.Account, accounts []demo.Account, kept string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nNo admin account existed, so attune created one. Sign in at\n  %s/login\n  email:    %s\n  password: %s\n", base, admin.Email, admin.Password)
	if len(accounts) > 0 {
		b.WriteString("\n")
		demo.Print(&b, base, accounts)
	} else {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "This is shown only once")
	if kept != "" {
		fmt.Fprintf(&b, " (and kept in %s, readable only by you)", kept)
	}
	fmt.Fprintf(&b, ". Add more accounts at %s/admin/users\nor with 'attune user add'.\n\n", base)
	return b.String()
}

// writeSignIns writes the sign-ins to a file only its owner may read,
// replacing an earlier one (whose accounts belong to a database gone).
func writeSignIns(name, text string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// An older file may have been readable by others: O_CREATE keeps its mode.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(strings.TrimLeft(text, "\n")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
