// Package web is attune's HTTP layer: the routes, the middleware, and the
// handlers that turn requests into store calls and store results into
// templ pages. Handlers return errors; one adapter maps error kinds to
// statuses and logs server errors once.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/web/account"
	"github.com/attune/attune/web/kit"

	"github.com/alexedwards/scs/v2"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

// Options are the settings the HTTP layer needs.
type Options struct {
	SecureCookies bool
	// BaseURL is the URL users reach attune at (ATTUNE_BASE_URL); its
	// scheme is the one a state-changing request's Origin must have. ""
	// takes the scheme of each connection.
	BaseURL            string
	SessionIdleTimeout time.Duration
	SessionLifetime    time.Duration
	// SignInWindow and the SignInMax settings are the sign-in limits
	// (store.SignInLimits).
	SignInWindow               time.Duration
	SignInMaxPerAccount        int
	SignInMaxPerAddressAccount int
	SignInMaxPerAddress        int
	// SignInPace is how far apart the failed sign-ins of an address over
	// SignInMaxPerAddress are answered; 0 means a second.
	SignInPace time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// (web/account reads the client address with them).
	TrustedProxies []netip.Prefix
	PasswordParams password.Params
	// HashSlots bounds how many password hashes are computed at once (each
	// holds PasswordParams.MemoryKiB); 0 means one per core.
	HashSlots int
	// SessionCleanup is how often expired sessions are deleted; 0 disables
	// the background sweep (tests).
	SessionCleanup time.Duration
	// Runner queues, pauses and estimates judge runs for the judge pages.
	// Whether this process also works runs is the runner's owner's choice.
	Runner *judge.Runner
	// JudgePolicy is what an admin lets judges use: the variables a key
	// may come from and the hosts calls may go to. Judges are created,
	// changed and tried under it.
	JudgePolicy attune.JudgePolicy
	// FakeLLM, when set, is served under /fake-llm/ (the demo's model).
	FakeLLM http.Handler
	// MaxUpload bounds one uploaded file (a dataset or labels file, on the
	// web or through the API), in bytes; 0 means 256 MiB. Larger uploads
	// are answered 413.
	MaxUpload int64
	// BreakAfter is how long an annotator labels without a pause before the
	// workspace offers a break; 0 means wellbeing.DefaultBreakAfter.
	BreakAfter time.Duration
}

// Server serves attune over HTTP. Create it with New and Close it when done.
type Server struct {
	// Kit is what every handler shares: the database, the log, the
	// sessions, the clock, and the adapters and readers of web/kit.
	*kit.Kit
	opts Options
	// hasher computes every password hash the server needs, a bounded
	// number at a time.
	hasher  *password.Hasher
	stopGC  func()
	handler http.Handler
	// experiments keeps the last experiment pages' results by their whole
	// input, for a page viewed again.
	experiments *experiment.Cache
	// pace spaces the failed sign-ins of addresses over their limit.
	pace *account.Pacer
	// runs starts and changes judge runs, as the API and the command
	// line do.
	runs *runs.Flow
	// labeling stores, changes and gives back a person's labels, as the
	// API does.
	labeling *labeling.Flow
	// adjudication applies the consensus rule and stores a lead's gold,
	// as the API and the command line do.
	adjudication *adjudication.Flow
}

// New returns a Server over db. Sessions live in db, so that any replica
// can serve any request and a restart signs nobody out.
func New(db *store.DB, logger *slog.Logger, opts Options) *Server {
	sm := scs.New()
	// Expired sessions are swept by Server's own sweeper, below.
	sm.Store = &sessionStore{db: db, codec: sm.Codec}
	sm.IdleTimeout = opts.SessionIdleTimeout
	sm.Lifetime = opts.SessionLifetime
	sm.Cookie.Name = "attune_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = opts.SecureCookies
	sm.Cookie.Persist = false // a browser session cookie; the server enforces the timeouts
	var s *Server
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		if s.DatabaseAway(w, r, err, func(status int, msg string) { http.Error(w, msg, status) }) {
			return
		}
		logger.ErrorContext(r.Context(), "session store", "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	}
	s = &Server{Kit: &kit.Kit{DB: db, Log: logger, Sessions: sm, Now: time.Now, UploadLimit: opts.MaxUpload}, opts: opts,
		hasher: password.NewHasher(opts.PasswordParams, opts.HashSlots), experiments: experiment.NewCache(16),
		pace: account.NewPacer(opts.SignInPace), runs: runs.New(db, opts.Runner),
		labeling: labeling.New(db, logger), adjudication: adjudication.New(db)}
	s.handler = s.routes()
	s.stopGC = s.sweepSessions(opts.SessionCleanup)
	return s
}

// sweepSessions deletes expired sessions every interval until the returned
// stop func is called; stop waits for a sweep under way to finish.
func (s *Server) sweepSessions(interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if n, err := s.DB.DeleteExpiredSessions(ctx); err != nil && ctx.Err() == nil {
					s.Log.Error("sweep sessions", "err", err)
				} else if n > 0 {
					s.Log.Debug("swept expired sessions", "count", n)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close stops the background session sweep and waits for it.
func (s *Server) Close() { s.stopGC() }

// Ready reports whether the server can serve: the database answers and its
// schema is the one this binary expects.
func (s *Server) Ready(ctx context.Context) error { return s.ready(ctx) }
