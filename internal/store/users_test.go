package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// fail records a failed sign-in as email from addr, which the limits must
// allow.
func fail(t *testing.T, db *store.DB, lim store.SignInLimits, email, addr string) {
	t.Helper()
	st, err := db.StartSignIn(context.Background(), email, addr, lim)
	if err != nil {
		t.Fatal(err)
	}
	if st.Verdict != store.SignInAllowed {
		t.Fatalf("attempt at %s from %s refused (%v)", email, addr, st.Verdict)
	}
	if err := db.SignInFailed(context.Background(), st.Attempt); err != nil {
		t.Fatal(err)
	}
}

func verdict(t *testing.T, db *store.DB, lim store.SignInLimits, email, addr string) store.SignInStart {
	t.Helper()
	st, err := db.StartSignIn(context.Background(), email, addr, lim)
	if err != nil {
		t.Fatal(err)
	}
	if st.Verdict == store.SignInAllowed {
		if err := db.SignInAbandoned(context.Background(), st.Attempt); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestStartSignInCountsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	lim := store.SignInLimits{Window: time.Minute, PerAccount: 4, PerAddressAccount: 2, PerAddress: 3}

	// Per (address, account): two failures from one address lock the
	// email there, and only there.
	fail(t, db, lim, "a@x.org", "10.0.0.1")
	fail(t, db, lim, "a@x.org", "10.0.0.1")
	st := verdict(t, db, lim, "a@x.org", "10.0.0.1")
	if st.Verdict != store.SignInLockedHere {
		t.Fatalf("third attempt at one email from one address: %v, want locked here", st.Verdict)
	}
	if left := time.Until(st.Until); left < 50*time.Second || left > 70*time.Second {
		t.Fatalf("lock ends in %v, want about the one-minute window", left)
	}
	if st := verdict(t, db, lim, "a@x.org", "10.0.0.2"); st.Verdict != store.SignInAllowed {
		t.Fatalf("another address refused (%v) with the email locked at one", st.Verdict)
	}
	// Per account: four failures from anywhere lock it everywhere.
	fail(t, db, lim, "a@x.org", "10.0.0.2")
	fail(t, db, lim, "a@x.org", "10.0.0.3")
	if st := verdict(t, db, lim, "a@x.org", "10.0.0.9"); st.Verdict != store.SignInLocked {
		t.Fatalf("fifth attempt at an email with 4 failures: %v, want locked", st.Verdict)
	}
	// Per address: failures at any email slow the address, never lock it.
	if st := verdict(t, db, lim, "b@x.org", "10.0.0.1"); st.Verdict != store.SignInAllowed || st.AddressSlowed {
		t.Fatalf("address with 2 failures: %+v", st)
	}
	fail(t, db, lim, "b@x.org", "10.0.0.1")
	if st := verdict(t, db, lim, "c@x.org", "10.0.0.1"); st.Verdict != store.SignInAllowed || !st.AddressSlowed {
		t.Fatalf("address with 3 failures: %+v, want allowed and slowed", st)
	}
	// A success forgives the email's failures, from every address, but
	// not the address's: one known password buys no guesses elsewhere.
	st, err := db.StartSignIn(ctx, "b@x.org", "10.0.0.1", lim)
	if err != nil || st.Verdict != store.SignInAllowed {
		t.Fatalf("%+v %v", st, err)
	}
	if err := db.SignInSucceeded(ctx, st.Attempt); err != nil {
		t.Fatal(err)
	}
	if st := verdict(t, db, lim, "c@x.org", "10.0.0.1"); !st.AddressSlowed {
		t.Fatal("a success cleared its address's failures")
	}
	// Attempts whose password was never checked leave no trace.
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM sign_in_attempts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("%d attempts recorded, want 6 (refusals and abandoned attempts are not attempts)", n)
	}
	// The window passes.
	lim.Window = time.Nanosecond
	if st := verdict(t, db, lim, "a@x.org", "10.0.0.1"); st.Verdict != store.SignInAllowed || st.AddressSlowed {
		t.Fatalf("failures outside the window counted: %+v", st)
	}
	for name, finish := range map[string]func(context.Context, int64) error{
		"SignInSucceeded": db.SignInSucceeded, "SignInFailed": db.SignInFailed, "SignInAbandoned": db.SignInAbandoned,
	} {
		if err := finish(ctx, 1<<40); !errors.Is(err, attune.ErrNotFound) {
			t.Fatalf("%s of no attempt: %v", name, err)
		}
	}
}

// TestSignInSuccessClearsTheAccount: a success forgives the failures at
// the account from every address, so a lock its owner's own typos built
// ends when the owner gets it right.
func TestSignInSuccessClearsTheAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	lim := store.SignInLimits{Window: time.Hour, PerAccount: 3, PerAddressAccount: 3, PerAddress: 100}
	fail(t, db, lim, "a@x.org", "10.0.0.1")
	fail(t, db, lim, "a@x.org", "10.0.0.2")
	st, err := db.StartSignIn(ctx, "a@x.org", "10.0.0.3", lim)
	if err != nil || st.Verdict != store.SignInAllowed {
		t.Fatalf("%+v %v", st, err)
	}
	if err := db.SignInSucceeded(ctx, st.Attempt); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		fail(t, db, lim, "a@x.org", "10.0.0.1")
	}
	// Two forgiven and two new: under the limit of 3.
	if st := verdict(t, db, lim, "a@x.org", "10.0.0.1"); st.Verdict != store.SignInAllowed {
		t.Fatalf("failures forgiven by a success still counted: %v", st.Verdict)
	}
}

// TestStartSignInHoldsUnderConcurrency: 30 attempts at once with a limit
// of 5 let exactly 5 be checked; the rest are busy, not locked, since no
// failure has been recorded yet. Once the 5 fail, the email is locked.
func TestStartSignInHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	lim := store.SignInLimits{Window: time.Minute, PerAccount: 5, PerAddressAccount: 5, PerAddress: 1000}
	var mu sync.Mutex
	var allowed []int64
	verdicts := map[store.SignInVerdict]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for range 30 {
		wg.Go(func() {
			st, err := db.StartSignIn(ctx, "a@x.org", "10.0.0.1", lim)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			verdicts[st.Verdict]++
			if st.Verdict == store.SignInAllowed {
				allowed = append(allowed, st.Attempt)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if verdicts[store.SignInAllowed] != 5 || verdicts[store.SignInBusy] != 25 {
		t.Fatalf("30 concurrent attempts with a limit of 5: %v, want 5 allowed and 25 busy", verdicts)
	}
	for _, id := range allowed {
		if err := db.SignInFailed(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if st := verdict(t, db, lim, "a@x.org", "10.0.0.2"); st.Verdict != store.SignInLocked {
		t.Fatalf("after 5 failures: %v, want locked", st.Verdict)
	}
}

// TestClearSignInLock: an admin's clearing forgives the account's failures
// and is audited.
func TestClearSignInLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	admin, err := db.CreateUser(ctx, nil, store.NewUser{Email: "admin@x.org", Role: attune.RoleAdmin, PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.CreateUser(ctx, nil, store.NewUser{Email: "ann@x.org", Role: attune.RoleAnnotator, PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	lim := store.SignInLimits{Window: time.Hour, PerAccount: 3, PerAddressAccount: 2, PerAddress: 100}
	fail(t, db, lim, u.Email, "10.0.0.1")
	fail(t, db, lim, u.Email, "10.0.0.1")
	fail(t, db, lim, "nobody@x.org", "10.0.0.1")
	fail(t, db, lim, "nobody@x.org", "10.0.0.1")
	locks, err := db.SignInLockouts(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	// Made-up emails have no row on the users page.
	if len(locks) != 1 || locks[u.ID] != (store.SignInLockout{Failures: 2, Addresses: 1}) {
		t.Fatalf("lockouts %+v", locks)
	}
	fail(t, db, lim, u.Email, "10.0.0.2")
	locks, err = db.SignInLockouts(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	if locks[u.ID] != (store.SignInLockout{Failures: 3, Everywhere: true, Addresses: 1}) {
		t.Fatalf("lockouts %+v", locks)
	}
	n, err := db.ClearSignInLock(ctx, &admin.ID, u.ID)
	if err != nil || n != 3 {
		t.Fatalf("clear: %d, %v; want 3 forgiven", n, err)
	}
	if st := verdict(t, db, lim, u.Email, "10.0.0.1"); st.Verdict != store.SignInAllowed {
		t.Fatalf("after clearing: %v", st.Verdict)
	}
	locks, err = db.SignInLockouts(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Fatalf("lockouts after clearing %+v", locks)
	}
	var actor int64
	var subject, details string
	if err := db.Pool().QueryRow(ctx, `SELECT actor_id, subject, details::text FROM audit_events WHERE action = 'user.clear_sign_in_lock'`).Scan(&actor, &subject, &details); err != nil {
		t.Fatal(err)
	}
	if actor != admin.ID || subject != u.Email || !strings.Contains(details, `"failed_sign_ins_forgiven": "3"`) {
		t.Fatalf("audit: actor %d, subject %s, details %s", actor, subject, details)
	}
	if _, err := db.ClearSignInLock(ctx, nil, 1<<40); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("clearing no account: %v", err)
	}
}

func TestSetUserPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	admin, err := db.CreateUser(ctx, nil, store.NewUser{Email: "admin@x.org", Role: attune.RoleAdmin, PasswordHash: "old"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.CreateUser(ctx, nil, store.NewUser{Email: "ann@x.org", Role: attune.RoleAnnotator, PasswordHash: "old"})
	if err != nil {
		t.Fatal(err)
	}
	lim := store.SignInLimits{Window: time.Hour, PerAccount: 2, PerAddressAccount: 2, PerAddress: 100}
	fail(t, db, lim, u.Email, "10.0.0.1")
	fail(t, db, lim, u.Email, "10.0.0.1")
	for _, name := range []string{"one", "two"} {
		if _, _, err := db.CreateAPIToken(ctx, nil, u.ID, name, false); err != nil {
			t.Fatal(err)
		}
	}

	// The user's own change: sessions end, tokens stay, and the guesses
	// at the old password are forgiven.
	done, err := db.SetUserPassword(ctx, &u.ID, u.ID, store.PasswordChange{Hash: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if done != (store.PasswordChanged{SessionEpoch: 1, TokensKept: 2, LockoutCleared: 2}) {
		t.Fatalf("own change did %+v", done)
	}
	if st := verdict(t, db, lim, u.Email, "10.0.0.1"); st.Verdict != store.SignInAllowed {
		t.Fatalf("the lockout stayed after the user's own change: %v", st.Verdict)
	}

	// An admin's reset clearing the lockout, keeping the tokens.
	fail(t, db, lim, u.Email, "10.0.0.1")
	fail(t, db, lim, u.Email, "10.0.0.2")
	if st := verdict(t, db, lim, u.Email, "10.0.0.3"); st.Verdict != store.SignInLocked {
		t.Fatalf("before the reset: %v, want locked", st.Verdict)
	}
	done, err = db.SetUserPassword(ctx, &admin.ID, u.ID, store.PasswordChange{Hash: "newer"})
	if err != nil {
		t.Fatal(err)
	}
	if done != (store.PasswordChanged{SessionEpoch: 2, TokensKept: 2, LockoutCleared: 2}) {
		t.Fatalf("reset did %+v", done)
	}
	if st := verdict(t, db, lim, u.Email, "10.0.0.1"); st.Verdict != store.SignInAllowed {
		t.Fatalf("the lockout stayed after a reset: %v", st.Verdict)
	}
	// ...and one revoking them.
	fail(t, db, lim, u.Email, "10.0.0.1")
	done, err = db.SetUserPassword(ctx, &admin.ID, u.ID, store.PasswordChange{Hash: "newest", RevokeTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if done != (store.PasswordChanged{SessionEpoch: 3, TokensRevoked: 2, LockoutCleared: 1}) {
		t.Fatalf("reset with revocation did %+v", done)
	}
	got, err := db.FindUserByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.PasswordHash != "newest" || got.SessionEpoch != 3 {
		t.Fatalf("stored hash %q, epoch %d", got.PasswordHash, got.SessionEpoch)
	}
	var details string
	if err := db.Pool().QueryRow(ctx, `SELECT details::text FROM audit_events WHERE action = 'user.set_password' ORDER BY id DESC LIMIT 1`).Scan(&details); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tokens_revoked": "2"`, `"lockout_cleared": "1"`, `"sessions_ended": "all"`} {
		if !strings.Contains(details, want) {
			t.Errorf("audit details %s lack %s", details, want)
		}
	}
	if _, err := db.SetUserPassword(ctx, nil, 1<<40, store.PasswordChange{Hash: "x"}); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("password of no account: %v", err)
	}
}

// TestDemotionEndsProjectLeads: a role that does not lead projects turns
// the account's project-lead memberships into annotator ones, and the
// effective role holds even for a lead row stored against the rule.
func TestDemotionEndsProjectLeads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	rubrics, err := db.ListRubrics(ctx)
	if err != nil || len(rubrics) == 0 {
		t.Fatalf("rubrics %v, %v", rubrics, err)
	}
	if _, err := db.CreateUser(ctx, nil, store.NewUser{Email: "admin@x.org", Role: attune.RoleAdmin, PasswordHash: "h"}); err != nil {
		t.Fatal(err)
	}
	lee, err := db.CreateUser(ctx, nil, store.NewUser{Email: "lee@x.org", Role: attune.RoleLead, PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	var projects []*attune.Project
	for _, name := range []string{"One", "Two"} {
		p, err := db.CreateProject(ctx, &lee.ID, store.NewProject{Name: name, RubricVersionID: rubrics[0].ID, Overlap: 1, Lease: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		projects = append(projects, p)
	}
	// Admin and back to lead: still leads.
	if n, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleAdmin); err != nil || n != 0 {
		t.Fatalf("promotion to admin: %d, %v", n, err)
	}
	if n, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleLead); err != nil || n != 0 {
		t.Fatalf("admin to lead: %d, %v", n, err)
	}
	n, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleAnnotator)
	if err != nil || n != 2 {
		t.Fatalf("demotion: %d projects no longer led, %v; want 2", n, err)
	}
	lee, err = db.FindUserByID(ctx, lee.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		if role, err := db.ProjectRole(ctx, p.ID, lee); err != nil || role != attune.MemberAnnotator {
			t.Fatalf("%s: role %q, %v; want annotator", p.Name, role, err)
		}
	}
	members, err := db.ListMembers(ctx, projects[0].ID)
	if err != nil || len(members) != 1 || members[0].Role != attune.MemberAnnotator {
		t.Fatalf("members after demotion: %+v, %v", members, err)
	}
	// A lead row written against the rule still reads as an annotator.
	if _, err := db.Pool().Exec(ctx, `UPDATE project_members SET role = 'lead' WHERE user_id = $1`, lee.ID); err != nil {
		t.Fatal(err)
	}
	if role, err := db.ProjectRole(ctx, projects[0].ID, lee); err != nil || role != attune.MemberAnnotator {
		t.Fatalf("stored lead row: role %q, %v; want annotator", role, err)
	}
	ps, err := db.ListProjectsForUser(ctx, lee)
	if err != nil || len(ps) != 2 || ps[0].MemberRole != string(attune.MemberAnnotator) {
		t.Fatalf("projects listed for the demoted lead: %+v, %v", ps, err)
	}
	// The global role is read as the request acts: a user value loaded
	// before a promotion does not hold the role back, nor one loaded
	// before a demotion keep it.
	stale := *lee
	if _, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleLead); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE project_members SET role = 'lead' WHERE user_id = $1`, lee.ID); err != nil {
		t.Fatal(err)
	}
	role, err := db.ProjectRole(ctx, projects[0].ID, &stale)
	if err != nil {
		t.Fatal(err)
	}
	if role != attune.MemberLead {
		t.Fatalf("after promotion: role %q, want lead", role)
	}
	fresh, err := db.FindUserByID(ctx, lee.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleAnnotator); err != nil {
		t.Fatal(err)
	}
	role, err = db.ProjectRole(ctx, projects[0].ID, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if role != attune.MemberAnnotator {
		t.Fatalf("demoted while the request ran: role %q, want annotator", role)
	}
}

// TestSetRubricExpanded: the preference starts off, is stored per user, and
// reads back with the account (the session loads it from there).
func TestSetRubricExpanded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	mk := func(email string) *attune.User {
		t.Helper()
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: email, Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if u.RubricExpanded {
			t.Fatalf("%s starts with every criterion expanded", email)
		}
		return u
	}
	a, b := mk("a@x.org"), mk("b@x.org")
	expanded := func(u *attune.User) bool {
		t.Helper()
		got, err := db.FindUserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.RubricExpanded
	}
	for _, on := range []bool{true, true, false, true} {
		if err := db.SetRubricExpanded(ctx, a.ID, on); err != nil {
			t.Fatal(err)
		}
		if got := expanded(a); got != on {
			t.Fatalf("after setting %v, a reads %v", on, got)
		}
		if expanded(b) {
			t.Fatal("setting a's preference changed b's")
		}
	}
	if err := db.SetRubricExpanded(ctx, b.ID+1000, true); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("a user that does not exist: %v", err)
	}
}
