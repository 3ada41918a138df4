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

func TestStartSignInCountsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	lim := store.SignInLimits{Since: time.Now().Add(-time.Minute), PerAccount: 2, PerAddress: 3}
	start := func(email, addr string) (int64, bool) {
		t.Helper()
		id, ok, err := db.StartSignIn(ctx, email, addr, lim)
		if err != nil {
			t.Fatal(err)
		}
		return id, ok
	}
	// A success does not count, and does not forgive the failures before.
	id, ok := start("a@x.org", "10.0.0.1")
	if !ok {
		t.Fatal("first attempt refused")
	}
	if err := db.SignInSucceeded(ctx, id); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, ok := start("a@x.org", "10.0.0.2"); !ok {
			t.Fatal("attempt within the account limit refused")
		}
	}
	if _, ok := start("a@x.org", "10.0.0.3"); ok {
		t.Fatal("third failure at one account allowed with a limit of 2")
	}
	// The address limit counts failures at any email.
	start("b@x.org", "10.0.0.2")
	if _, ok := start("c@x.org", "10.0.0.2"); ok {
		t.Fatal("fourth failure from one address allowed with a limit of 3")
	}
	// Refused attempts are not recorded, so waiting out the window works.
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM sign_in_attempts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("%d attempts recorded, want 4 (refusals are not attempts)", n)
	}
	lim.Since = time.Now().Add(time.Minute)
	if _, ok := start("a@x.org", "10.0.0.2"); !ok {
		t.Fatal("failures outside the window counted")
	}
	if err := db.SignInSucceeded(ctx, 1<<40); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("SignInSucceeded of no attempt: %v", err)
	}
}

func TestStartSignInHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	lim := store.SignInLimits{Since: time.Now().Add(-time.Minute), PerAccount: 5, PerAddress: 1000}
	var allowed sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			_, ok, err := db.StartSignIn(ctx, "a@x.org", "10.0.0.1", lim)
			if err != nil {
				errs <- err
			}
			if ok {
				allowed.Store(i, true)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := 0
	allowed.Range(func(any, any) bool { n++; return true })
	if n != 5 {
		t.Fatalf("%d of 30 concurrent attempts allowed with a limit of 5", n)
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
	lim := store.SignInLimits{Since: time.Now().Add(-time.Hour), PerAccount: 2, PerAddress: 100}
	for range 2 {
		if _, _, err := db.StartSignIn(ctx, u.Email, "10.0.0.1", lim); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"one", "two"} {
		if _, _, err := db.CreateAPIToken(ctx, nil, u.ID, name, false); err != nil {
			t.Fatal(err)
		}
	}

	// The user's own change: sessions end, tokens and failures stay.
	done, err := db.SetUserPassword(ctx, &u.ID, u.ID, store.PasswordChange{Hash: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if done != (store.PasswordChanged{SessionEpoch: 1, TokensKept: 2}) {
		t.Fatalf("own change did %+v", done)
	}
	if _, ok, _ := db.StartSignIn(ctx, u.Email, "10.0.0.1", lim); ok {
		t.Fatal("a change by the user cleared the lockout")
	}

	// An admin's reset clearing the lockout, keeping the tokens.
	done, err = db.SetUserPassword(ctx, &admin.ID, u.ID, store.PasswordChange{Hash: "newer", ClearLockout: true})
	if err != nil {
		t.Fatal(err)
	}
	if done != (store.PasswordChanged{SessionEpoch: 2, TokensKept: 2, LockoutCleared: 2}) {
		t.Fatalf("reset did %+v", done)
	}
	if _, ok, _ := db.StartSignIn(ctx, u.Email, "10.0.0.1", lim); !ok {
		t.Fatal("the lockout stayed after a reset that clears it")
	}
	// ...and one revoking them.
	done, err = db.SetUserPassword(ctx, &admin.ID, u.ID, store.PasswordChange{Hash: "newest", ClearLockout: true, RevokeTokens: true})
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
	lee, _ = db.FindUserByID(ctx, lee.ID)
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
	if role, _ := db.ProjectRole(ctx, projects[0].ID, &stale); role != attune.MemberLead {
		t.Fatalf("after promotion: role %q, want lead", role)
	}
	fresh, _ := db.FindUserByID(ctx, lee.ID)
	if _, err := db.SetUserRole(ctx, nil, lee.ID, attune.RoleAnnotator); err != nil {
		t.Fatal(err)
	}
	if role, _ := db.ProjectRole(ctx, projects[0].ID, fresh); role != attune.MemberAnnotator {
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
