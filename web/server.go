// Package web is attune's HTTP layer: the routes, the middleware, and the
// handlers that turn requests into store calls and store results into
// templ pages. Handlers return errors; one adapter maps error kinds to
// statuses and logs server errors once.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"

	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
)

// Options are the settings the HTTP layer needs.
type Options struct {
	SecureCookies       bool
	SessionIdleTimeout  time.Duration
	SessionLifetime     time.Duration
	SignInWindow        time.Duration
	SignInMaxPerAccount int
	SignInMaxPerAddress int
	PasswordParams      password.Params
	// SessionCleanup is how often expired sessions are deleted; 0 disables
	// the background sweep (tests).
	SessionCleanup time.Duration
}

// Server serves attune over HTTP. Create it with New and Close it when done.
type Server struct {
	db       *store.DB
	log      *slog.Logger
	opts     Options
	sessions *scs.SessionManager
	stopGC   func()
	handler  http.Handler
	now      func() time.Time
}

// New returns a Server over db. Sessions live in db, so that any replica
// can serve any request and a restart signs nobody out.
func New(db *store.DB, logger *slog.Logger, opts Options) *Server {
	st := pgxstore.NewWithCleanupInterval(db.Pool(), opts.SessionCleanup)
	sm := scs.New()
	sm.Store = st
	sm.IdleTimeout = opts.SessionIdleTimeout
	sm.Lifetime = opts.SessionLifetime
	sm.Cookie.Name = "attune_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = opts.SecureCookies
	sm.Cookie.Persist = false // a browser session cookie; the server enforces the timeouts
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		logger.ErrorContext(r.Context(), "session store", "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	}
	s := &Server{db: db, log: logger, opts: opts, sessions: sm, stopGC: st.StopCleanup, now: time.Now}
	s.handler = s.routes()
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close stops the background session sweep.
func (s *Server) Close() { s.stopGC() }

// Ready reports whether the server can serve: the database answers and its
// schema is the one this binary expects.
func (s *Server) Ready(ctx context.Context) error { return s.ready(ctx) }
