package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/config"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(asAttune) != "" {
		if u := os.Getenv(testDefaultDatabaseURL); u != "" {
			defaultDatabaseURL = u
		}
		main() // a child process started by startAttune: os.Args are attune's
		os.Exit(0)
	}
	os.Exit(dbtest.Main(m))
}

// envFor returns a getenv for a test: the database and a free port, plus
// any extra settings.
func envFor(dbURL string, extra ...string) func(string) string {
	m := map[string]string{"DATABASE_URL": dbURL, "ATTUNE_ADDR": "127.0.0.1:0", "ATTUNE_LOG_FORMAT": "text"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

// runCmd runs one command to completion and returns its output.
func runCmd(t *testing.T, getenv func(string) string, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(context.Background(), args, getenv, strings.NewReader(stdin), &out, &errOut)
	return out.String() + errOut.String(), err
}

// served is a running `attune serve`.
type served struct {
	lines  chan string
	done   chan error
	cancel context.CancelFunc
	base   string
	output []string
}

// serve starts `attune serve` in-process and waits, by reading its output,
// until it says where it serves.
func serve(t *testing.T, getenv func(string) string, flags ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &served{lines: make(chan string, 100), done: make(chan error, 1), cancel: cancel}
	go func() {
		err := run(ctx, append([]string{"serve"}, flags...), getenv, strings.NewReader(""), pw, io.Discard)
		pw.CloseWithError(errors.New("serve ended"))
		s.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() { s.stop(t) })
	for line := range s.lines {
		s.output = append(s.output, line)
		if after, ok := strings.CutPrefix(line, "attune is serving at "); ok {
			s.base = after
			return s
		}
	}
	t.Fatalf("serve ended without serving: %v; output:\n%s", <-s.done, strings.Join(s.output, "\n"))
	return nil
}

func (s *served) stop(t *testing.T) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve returned %v after SIGTERM-like cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("serve did not shut down")
	}
}

func TestServeFromNothing(t *testing.T) {
	t.Parallel()
	// The database does not exist yet: serve creates it, migrates it,
	// creates the first admin and says how to sign in.
	dbURL := dbtest.MissingURL(t)
	s := serve(t, envFor(dbURL))
	out := strings.Join(s.output, "\n")
	m := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "admin@attune.local") || !strings.Contains(out, s.base+"/login") {
		t.Fatalf("no sign-in instructions in output:\n%s", out)
	}

	get := func(path string) int {
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("/healthz") != 200 || get("/readyz") != 200 {
		t.Fatal("health or readiness probe failed")
	}

	// Signing in with the printed password works.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(url.Values{"email": {"admin@attune.local"}, "password": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<bdi>Admin</bdi> · admin") {
		t.Fatalf("sign-in with the printed password: %d\n%.500s", resp.StatusCode, body)
	}
	s.stop(t)

	// A second start finds the admin and prints no password.
	s2 := serve(t, envFor(dbURL))
	if strings.Contains(strings.Join(s2.output, "\n"), "password:") {
		t.Fatal("second start printed a password again")
	}
}

func TestServeDemoOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.MissingURL(t)
	s := serve(t, envFor(dbURL), "--demo")
	out := strings.Join(s.output, "\n")
	for _, want := range []string{"A demo is set up", "lead@attune.local", "annotator1@attune.local", "annotator2@attune.local"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The demo judge, backed by the fake model attune serves itself, works
	// a run of each of its two prompt versions over every demo project
	// with no API key.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waiter, err := judge.NewRunner(db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		runs, err := db.ListRuns(ctx, p.ID)
		if err != nil || len(runs) != 2 {
			t.Fatalf("%s: runs %v, %v", p.Name, runs, err)
		}
		for _, run := range runs {
			done, err := waiter.Wait(ctx, run.ID)
			if err != nil || done.Status != attune.RunCompleted {
				t.Fatalf("%s: demo run ended %v (%v)", p.Name, done, err)
			}
			pr, err := db.RunProgress(ctx, done)
			if err != nil || pr.ItemsDone != p.Items || pr.Errors != 0 {
				t.Fatalf("%s: demo run progress %+v (%v)", p.Name, pr, err)
			}
		}
	}
	s.stop(t)
	// The next start finds a database in use and leaves it alone.
	s2 := serve(t, envFor(dbURL), "--demo")
	if strings.Contains(strings.Join(s2.output, "\n"), "demo") {
		t.Fatal("the demo was set up again on a database in use")
	}
	out2, err := runCmd(t, envFor(dbURL), "", "project", "list")
	if err != nil || strings.Count(out2, "Demo:") != 3 {
		t.Fatalf("project list after the demo: %v\n%s", err, out2)
	}
}

func TestServeRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Pool().Exec(context.Background(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, envFor(dbURL), "", "serve")
	if err == nil || !strings.Contains(err.Error(), "newer attune") {
		t.Fatalf("serve on a newer database: err %v, output %s", err, out)
	}
}

func TestServeChosenAdminPassword(t *testing.T) {
	t.Parallel()
	s := serve(t, envFor(dbtest.NewURL(t), "ATTUNE_ADMIN_EMAIL", "boss@example.org", "ATTUNE_ADMIN_PASSWORD", "a-chosen-password"))
	out := strings.Join(s.output, "\n")
	if strings.Contains(out, "a-chosen-password") {
		t.Fatal("the chosen admin password was printed")
	}
	if !strings.Contains(out, "boss@example.org") || !strings.Contains(out, "ATTUNE_ADMIN_PASSWORD") {
		t.Fatalf("output does not say how to sign in:\n%s", out)
	}
}

func TestUserCommands(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	out, err := runCmd(t, env, "a-long-password\n", "user", "add", "--email", "Lee@Example.org", "--role", "lead", "--name", "Lee", "--password-stdin")
	if err != nil || !strings.Contains(out, "added lee@example.org as lead") {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	out, err = runCmd(t, env, "", "user", "add", "--email", "ann@example.org", "--role", "annotator")
	if err != nil || !regexp.MustCompile(`password: \S{23} \(shown only once\)`).MatchString(out) {
		t.Fatalf("user add with a generated password: %v\n%s", err, out)
	}
	if _, err := runCmd(t, env, "short\n", "user", "add", "--email", "x@example.org", "--role", "lead", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("short password accepted: %v", err)
	}
	if _, err := runCmd(t, env, "a-long-password\n", "user", "add", "--email", "lee@example.org", "--role", "lead", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate accepted: %v", err)
	}
	if _, err := runCmd(t, env, "", "user", "add", "--email", "y@example.org", "--role", "king"); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("bad role accepted: %v", err)
	}
	if _, err := runCmd(t, env, "", "user", "set-role", "--email", "ann@example.org", "--role", "lead"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, env, "", "user", "disable", "--email", "lee@example.org"); err != nil {
		t.Fatal(err)
	}
	// A reset says what it does besides: sessions, lockout, API tokens.
	if _, err := runCmd(t, env, "", "token", "create", "--email", "ann@example.org", "--name", "script"); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, env, "new-long-password\n", "user", "set-password", "--email", "ann@example.org", "--password-stdin")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"password of ann@example.org changed", "every browser session of the account has ended",
		"lockout cleared", "API tokens: 1 still works (kept"} {
		if !strings.Contains(out, want) {
			t.Errorf("set-password output lacks %q:\n%s", want, out)
		}
	}
	out, err = runCmd(t, env, "newer-long-password\n", "user", "set-password", "--email", "ann@example.org", "--password-stdin", "--revoke-tokens")
	if err != nil || !strings.Contains(out, "API tokens: 1 revoked") {
		t.Fatalf("set-password --revoke-tokens: %v\n%s", err, out)
	}
	// A read-only token says so in the list.
	if _, err := runCmd(t, env, "", "token", "create", "--email", "ann@example.org", "--name", "dashboard", "--read-only"); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, env, "", "token", "list", "--email", "ann@example.org")
	if err != nil || !regexp.MustCompile(`dashboard\s+att_\S+\s+\S+\s+read-only\s+active`).MatchString(out) ||
		!regexp.MustCompile(`script\s+att_\S+\s+\S+\s+read-write\s+revoked`).MatchString(out) {
		t.Fatalf("token list: %v\n%s", err, out)
	}
	out, err = runCmd(t, env, "", "user", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`ann@example.org\s+lead\s+active`),
		regexp.MustCompile(`lee@example.org\s+Lee\s+lead\s+disabled`),
	} {
		if !want.MatchString(out) {
			t.Errorf("user list lacks %s:\n%s", want, out)
		}
	}
	if _, err := runCmd(t, env, "", "user", "disable", "--email", "nobody@example.org"); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Fatalf("disable of a missing account: %v", err)
	}
}

func TestMigrateCommands(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.MissingURL(t))
	out, err := runCmd(t, env, "", "migrate", "up")
	if err != nil || !strings.Contains(out, "schema at version") {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	out, err = runCmd(t, env, "", "migrate", "status")
	if err != nil || !strings.Contains(out, "00001_schema.sql") || !strings.Contains(out, "applied") {
		t.Fatalf("migrate status: %v\n%s", err, out)
	}
	if out, err = runCmd(t, env, "", "migrate", "down"); err != nil {
		t.Fatalf("migrate down: %v\n%s", err, out)
	}
	out, _ = runCmd(t, env, "", "migrate", "status")
	if !strings.Contains(out, "pending") {
		t.Fatalf("after down, status shows nothing pending:\n%s", out)
	}
	if _, err := runCmd(t, env, "", "migrate", "sideways"); !errors.Is(err, errUsage) {
		t.Fatalf("migrate sideways: %v, want a usage error", err)
	}
}

func TestHelpDocumentsEverything(t *testing.T) {
	t.Parallel()
	out, err := runCmd(t, envFor(""), "", "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range config.Vars {
		if !strings.Contains(out, v.Name) {
			t.Errorf("help lacks %s", v.Name)
		}
	}
	for _, c := range []string{"serve", "migrate up|down|status", "user add", "version", "help"} {
		if !strings.Contains(out, c) {
			t.Errorf("help lacks %q", c)
		}
	}
	out, err = runCmd(t, envFor(""), "", "help", "serve")
	if err != nil || !strings.Contains(out, "-addr") {
		t.Fatalf("help serve: %v\n%s", err, out)
	}
	out, _ = runCmd(t, envFor(""), "", "help", "user")
	for _, f := range []string{"-email", "-role", "-password-stdin", "-name"} {
		if !strings.Contains(out, f) {
			t.Errorf("help user lacks %s", f)
		}
	}
	if _, err := runCmd(t, envFor(""), "", "frobnicate"); !errors.Is(err, errUsage) {
		t.Fatalf("unknown command: %v", err)
	}
	if _, err := runCmd(t, envFor(""), ""); !errors.Is(err, errUsage) {
		t.Fatalf("no command: %v", err)
	}
	out, err = runCmd(t, envFor(""), "", "version")
	if err != nil || !strings.HasPrefix(out, "attune ") {
		t.Fatalf("version: %v %q", err, out)
	}
}

func TestBadConfigNamesTheVariable(t *testing.T) {
	t.Parallel()
	_, err := runCmd(t, envFor(dbtest.NewURL(t), "ATTUNE_SESSION_LIFETIME", "forever"), "", "serve")
	if err == nil || !strings.Contains(err.Error(), "ATTUNE_SESSION_LIFETIME") {
		t.Fatalf("serve with a bad setting: %v", err)
	}
}

// TestUserUnlock: `attune user unlock` forgives the failed sign-ins that
// lock an account, and the audit log says so.
func TestUserUnlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	if _, err := runCmd(t, env, "", "user", "add", "--email", "ann@example.org", "--role", "annotator"); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lim := store.SignInLimits{Window: time.Hour, PerAccount: 3, PerAddressAccount: 3, PerAddress: 100}
	for range 3 {
		st, err := db.StartSignIn(ctx, "ann@example.org", "192.0.2.1", lim)
		if err != nil || st.Verdict != store.SignInAllowed {
			t.Fatalf("%+v %v", st, err)
		}
		if err := db.SignInFailed(ctx, st.Attempt); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := db.StartSignIn(ctx, "ann@example.org", "192.0.2.2", lim); err != nil || st.Verdict != store.SignInLocked {
		t.Fatalf("before unlock: %+v %v", st, err)
	}
	out, err := runCmd(t, env, "", "user", "unlock", "--email", "Ann@Example.org")
	if err != nil || !strings.Contains(out, "sign-in lock of ann@example.org cleared (3 failed sign-ins forgiven)") {
		t.Fatalf("user unlock: %v\n%s", err, out)
	}
	st, err := db.StartSignIn(ctx, "ann@example.org", "192.0.2.2", lim)
	if err != nil || st.Verdict != store.SignInAllowed {
		t.Fatalf("after unlock: %+v %v", st, err)
	}
	var details string
	if err := db.Pool().QueryRow(ctx, `SELECT details::text FROM audit_events WHERE action = 'user.clear_sign_in_lock' AND subject = 'ann@example.org' AND actor_id IS NULL`).Scan(&details); err != nil {
		t.Fatalf("no audit event of the unlock: %v", err)
	}
	if !strings.Contains(details, `"failed_sign_ins_forgiven": "3"`) {
		t.Fatalf("audit details %s", details)
	}
	if _, err := runCmd(t, env, "", "user", "unlock"); !errors.Is(err, errUsage) {
		t.Fatalf("unlock without --email: %v", err)
	}
	if _, err := runCmd(t, env, "", "user", "unlock", "--email", "nobody@example.org"); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Fatalf("unlock of a missing account: %v", err)
	}
}

// mustRun returns a runner of commands that ends the test on the first
// that fails; a command reading a password reads a-long-password.
func mustRun(t *testing.T, getenv func(string) string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, getenv, "a-long-password\n", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
}

// newPilot sets up, on the command line, the project most command tests
// start from: lee@example.org leads "Pilot" (empathetic-dialogue@2,
// overlap 2), the annotators are its members, and items (JSON Lines) are
// imported into it. Every account's password is a-long-password.
func newPilot(t *testing.T, getenv func(string) string, items string, annotators ...string) {
	t.Helper()
	must := mustRun(t, getenv)
	must("user", "add", "--email", "lee@example.org", "--role", "lead", "--password-stdin")
	for _, email := range annotators {
		must("user", "add", "--email", email, "--role", "annotator", "--password-stdin")
	}
	must("project", "create", "--name", "Pilot", "--rubric", "empathetic-dialogue@2", "--overlap", "2", "--lead", "lee@example.org")
	for _, email := range annotators {
		must("project", "add-member", "--project", "Pilot", "--email", email)
	}
	data := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(data, []byte(items), 0o644); err != nil {
		t.Fatal(err)
	}
	must("import", "--project", "Pilot", data)
}

// openPilot opens the store over dbURL and finds newPilot's project.
func openPilot(t *testing.T, dbURL string) (*store.DB, *attune.Project) {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	p, err := db.FindProjectByName(context.Background(), "Pilot")
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}

// twoReplies are the two items the gold and settling tests label.
const twoReplies = `{"id":"r1","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"My exams are soon and I panic."},{"role":"assistant","content":"Exam panic is common."}]}
`

// labelEach gives each person (by email), in turn, every item the project
// hands them, until it has none left, and has label answer it: label
// writes the person's answers or gives the item back.
func labelEach(t *testing.T, db *store.DB, p *attune.Project, emails []string, label func(person int, u *attune.User, a *attune.Assignment, it *attune.Item)) {
	t.Helper()
	ctx := context.Background()
	for i, email := range emails {
		u, err := db.FindUserByEmail(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		for {
			a, err := db.NextAssignment(ctx, p.ID, u.ID)
			if errors.Is(err, attune.ErrNoWork) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			it, err := db.FindItem(ctx, p.ID, a.ItemID)
			if err != nil {
				t.Fatal(err)
			}
			label(i, u, a, it)
		}
	}
}
