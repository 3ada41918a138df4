package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web"
)

// signInVia signs in with an X-Forwarded-For header, as a request through
// a proxy arrives.
func (c *client) signInVia(xff, email, pw string) response {
	c.t.Helper()
	return c.postWith("/login", url.Values{"email": {email}, "password": {pw}},
		map[string]string{"Origin": c.base, "Sec-Fetch-Site": "same-origin", "X-Forwarded-For": xff})
}

// lastAddress is the client address the last attempt at email was
// counted under.
func (a *app) lastAddress(email string) string {
	a.t.Helper()
	var addr string
	if err := a.db.Pool().QueryRow(context.Background(),
		`SELECT address FROM sign_in_attempts WHERE email = $1 ORDER BY id DESC LIMIT 1`, email).Scan(&addr); err != nil {
		a.t.Fatal(err)
	}
	return addr
}

// behindProxy trusts the tests' own loopback address as a proxy, and
// 10.0.0.0/8 as the proxies behind it.
func behindProxy(o *web.Options) {
	o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}
}

// TestSignInMadeUpEmailsLockNobodyOut is the defect: 50 failures with
// made-up emails from one address (everyone's, behind a proxy) locked every
// real account there out, right password and all. Now the address's
// failures are only answered slowly, a made-up email and a real account's
// wrong password alike, and a right password always signs in.
func TestSignInMadeUpEmailsLockNobodyOut(t *testing.T) {
	t.Parallel()
	// A turn an hour apart: after the address's first slowed failure every
	// other is refused at once, so the test waits for nothing.
	a := newApp(t, func(o *web.Options) { o.SignInMaxPerAddress = 50; o.SignInPace = time.Hour })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	bob := a.user("bob@example.org", attune.RoleAnnotator)
	for i := range 60 {
		r := a.client().signIn(fmt.Sprintf("made-up-%d@example.org", i), "guess-guess-guess")
		if i < 51 {
			// 50 failures, then the first slowed one has the turn.
			wantStatus(t, r, http.StatusUnauthorized)
		} else {
			wantStatus(t, r, http.StatusTooManyRequests)
			wantContains(t, r, "do not match an account", "answered slowly", "wait 3600 seconds")
		}
	}
	// Every real account signs in with its right password.
	a.client().mustSignIn(ann)
	a.client().mustSignIn(bob)
	// A real account's wrong password is answered as a made-up email is,
	// so that the slowing tells nothing about which emails exist.
	wrong := a.client().signIn(bob.Email, "guess-guess-guess")
	madeUp := a.client().signIn("made-up-x@example.org", "guess-guess-guess")
	for _, r := range []response{wrong, madeUp} {
		wantStatus(t, r, http.StatusTooManyRequests)
		wantContains(t, r, "That email and password do not match an account. Many sign-ins have failed from your network address")
		if _, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil {
			t.Errorf("slowed answer's Retry-After %q", r.Header.Get("Retry-After"))
		}
	}
	a.client().mustSignIn(bob)
}

// TestSignInSlowedFailuresTakeTurns: failures from an address over its
// limit are answered one turn apart, so three at once take at least two
// turns, while a right password sent with them is not held back by them.
func TestSignInSlowedFailuresTakeTurns(t *testing.T) {
	t.Parallel()
	const turn = 200 * time.Millisecond
	a := newApp(t, func(o *web.Options) { o.SignInMaxPerAddress = 3; o.SignInPace = turn })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	for i := range 3 {
		wantStatus(t, a.client().signIn(fmt.Sprintf("made-up-%d@example.org", i), "guess-guess-guess"), http.StatusUnauthorized)
	}
	began := time.Now()
	var wg sync.WaitGroup
	statuses := make(chan int, 3)
	for i := range 3 {
		c := a.client()
		wg.Go(func() { statuses <- c.signIn(fmt.Sprintf("again-%d@example.org", i), "guess-guess-guess").StatusCode })
	}
	wg.Wait()
	if took := time.Since(began); took < 2*turn {
		t.Fatalf("three slowed failures answered in %v, under two turns of %v", took, turn)
	}
	close(statuses)
	for s := range statuses {
		if s != http.StatusUnauthorized {
			t.Fatalf("slowed failure within the pacer's wait answered %d, want 401", s)
		}
	}
	a.client().mustSignIn(ann)
}

// TestSignInLocksPerAccountAndPerAddress: guesses at one account lock it
// at the guesser's address first, then, from enough addresses, everywhere,
// each with a message saying what to do.
func TestSignInLocksPerAccountAndPerAddress(t *testing.T) {
	t.Parallel()
	a := newApp(t, behindProxy, func(o *web.Options) { o.SignInMaxPerAccount = 5; o.SignInMaxPerAddressAccount = 3 })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	right := "pw-" + ann.Email
	for range 3 {
		wantStatus(t, a.client().signInVia("198.51.100.1", ann.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	r := a.client().signInVia("198.51.100.1", ann.Email, right)
	wantStatus(t, r, http.StatusTooManyRequests)
	wantContains(t, r, "Too many failed sign-ins to this account from your network address", "Wait 15 minutes", "ask an admin to clear the lock")
	// The owner elsewhere signs in, which forgives the guesses.
	wantStatus(t, a.client().signInVia("198.51.100.2", ann.Email, right), http.StatusSeeOther)
	wantStatus(t, a.client().signInVia("198.51.100.1", ann.Email, right), http.StatusSeeOther)

	// Guesses spread over addresses, under each address's limit, lock the
	// account everywhere at the account's limit.
	for _, from := range []string{"198.51.100.3", "198.51.100.3", "198.51.100.4", "198.51.100.4", "198.51.100.5"} {
		wantStatus(t, a.client().signInVia(from, ann.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	r = a.client().signInVia("198.51.100.6", ann.Email, right)
	wantStatus(t, r, http.StatusTooManyRequests)
	wantContains(t, r, "Too many failed sign-ins to this account. Wait 15 minutes and try again, or ask an admin to clear the lock")
	// An email no account has locks the same way, so a lock tells nothing.
	for range 3 {
		a.client().signInVia("198.51.100.1", "nobody@example.org", "guess-guess-guess")
	}
	wantContains(t, a.client().signInVia("198.51.100.1", "nobody@example.org", "guess-guess-guess"),
		"Too many failed sign-ins to this account from your network address")
}

// TestSignInClientAddress: X-Forwarded-For counts only from a trusted
// proxy, read from the right, so a forged left-most entry changes nothing.
func TestSignInClientAddress(t *testing.T) {
	t.Parallel()
	direct := newApp(t)
	proxied := newApp(t, behindProxy)
	for _, tc := range []struct {
		app       *app
		xff, want string
		why       string
	}{
		{direct, "", "127.0.0.1", "no header"},
		{direct, "198.51.100.1", "127.0.0.1", "no proxy is trusted: the header is the client's word"},
		{proxied, "", "127.0.0.1", "a trusted proxy that says nothing"},
		{proxied, "198.51.100.1", "198.51.100.1", "the proxy's client"},
		{proxied, "203.0.113.66, 198.51.100.1", "198.51.100.1", "a forged left-most entry"},
		{proxied, "203.0.113.66, 198.51.100.1, 10.1.2.3", "198.51.100.1", "a chain of trusted proxies"},
		{proxied, "198.51.100.1, 10.1.2.3", "198.51.100.1", "the chain's client"},
		{proxied, "not-an-address, 10.1.2.3", "10.1.2.3", "an entry no proxy wrote ends at the last proxy"},
		{proxied, "198.51.100.1:4711", "198.51.100.1", "an entry with a port"},
		{proxied, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64", "IPv6 counts by its /64"},
		{proxied, "::ffff:198.51.100.9", "198.51.100.9", "an IPv4-mapped address is IPv4"},
	} {
		email := fmt.Sprintf("x%d@example.org", time.Now().UnixNano())
		c := tc.app.client()
		if tc.xff == "" {
			c.signIn(email, "guess-guess-guess")
		} else {
			c.signInVia(tc.xff, email, "guess-guess-guess")
		}
		if got := tc.app.lastAddress(email); got != tc.want {
			t.Errorf("%s (X-Forwarded-For %q): counted as %q, want %q", tc.why, tc.xff, got, tc.want)
		}
	}
	// Without a trusted proxy a guesser cannot spread guesses over made-up
	// addresses: they all count as one.
	a := newApp(t, func(o *web.Options) { o.SignInMaxPerAddressAccount = 3 })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	for i := range 3 {
		wantStatus(t, a.client().signInVia(fmt.Sprintf("203.0.113.%d", i), ann.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	wantStatus(t, a.client().signInVia("203.0.113.99", ann.Email, "guess-guess-guess"), http.StatusTooManyRequests)
	// Behind a trusted proxy, nor can a forged left-most entry.
	b := newApp(t, behindProxy, func(o *web.Options) { o.SignInMaxPerAddressAccount = 3 })
	bob := b.user("bob@example.org", attune.RoleAnnotator)
	for i := range 3 {
		wantStatus(t, b.client().signInVia(fmt.Sprintf("203.0.113.%d, 198.51.100.1", i), bob.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	wantStatus(t, b.client().signInVia("203.0.113.99, 198.51.100.1", bob.Email, "pw-"+bob.Email), http.StatusTooManyRequests)
	wantStatus(t, b.client().signInVia("198.51.100.2", bob.Email, "pw-"+bob.Email), http.StatusSeeOther)
}

// TestSignInCountersClearedBySuccessAndChange: a right password forgives
// the account's failures, and so does changing the password.
func TestSignInCountersClearedBySuccessAndChange(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.SignInMaxPerAccount = 3; o.SignInMaxPerAddressAccount = 3 })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	failures := func() int {
		t.Helper()
		var n int
		if err := a.db.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM sign_in_attempts WHERE email = $1 AND NOT succeeded AND cleared_at IS NULL`, ann.Email).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 2 {
		wantStatus(t, a.client().signIn(ann.Email, "my-typo"), http.StatusUnauthorized)
	}
	c := a.client()
	c.mustSignIn(ann)
	if n := failures(); n != 0 {
		t.Fatalf("%d failures counted after a right password", n)
	}
	// Two more typos do not lock with the earlier two forgiven.
	for range 2 {
		wantStatus(t, a.client().signIn(ann.Email, "my-typo"), http.StatusUnauthorized)
	}
	a.client().mustSignIn(ann)
	for range 2 {
		wantStatus(t, a.client().signIn(ann.Email, "my-typo"), http.StatusUnauthorized)
	}
	// The owner, still signed in, changes the password: the guesses at the
	// old one are forgiven.
	r := c.post("/account/password", url.Values{"current": {"pw-" + ann.Email}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}})
	wantStatus(t, r, http.StatusSeeOther)
	if n := failures(); n != 0 {
		t.Fatalf("%d failures counted after a password change", n)
	}
}

// TestAdminClearsSignInLock: the users page shows a locked account and
// clears its lock, only for an admin and only from attune's own pages,
// and the audit log records who did it.
func TestAdminClearsSignInLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	for range 5 {
		wantStatus(t, a.client().signIn(ann.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	wantStatus(t, a.client().signIn(ann.Email, "pw-"+ann.Email), http.StatusTooManyRequests)

	c := a.client()
	c.mustSignIn(admin)
	page := c.get("/admin/users")
	wantContains(t, page, `data-testid="sign-in-lock"`, "sign-in locked (5 failed sign-ins)", `data-testid="clear-sign-in-lock"`,
		fmt.Sprintf(`action="/admin/users/%d/unlock"`, ann.ID))
	unlock := fmt.Sprintf("/admin/users/%d/unlock", ann.ID)
	wantStatus(t, c.postWith(unlock, nil, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	wantStatus(t, c.postWith(unlock, nil, map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden)
	wantStatus(t, a.client().signIn(ann.Email, "pw-"+ann.Email), http.StatusTooManyRequests) // still locked

	wantStatus(t, c.post(unlock, nil), http.StatusSeeOther)
	page = c.get("/admin/users")
	wantContains(t, page, "Sign-in lock of ann@example.org cleared (5 failed sign-ins forgiven): it can sign in now.")
	if strings.Contains(page.body, `data-testid="sign-in-lock"`) {
		t.Fatal("the users page still shows the lock")
	}
	a.client().mustSignIn(ann)
	var actor int64
	var details string
	if err := a.db.Pool().QueryRow(ctx, `SELECT actor_id, details::text FROM audit_events WHERE action = 'user.clear_sign_in_lock' AND subject = $1`,
		ann.Email).Scan(&actor, &details); err != nil {
		t.Fatalf("no audit event of the clearing: %v", err)
	}
	if actor != admin.ID {
		t.Fatalf("clearing audited as actor %d, want %d", actor, admin.ID)
	}
	wantStatus(t, c.post("/admin/users/999999/unlock", nil), http.StatusNotFound)
	// Nothing to forgive is said as such.
	wantStatus(t, c.post(unlock, nil), http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "ann@example.org had no failed sign-ins to forgive.")
	// Only admins.
	lee := a.user("lee@example.org", attune.RoleLead)
	l := a.client()
	l.mustSignIn(lee)
	wantStatus(t, l.post(unlock, nil), http.StatusForbidden)
}

// TestSignInManyRightPasswordsAtOnce is the second half of the defect:
// 200 right sign-ins to one account at once got 178 × "Too many failed
// sign-ins". Checks under way are no failures: each is signed in or told
// busy, try again (503 with Retry-After), never locked, and the account
// is not locked afterwards.
func TestSignInManyRightPasswordsAtOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	const n = 200
	type answer struct {
		status     int
		retryAfter string
	}
	answers := make(chan answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		c := a.client()
		wg.Go(func() {
			<-start
			r := c.signIn(ann.Email, "pw-"+ann.Email)
			answers <- answer{r.StatusCode, r.Header.Get("Retry-After")}
		})
	}
	close(start)
	wg.Wait()
	close(answers)
	counts := map[int]int{}
	for ans := range answers {
		counts[ans.status]++
		if ans.status == http.StatusServiceUnavailable && ans.retryAfter == "" {
			t.Error("503 without Retry-After")
		}
	}
	t.Logf("200 right sign-ins at once: %v", counts)
	if counts[http.StatusSeeOther]+counts[http.StatusServiceUnavailable] != n || counts[http.StatusSeeOther] == 0 {
		t.Fatalf("200 right sign-ins at once got %v, want each 303 or 503 and some 303", counts)
	}
	a.client().mustSignIn(ann)
}
