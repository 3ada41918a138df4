package account

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/login"
)

// LoginPage shows the sign-in form, or sends someone already signed in
// on to where they were going.
func (s *Handler) LoginPage(w http.ResponseWriter, r *http.Request) error {
	if kit.UserFrom(r.Context()) != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	s.Render(w, r, http.StatusOK, login.View(login.Page{
		Chrome: s.Chrome(r, "Sign in", ""),
		Next:   r.URL.Query().Get("next"),
	}))
	return nil
}

// Login checks an email and password under the sign-in limits and the
// pacer, and signs the account in on this session when they match.
func (s *Handler) Login(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	typed := strings.TrimSpace(r.PostFormValue("email"))
	pw := r.PostFormValue("password")
	next := r.PostFormValue("next")
	fail := func(status int, msg string) error {
		s.Render(w, r, status, login.View(login.Page{Chrome: s.Chrome(r, "Sign in", ""), Email: typed, Next: next, Error: msg}))
		return nil
	}
	email, err := attune.NormalizeEmail(typed)
	if err != nil || pw == "" {
		return fail(http.StatusUnprocessableEntity, "Enter your email address and password.")
	}
	address := s.clientAddress(r)
	start, err := s.DB.StartSignIn(ctx, email, address, s.limits)
	if err != nil {
		return err
	}
	switch start.Verdict {
	case store.SignInBusy:
		return s.busy(w, r)
	case store.SignInLocked, store.SignInLockedHere:
		return fail(s.locked(w, start))
	}
	// The attempt is under way: it is finished whatever becomes of the
	// request, with a context the client's leaving does not end.
	done := context.WithoutCancel(ctx)

	// late, when not 0, is how long until the address's next turn to be
	// answered a failure (pacer), which this failure did not get.
	var late time.Duration
	u, err := s.DB.FindUserByEmail(ctx, email)
	var ok bool
	switch {
	case err == nil:
		ok, err = s.hasher.Verify(ctx, u.PasswordHash, pw)
		if err != nil && ctx.Err() == nil {
			s.abandon(done, start.Attempt)
			return fmt.Errorf("verify password of %s: %w", email, err)
		}
	case kit.IsNotFound(err):
		u, err = nil, nil
		// An address that failed too often waits its turn before a
		// made-up email takes a hash slot; a wrong password waits after
		// its check (below), so that both take the same time.
		if start.AddressSlowed {
			late, err = s.awaitTurn(ctx, address)
		}
		if err == nil {
			// The same wait as a wrong password, without its memory, so
			// that neither timing nor a flood of made-up emails tells or
			// costs more.
			err = s.hasher.Miss(ctx)
		}
	default:
		s.abandon(done, start.Attempt)
		return err
	}
	if err != nil {
		// The request ended while waiting for its turn: no password was
		// checked, so this was no failure.
		s.abandon(done, start.Attempt)
		return s.busy(w, r)
	}
	if !ok {
		if err := s.DB.SignInFailed(done, start.Attempt); err != nil {
			return err
		}
		if start.AddressSlowed && u != nil {
			if late, err = s.awaitTurn(ctx, address); err != nil {
				return nil // the client has gone
			}
		}
		if late > 0 {
			return fail(s.slowed(w, late))
		}
		return fail(http.StatusUnauthorized, "That email and password do not match an account.")
	}
	if err := s.DB.SignInSucceeded(done, start.Attempt); err != nil {
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

// locked answers an attempt at a locked email: the status, the message,
// and a Retry-After of when the lock ends by itself. The message says
// both ways out, and the same for every email, so that it tells nothing
// about which have accounts.
func (s *Handler) locked(w http.ResponseWriter, start store.SignInStart) (int, string) {
	left := max(start.Until.Sub(s.Now()), time.Second)
	w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(left.Seconds()))))
	where := "this account"
	if start.Verdict == store.SignInLockedHere {
		where = "this account from your network address"
	}
	minutes := int(math.Ceil(left.Minutes()))
	wait := "1 minute"
	if minutes > 1 {
		wait = fmt.Sprintf("%d minutes", minutes)
	}
	return http.StatusTooManyRequests, fmt.Sprintf("Too many failed sign-ins to %s. Wait %s and try again, "+
		"or ask an admin to clear the lock (an admin resetting your password clears it too).", where, wait)
}

// slowed answers a failure from an address that has failed too often
// when the address's next turn is further than the pacer waits.
func (s *Handler) slowed(w http.ResponseWriter, late time.Duration) (int, string) {
	secs := int(math.Ceil(late.Seconds()))
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	return http.StatusTooManyRequests, fmt.Sprintf("That email and password do not match an account. Many sign-ins have failed "+
		"from your network address, so failed ones are answered slowly: wait %d seconds before you try again.", secs)
}

// awaitTurn waits for address's next turn to be answered a failure. When
// the turn is too far ahead it waits nothing and returns how long until
// it; ctx's error when the request ends first.
func (s *Handler) awaitTurn(ctx context.Context, address string) (late time.Duration, err error) {
	wait, ok := s.pace.turn(address, s.Now())
	if !ok {
		return wait, nil
	}
	return 0, sleep(ctx, wait)
}

// abandon forgets an attempt whose password was not checked. It is only
// called on the way to another answer, so its error is logged.
func (s *Handler) abandon(ctx context.Context, attempt int64) {
	if err := s.DB.SignInAbandoned(ctx, attempt); err != nil {
		s.Log.ErrorContext(ctx, "forget sign-in attempt", "attempt", attempt, "err", err)
	}
}

// startSession signs u in on this request's session, under a new token:
// a token fixed by someone else before sign-in is worth nothing after.
func (s *Handler) startSession(ctx context.Context, u *attune.User) error {
	if err := s.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.Sessions.Put(ctx, kit.SessionUserID, u.ID)
	s.Sessions.Put(ctx, kit.SessionEpoch, u.SessionEpoch)
	return nil
}

// busy answers a sign-in that cannot be checked now: it ended while
// waiting for a password hash (the client has usually gone), or checks of
// the same account already under way fill its limit. This is load, not a
// fault, and no failure: it is not logged as one, and says to try again.
func (s *Handler) busy(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Retry-After", "5")
	s.RenderError(w, r, http.StatusServiceUnavailable, "Busy", "attune is busy signing people in. Try again in a moment.")
	return nil
}

// Logout ends the session and returns to the sign-in page.
func (s *Handler) Logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.Sessions.Destroy(r.Context()); err != nil {
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
