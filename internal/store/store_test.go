package store_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	st, err := db.MigrationState(ctx)
	if err != nil || st.Current != 0 || !st.Pending() {
		t.Fatalf("empty database: state %+v, err %v", st, err)
	}
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatalf("up: %v", err)
	}
	st, err = db.MigrationState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending() || st.Current != st.Latest {
		t.Fatalf("after up: %+v", st)
	}
	for st.Current > 0 {
		if err := db.MigrateDown(ctx, io.Discard); err != nil {
			t.Fatalf("down from %d: %v", st.Current, err)
		}
		st, err = db.MigrationState(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	var tables int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("after down to 0, %d tables remain", tables)
	}
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var status strings.Builder
	if err := db.WriteMigrationStatus(ctx, &status); err != nil || !strings.Contains(status.String(), "00001_schema.sql") || !strings.Contains(status.String(), "applied") {
		t.Fatalf("status = %q, %v", status.String(), err)
	}
}

func TestMigrateRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	st, err := db.MigrationState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, st.Latest+1); err != nil {
		t.Fatal(err)
	}
	err = db.Migrate(ctx, io.Discard)
	var tooNew store.ErrDatabaseTooNew
	if !errors.As(err, &tooNew) || !strings.Contains(err.Error(), "newer attune") {
		t.Fatalf("Migrate on a newer database = %v, want ErrDatabaseTooNew", err)
	}
}

func TestEnsureDatabaseCreatesMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := dbtest.MissingURL(t)
	created, err := store.EnsureDatabase(ctx, u)
	if err != nil || !created {
		t.Fatalf("EnsureDatabase(missing) = %v, %v", created, err)
	}
	created, err = store.EnsureDatabase(ctx, u)
	if err != nil || created {
		t.Fatalf("EnsureDatabase(existing) = %v, %v", created, err)
	}
}

func newUser(t testing.TB, db *store.DB, email string, role attune.Role) *attune.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), nil, store.NewUser{Email: email, Role: role, PasswordHash: "$argon2id$x"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	admin := newUser(t, db, "admin@example.org", attune.RoleAdmin)
	ann := newUser(t, db, "ann@example.org", attune.RoleAnnotator)

	if _, err := db.CreateUser(ctx, nil, store.NewUser{Email: "ann@example.org", Role: attune.RoleLead, PasswordHash: "x"}); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("duplicate email: %v, want ErrConflict", err)
	}
	if _, err := db.FindUserByEmail(ctx, "nobody@example.org"); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("missing user: %v, want ErrNotFound", err)
	}
	if _, err := db.SetUserRole(ctx, &admin.ID, ann.ID, attune.RoleLead); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindUserByID(ctx, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != attune.RoleLead {
		t.Fatalf("role = %s, want lead", got.Role)
	}
	// The last enabled admin can be neither demoted nor disabled.
	if _, err := db.SetUserRole(ctx, &admin.ID, admin.ID, attune.RoleLead); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("demote last admin: %v, want ErrConflict", err)
	}
	if err := db.SetUserDisabled(ctx, &admin.ID, admin.ID, true); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("disable last admin: %v, want ErrConflict", err)
	}
	if err := db.SetUserDisabled(ctx, &admin.ID, ann.ID, true); err != nil {
		t.Fatal(err)
	}
	got, err = db.FindUserByID(ctx, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Disabled() {
		t.Fatal("user not disabled")
	}
	var actions []string
	rows, err := db.Pool().Query(ctx, `SELECT action FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		actions = append(actions, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "user.create,user.create,user.set_role,user.disable"
	if strings.Join(actions, ",") != want {
		t.Fatalf("audit log = %v, want %s", actions, want)
	}
	// The audit log is append-only.
	if _, err := db.Pool().Exec(ctx, `DELETE FROM audit_events`); err == nil {
		t.Fatal("deleting from the audit log succeeded")
	}
	var raters int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM raters WHERE kind = 'human'`).Scan(&raters); err != nil {
		t.Fatal(err)
	}
	if raters != 2 {
		t.Fatalf("%d human raters, want one per user", raters)
	}
}

func TestEnsureAdminOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	nu := store.NewUser{Email: "admin@attune.local", PasswordHash: "x"}
	errs := make(chan error, 4)
	created := make(chan bool, 4)
	for range 4 {
		go func() {
			c, err := db.EnsureAdmin(ctx, nu)
			errs <- err
			created <- c
		}()
	}
	n := 0
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if <-created {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d admins created by concurrent starts, want 1", n)
	}
}

func TestDeleteExpiredSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	_, err := db.Pool().Exec(ctx, `INSERT INTO sessions (token, data, expiry) VALUES
		('old', '\x00', now() - interval '1 minute'), ('live', '\x00', now() + interval '1 hour')`)
	if err != nil {
		t.Fatal(err)
	}
	n, err := db.DeleteExpiredSessions(ctx)
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpiredSessions = %d, %v; want 1", n, err)
	}
	var left string
	if err := db.Pool().QueryRow(ctx, `SELECT string_agg(token, ',') FROM sessions`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != "live" {
		t.Fatalf("sessions left: %q, want live", left)
	}
}
