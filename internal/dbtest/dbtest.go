// Package dbtest gives tests real PostgreSQL databases: each test gets its
// own, cloned from a template that is migrated once per test process, and
// dropped when the test ends. Tests using it may run in parallel.
//
// A package using it runs its tests through Main:
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
//
// The server is ATTUNE_TEST_DATABASE_URL (default: the local server's
// postgres database). Without a reachable server the tests are skipped,
// except where CI=true, where they fail.
package dbtest

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/store"
)

const defaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Names carry their creation time so that databases left behind by a killed
// test process can be recognised and dropped by a later run.
const prefix = "attune_test_"

var (
	mu        sync.Mutex // CREATE DATABASE … TEMPLATE needs the template idle
	template  string
	setupErr  error
	setupOnce sync.Once
	counter   atomic.Int64
	runID     = fmt.Sprintf("%d_%d", time.Now().Unix(), os.Getpid())
)

// AdminURL is the URL of the server's maintenance database the helpers use.
func AdminURL() string {
	if u := os.Getenv("ATTUNE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultAdminURL
}

// Main runs the tests and drops this process's template afterwards.
func Main(m *testing.M) int {
	code := m.Run()
	if template != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx, template); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
		}
	}
	return code
}

// URLFor returns the URL of database name on the test server.
func URLFor(name string) string {
	u, err := url.Parse(AdminURL())
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewURL returns the URL of a fresh migrated database for this test.
func NewURL(t testing.TB) string {
	t.Helper()
	setupOnce.Do(func() { setupErr = setup() })
	if setupErr != nil {
		unavailable(t, setupErr)
	}
	name := newName()
	mu.Lock()
	err := exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
	mu.Unlock()
	if err != nil {
		t.Fatalf("dbtest: clone template: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(context.Background(), name); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return URLFor(name)
}

// New returns an open store on a fresh migrated database for this test.
func New(t testing.TB) *store.DB {
	t.Helper()
	u := NewURL(t)
	db, err := store.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	t.Cleanup(db.Close) // runs before the drop registered by NewURL
	return db
}

// EmptyURL returns the URL of a fresh database with no schema at all.
func EmptyURL(t testing.TB) string {
	t.Helper()
	u := MissingURL(t)
	if err := exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{dbName(u)}.Sanitize()); err != nil {
		unavailable(t, err)
	}
	return u
}

// MissingURL returns the URL of a database that does not exist yet; if the
// test creates it, it is dropped when the test ends.
func MissingURL(t testing.TB) string {
	t.Helper()
	name := newName()
	t.Cleanup(func() {
		if err := drop(context.Background(), name); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return URLFor(name)
}

func dbName(u string) string {
	p, _ := url.Parse(u)
	return strings.TrimPrefix(p.Path, "/")
}

func newName() string {
	return fmt.Sprintf("%s%s_%d", prefix, runID, counter.Add(1))
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("dbtest: PostgreSQL is required where CI=true: %v", err)
	}
	t.Skipf("dbtest: PostgreSQL not available (%v); set ATTUNE_TEST_DATABASE_URL", err)
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dropStale(ctx)
	name := prefix + runID + "_template"
	if err := exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	template = name
	db, err := store.Open(ctx, URLFor(name))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx, io.Discard)
}

// dropStale drops test databases more than two hours old: what a killed
// test process left behind.
func dropStale(ctx context.Context) {
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return
	}
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'attune\_test\_%'`)
	if err != nil {
		conn.Close(ctx)
		return
	}
	names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	conn.Close(ctx)
	cutoff := time.Now().Add(-2 * time.Hour).Unix()
	for _, n := range names {
		stamp, _, _ := strings.Cut(strings.TrimPrefix(n, prefix), "_")
		if sec, err := strconv.ParseInt(stamp, 10, 64); err == nil && sec < cutoff {
			drop(ctx, n)
		}
	}
}

func exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func drop(ctx context.Context, name string) error {
	if err := exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
