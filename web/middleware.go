package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
)

type ctxKey int

const (
	requestKey ctxKey = iota
	userKey
)

// requestInfo travels with the request so that the access log, written on
// the way out, knows what inner handlers learned (who the user was).
type requestInfo struct {
	id     string
	userID int64
}

func infoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestKey).(*requestInfo)
	if ri == nil {
		return &requestInfo{}
	}
	return ri
}

// userFrom returns the signed-in user, or nil.
func userFrom(ctx context.Context) *attune.User {
	u, _ := ctx.Value(userKey).(*attune.User)
	return u
}

// recover turns a panic into a 500 and a log line instead of a dropped
// connection.
func (s *Server) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", infoFrom(r.Context()).id,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer (flushes for
// streamed exports, per-request deadlines).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests gives each request an id (echoed in X-Request-Id) and writes
// one structured line per request when it ends.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var b [8]byte
		rand.Read(b[:])
		ri := &requestInfo{id: hex.EncodeToString(b[:])}
		w.Header().Set("X-Request-Id", ri.id)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestKey, ri)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || strings.HasPrefix(r.URL.Path, "/static/") {
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{
			slog.String("request_id", ri.id),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if ri.userID != 0 {
			attrs = append(attrs, slog.Int64("user_id", ri.userID))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// contentSecurityPolicy allows only the app's own origin: no inline script
// or style, no framing, forms posting only back to attune.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		if r.TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// withSession loads the session, refuses cross-site state changes, and
// resolves the signed-in user. The session of a disabled account, or of one
// whose password changed since the session signed in, is ended.
func (s *Server) withSession(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusForbidden, "Request refused",
			"This request came from another site, so attune refused it. Go back to attune and try again.")
	}))
	loadUser := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := s.sessions.GetInt64(r.Context(), sessionUserID)
		if id != 0 {
			u, err := s.db.FindUserByID(r.Context(), id)
			switch {
			case err == nil && !u.Disabled() && s.sessions.GetInt64(r.Context(), sessionEpoch) == u.SessionEpoch:
				infoFrom(r.Context()).userID = u.ID
				r = r.WithContext(context.WithValue(r.Context(), userKey, u))
			case err == nil || isNotFound(err):
				// The account was disabled or removed since sign-in, or its
				// password changed (which ends its other sessions).
				if err := s.sessions.Destroy(r.Context()); err != nil {
					s.serverError(w, r, err)
					return
				}
			default:
				s.serverError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return s.sessions.LoadAndSave(cop.Handler(loadUser))
}

// signedIn sends visitors who are not signed in to the sign-in page,
// remembering where they were going.
func (s *Server) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if userFrom(r.Context()) == nil {
			if r.Method != http.MethodGet {
				s.renderError(w, r, http.StatusUnauthorized, "Signed out", "Your session has ended. Sign in again.")
				return
			}
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// role lets through only signed-in users whose role grants at least min.
func (s *Server) role(min attune.Role, next http.Handler) http.Handler {
	return s.signedIn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !userFrom(r.Context()).Role.AtLeast(min) {
			s.renderError(w, r, http.StatusForbidden, "Not allowed", "Your account does not have access to this page.")
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// clientAddress is the address rate limits count sign-ins by.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
