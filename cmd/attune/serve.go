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
	"slices"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/config"
	"github.com/attune/attune/internal/demo"
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

	db, err := openDB(ctx, cfg, lineWriter{log, "startup"})
	if err != nil {
		return err
	}
	defer db.Close()

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
	fresh, err := ensureAdmin(ctx, db, cfg, base, e)
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
		fake = fakellm.New(fakellm.Options{Latency: 150 * time.Millisecond})
	}
	if fresh && isDemo {
		accounts, err := demo.Seed(ctx, db)
		if err != nil {
			ln.Close()
			return err
		}
		demo.Print(e.stdout, base, accounts)
		if err := demo.SeedJudge(ctx, db, runner, policy, base+"/fake-llm/v1"); err != nil {
			ln.Close()
			return err
		}
	}

	srv := web.New(db, log, web.Options{
		SecureCookies:       cfg.SecureCookies(),
		SessionIdleTimeout:  cfg.SessionIdleTimeout,
		SessionLifetime:     cfg.SessionLifetime,
		SignInWindow:        cfg.SignInWindow,
		SignInMaxPerAccount: cfg.SignInMaxPerAccount,
		SignInMaxPerAddress: cfg.SignInMaxPerAddress,
		PasswordParams:      password.Default,
		SessionCleanup:      10 * time.Minute,
		Runner:              runner,
		FakeLLM:             fake,
		JudgePolicy:         policy,
		BreakAfter:          cfg.BreakAfter,
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
// tells the person starting attune how to sign in, once. It reports whether
// it created the admin: then the database was empty.
func ensureAdmin(ctx context.Context, db *store.DB, cfg config.Config, base string, e env) (bool, error) {
	email, err := attune.NormalizeEmail(cfg.AdminEmail)
	if err != nil {
		return false, fmt.Errorf("config: ATTUNE_ADMIN_EMAIL: %w", err)
	}
	pw, generated := cfg.AdminPassword, false
	if pw == "" {
		pw, generated = password.Generate(), true
	} else if msg := password.Check(pw); msg != "" {
		return false, fmt.Errorf("config: ATTUNE_ADMIN_PASSWORD %s", msg)
	}
	hash, err := password.Hash(pw, password.Default)
	if err != nil {
		return false, err
	}
	created, err := db.EnsureAdmin(ctx, store.NewUser{Email: email, Name: "Admin", PasswordHash: hash})
	if err != nil || !created {
		return false, err
	}
	shown := pw
	if !generated {
		shown = "(the value of ATTUNE_ADMIN_PASSWORD)"
	}
	fmt.Fprintf(e.stdout, `
No admin account existed, so attune created one. Sign in at
  %s/login
  email:    %s
  password: %s
This is shown only once. Add more accounts at %s/admin/users
or with 'attune user add'.

`, base, email, shown, base)
	return true, nil
}
