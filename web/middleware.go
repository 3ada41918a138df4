package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/kit"
)

// recover turns a panic into a 500 and a log line instead of a dropped
// connection.
func (s *Server) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Log.ErrorContext(r.Context(), "panic", "request_id", kit.InfoFrom(r.Context()).ID,
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
		ri := &kit.RequestInfo{ID: hex.EncodeToString(b[:])}
		w.Header().Set("X-Request-Id", ri.ID)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(kit.WithRequestInfo(r.Context(), ri)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		// Probes, static files and the demo judge's calls to the fake
		// model this server serves itself are routine: a line each would
		// bury what matters (at make run, the sign-ins).
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || strings.HasPrefix(r.URL.Path, "/static/") ||
			strings.HasPrefix(r.URL.Path, "/fake-llm/") {
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{
			slog.String("request_id", ri.ID),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if ri.UserID != 0 {
			attrs = append(attrs, slog.Int64("user_id", ri.UserID))
		}
		s.Log.LogAttrs(r.Context(), level, "request", attrs...)
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
		s.RenderError(w, r, http.StatusForbidden, "Request refused",
			"This request came from another site, so attune refused it. Go back to attune and try again.")
	}))
	loadUser := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := s.Sessions.GetInt64(r.Context(), kit.SessionUserID)
		if id != 0 {
			// The account was read with the session, unless the session
			// was stored before it knew its account.
			var u *attune.User
			var err error
			if l := loadedFrom(r.Context()); l != nil && l.user != nil && l.user.ID == id {
				u = l.user
			} else {
				u, err = s.DB.FindUserByID(r.Context(), id)
			}
			switch {
			case err == nil && !u.Disabled() && s.Sessions.GetInt64(r.Context(), kit.SessionEpoch) == u.SessionEpoch:
				r = r.WithContext(kit.WithUser(r.Context(), u))
			case err == nil || kit.IsNotFound(err):
				// The account was disabled or removed since sign-in, or its
				// password changed (which ends its other sessions).
				if err := s.Sessions.Destroy(r.Context()); err != nil {
					s.ServerError(w, r, err)
					return
				}
			default:
				s.ServerError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return withLoadedSession(s.Sessions.LoadAndSave(cop.Handler(s.sameOrigin(loadUser))))
}

// sameOrigin refuses a state-changing request whose Origin is not attune's
// own: scheme, host and port. http.CrossOriginProtection compares only the
// Origin's host with the request's, so a page served over plain http on
// the same name (an attacker on the network path can serve one) could post
// to the https app. attune's scheme is that of ATTUNE_BASE_URL when given,
// else the connection's; its host and port are the request's.
func (s *Server) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		if origin == "" {
			// Not from a browser that says (CrossOriginProtection has
			// already judged Sec-Fetch-Site).
			next.ServeHTTP(w, r)
			return
		}
		if !s.ownOrigin(r, origin) {
			s.RenderError(w, r, http.StatusForbidden, "Request refused",
				"This request came from another site, so attune refused it. Go back to attune and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether origin ("scheme://host[:port]") is attune's own
// for the request r.
func (s *Server) ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if base, err := url.Parse(s.opts.BaseURL); err == nil && s.opts.BaseURL != "" {
		scheme = base.Scheme
	}
	return strings.EqualFold(u.Scheme, scheme) && hostPort(u.Scheme, u.Host) == hostPort(scheme, r.Host)
}

// hostPort is host with its port, the scheme's default port when none is
// written, in lower case.
func hostPort(scheme, host string) string {
	host = strings.ToLower(host)
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if strings.EqualFold(scheme, "https") {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// signedIn sends visitors who are not signed in to the sign-in page,
// remembering where they were going.
func (s *Server) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if kit.UserFrom(r.Context()) == nil {
			if r.Method != http.MethodGet {
				s.RenderError(w, r, http.StatusUnauthorized, "Signed out", "Your session has ended. Sign in again.")
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
		if !kit.UserFrom(r.Context()).Role.AtLeast(min) {
			s.RenderError(w, r, http.StatusForbidden, "Not allowed", "Your account does not have access to this page.")
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// maxFormBody bounds the body of a form that is not a file upload. It is
// what net/http's own form parsing allows; handlers keep their tighter
// limits, since the body they read is the one sent.
const maxFormBody = 10 << 20

// textInputs refuses, with a 422 naming the field, a request whose query
// parameters or form fields (names or values) hold text that cannot be
// stored: invalid UTF-8 or a NUL byte (attune.TextProblem). It runs before
// the handler, so that no form path can forget it. A form's body is read
// here, checked, and handed on as sent; a streamed upload's body (upload)
// is left alone, since readUpload checks its fields and the file readers
// their lines. Bodies of other types are not forms and stay unread.
func (s *Server) textInputs(upload bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkQueryText(r)
		if err == nil && !upload {
			err = checkFormText(r)
		}
		if err != nil {
			s.H(func(http.ResponseWriter, *http.Request) error { return err }).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func checkQueryText(r *http.Request) error {
	q, _ := url.ParseQuery(r.URL.RawQuery) // malformed pairs are dropped, as r.URL.Query does
	return valuesText(q)
}

// checkFormText reads and checks an urlencoded or multipart body, then
// puts the same bytes back for the handler.
func checkFormText(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" && ct != "multipart/form-data" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBody+1))
	if err != nil {
		return attune.Invalid("form", "the form could not be read; try again")
	}
	if len(body) > maxFormBody {
		return &kit.TooLarge{What: "form", Limit: maxFormBody}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if ct == "application/x-www-form-urlencoded" {
		vs, _ := url.ParseQuery(string(body))
		return valuesText(vs)
	}
	// A copy of the request parses the multipart form, so that the
	// handler still parses the body itself, with its own limits.
	cp := r.Clone(r.Context())
	cp.Body = io.NopCloser(bytes.NewReader(body))
	if err := cp.ParseMultipartForm(maxFormBody); err != nil {
		return nil // the handler's own parse reports a malformed form
	}
	defer cp.MultipartForm.RemoveAll()
	return valuesText(cp.MultipartForm.Value)
}

// valuesText checks field names and values, naming the first bad field.
func valuesText(vs map[string][]string) error {
	for name, values := range vs {
		if p := attune.TextProblem(name); p != "" {
			return attune.Invalid("form", "a field's name "+p)
		}
		for _, v := range values {
			if err := attune.CheckText(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}
