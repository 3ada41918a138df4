package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/views/login"
)

// Session keys.
const (
	sessionUserID = "user_id"
	// sessionEpoch is the account's session epoch at sign-in: the session
	// ends when the account's epoch moves on (a password change or reset).
	sessionEpoch      = "session_epoch"
	sessionFlash      = "flash"
	sessionFlashError = "flash_error"
)

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) error {
	if userFrom(r.Context()) != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	s.render(w, r, http.StatusOK, login.View(login.Page{
		Chrome: s.chrome(r, "Sign in", ""),
		Next:   r.URL.Query().Get("next"),
	}))
	return nil
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	typed := strings.TrimSpace(r.PostFormValue("email"))
	pw := r.PostFormValue("password")
	next := r.PostFormValue("next")
	fail := func(status int, msg string) error {
		s.render(w, r, status, login.View(login.Page{Chrome: s.chrome(r, "Sign in", ""), Email: typed, Next: next, Error: msg}))
		return nil
	}
	email, err := attune.NormalizeEmail(typed)
	if err != nil || pw == "" {
		return fail(http.StatusUnprocessableEntity, "Enter your email address and password.")
	}
	// The attempt is recorded, as a failure, before the password is
	// checked, and only while the limits allow another: concurrent guesses
	// count against each other.
	attempt, allowed, err := s.db.StartSignIn(ctx, email, clientAddress(r), s.signInLimits())
	if err != nil {
		return err
	}
	if !allowed {
		w.Header().Set("Retry-After", fmt.Sprint(int(s.opts.SignInWindow.Seconds())))
		return fail(http.StatusTooManyRequests, s.tooManyMessage())
	}

	u, err := s.db.FindUserByEmail(ctx, email)
	var ok bool
	switch {
	case err == nil:
		ok, err = s.hasher.Verify(ctx, u.PasswordHash, pw)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("verify password of %s: %w", email, err)
		}
	case isNotFound(err):
		// The same wait as a wrong password, without its memory, so that
		// neither timing nor a flood of made-up emails tells or costs more.
		err = s.hasher.Miss(ctx)
	default:
		return err
	}
	if err != nil {
		// The request ended while waiting for its turn; the attempt stays
		// counted as a failure.
		return s.busy(w, r)
	}
	if !ok {
		return fail(http.StatusUnauthorized, "That email and password do not match an account.")
	}
	if err := s.db.SignInSucceeded(ctx, attempt); err != nil {
		return err
	}
	// Reveal that an account is disabled only to someone who knows its password.
	if u.Disabled() {
		return fail(http.StatusForbidden, "This account has been disabled. Ask your admin if you need access again.")
	}
	if err := s.startSession(ctx, u); err != nil {
		return err
	}
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
	return nil
}

// signInLimits are the sign-in limits as they stand now.
func (s *Server) signInLimits() store.SignInLimits {
	return store.SignInLimits{
		Since:      s.now().Add(-s.opts.SignInWindow),
		PerAccount: s.opts.SignInMaxPerAccount,
		PerAddress: s.opts.SignInMaxPerAddress,
	}
}

// tooManyMessage tells someone over the sign-in limits what to do.
func (s *Server) tooManyMessage() string {
	return fmt.Sprintf("Too many failed sign-ins. Wait %d minutes and try again, or ask your admin to reset your password.",
		int(math.Ceil(s.opts.SignInWindow.Minutes())))
}

// startSession signs u in on this request's session, under a new token:
// a token fixed by someone else before sign-in is worth nothing after.
func (s *Server) startSession(ctx context.Context, u *attune.User) error {
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionUserID, u.ID)
	s.sessions.Put(ctx, sessionEpoch, u.SessionEpoch)
	return nil
}

// busy answers a request that ended while waiting for a password hash: the
// client has usually gone, and this is load, not a fault, so it is not
// logged as one.
func (s *Server) busy(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Retry-After", "5")
	s.renderError(w, r, http.StatusServiceUnavailable, "Busy", "attune is busy signing people in. Try again in a moment.")
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessions.Destroy(r.Context()); err != nil {
		return err
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// maxNext bounds a post-sign-in address; longer ones are not links attune
// makes.
const maxNext = 2048

// safeNext returns next when it is a path on this site, and "/" otherwise.
//
// Browsers are lenient where servers are strict: they drop tabs and line
// breaks from a Location header and read a backslash as a slash, so
// "/\t/evil.example" and "/\\evil.example" both lead off site. So the
// value, and its percent-decoded form, must start with exactly one "/",
// hold no control character or backslash, and parse with net/url as a path
// with no scheme, host or user; the value itself is returned unchanged.
func safeNext(next string) string {
	if next == "" || len(next) > maxNext {
		return "/"
	}
	decoded, err := url.PathUnescape(next)
	if err != nil || !localPath(next) || !localPath(decoded) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !localPath(u.Path) {
		return "/"
	}
	return next
}

// localPath reports whether p starts with a single "/" and holds no
// backslash or control character, in valid UTF-8.
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || !utf8.ValidString(p) {
		return false
	}
	for _, r := range p {
		if r == '\\' || r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return false
		}
	}
	return true
}
