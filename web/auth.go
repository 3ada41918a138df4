package web

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/views/login"
)

// Session keys.
const (
	sessionUserID     = "user_id"
	sessionFlash      = "flash"
	sessionFlashError = "flash_error"
)

// dummyHash is verified against when the email is unknown, so that a wrong
// email takes as long as a wrong password and timing reveals no accounts.
var dummyHash = sync.OnceValue(func() string {
	h, _ := password.Hash("attune-dummy-password", password.Default)
	return h
})

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
	addr := clientAddress(r)
	since := s.now().Add(-s.opts.SignInWindow)
	forEmail, forAddr, err := s.db.FailedSignIns(ctx, email, addr, since)
	if err != nil {
		return err
	}
	if forEmail >= s.opts.SignInMaxPerAccount || forAddr >= s.opts.SignInMaxPerAddress {
		w.Header().Set("Retry-After", fmt.Sprint(int(s.opts.SignInWindow.Seconds())))
		return fail(http.StatusTooManyRequests, fmt.Sprintf(
			"Too many failed sign-ins. Wait %d minutes and try again, or ask your admin to reset your password.",
			int(math.Ceil(s.opts.SignInWindow.Minutes()))))
	}

	u, err := s.db.FindUserByEmail(ctx, email)
	hash := dummyHash()
	if err == nil {
		hash = u.PasswordHash
	} else if !isNotFound(err) {
		return err
	}
	ok, verr := password.Verify(hash, pw)
	if verr != nil {
		return fmt.Errorf("verify password of %s: %w", email, verr)
	}
	ok = ok && err == nil
	if recErr := s.db.RecordSignIn(ctx, store.SignInAttempt{Email: email, Address: addr, Succeeded: ok}); recErr != nil {
		return recErr
	}
	if !ok {
		return fail(http.StatusUnauthorized, "That email and password do not match an account.")
	}
	// Reveal that an account is disabled only to someone who knows its password.
	if u.Disabled() {
		return fail(http.StatusForbidden, "This account has been disabled. Ask your admin if you need access again.")
	}
	// A new token at sign-in defeats session fixation.
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionUserID, u.ID)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessions.Destroy(r.Context()); err != nil {
		return err
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-sign-in redirect on this site: a local absolute
// path, never "//host" or a full URL.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}
