package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attune/attune/internal/devdb"
)

// testDefaultDatabaseURL, in a child's environment, replaces the default
// database address (see TestMain).
const testDefaultDatabaseURL = "ATTUNE_TEST_DEFAULT_DATABASE_URL"

// deadURL is a database URL at a local port where nothing answers.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "postgres://postgres@" + addr + "/attune?sslmode=disable"
}

// clusterProcesses lists the processes whose command line names dataDir:
// the postgres server of that cluster and its workers.
func clusterProcesses(dataDir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dataDir) {
			found = append(found, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	// postgres's workers rename themselves; the postmaster.pid names
	// the server, whose children they are.
	if b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")); err == nil {
		pid := strings.SplitN(string(b), "\n", 2)[0]
		if _, err := os.Stat("/proc/" + pid); err == nil {
			found = append(found, "postmaster pid "+pid)
		}
	}
	return found
}

// A newcomer's first `make run` where PostgreSQL is installed but nothing
// answers at the default address: attune makes a private cluster under
// .attune/, serves, prints the sign-ins after its start-up log and keeps
// them in a file only its owner may read; a Ctrl-C stops the app and the
// cluster; the next run reuses the cluster.
func TestServePrivateDatabaseFirstRun(t *testing.T) {
	progs, err := devdb.Find(os.Getenv("PATH"), devdb.UsualDirs, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL's server programs are required where CI=true: %v", err)
		}
		t.Skipf("no PostgreSQL server programs here: %v", err)
	}
	t.Logf("server programs: %s (PostgreSQL %d)", progs.Bin, progs.Version)
	// The working directory, made reachable for the postgres account the
	// server runs as when the test runs as root.
	work, err := os.MkdirTemp("", "attune-firstrun-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o755)
	t.Cleanup(func() { os.RemoveAll(work) })
	dataDir := filepath.Join(work, ".attune", "pgdata")
	dead := deadURL(t)
	// A test that fails half-way leaves no server running.
	t.Cleanup(func() {
		pid, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
		if err != nil {
			return
		}
		if lines := strings.Split(string(pid), "\n"); len(lines) > 4 && strings.HasPrefix(filepath.Base(lines[4]), "attune-pg-") {
			defer os.RemoveAll(lines[4]) // the socket directory
		}
		stop := exec.Command(filepath.Join(progs.Bin, "pg_ctl"), "-D", dataDir, "-m", "immediate", "stop")
		if os.Geteuid() == 0 {
			stop = exec.Command("runuser", "-u", "postgres", "--", stop.Path, "-D", dataDir, "-m", "immediate", "stop")
		}
		stop.Run()
	})

	var mu sync.Mutex
	var later []string // lines after "attune is serving at"
	// judgeCounted is sent to once River first reports the judge queue's
	// job counts after "attune is serving at": the demo's judge has
	// worked, and River has logged what it logs every 5s while it does.
	judgeCounted := make(chan struct{}, 1)
	start := func() (*exec.Cmd, []string, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "serve", "--demo", "--dev-dir", ".attune")
		cmd.Dir = work
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DATABASE_URL=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, asAttune+"=1", testDefaultDatabaseURL+"="+dead,
			"ATTUNE_ADDR=127.0.0.1:0", "ATTUNE_LOG_FORMAT=text")
		// One stream for both, as a terminal shows them, so that their
		// order is the order they were written in.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's process group
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		lines := make(chan string, 1000)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var out []string
		timeout := time.After(3 * time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("attune ended without serving:\n%s", strings.Join(out, "\n"))
				}
				out = append(out, line)
				if base, ok := strings.CutPrefix(line, "attune is serving at "); ok {
					mu.Lock()
					later = nil
					mu.Unlock()
					go func() {
						for line := range lines {
							mu.Lock()
							later = append(later, line)
							mu.Unlock()
							if strings.Contains(line, "Producer job counts") && strings.Contains(line, "queue=judge") {
								select {
								case judgeCounted <- struct{}{}:
								default:
								}
							}
						}
					}()
					return cmd, out, base
				}
			case <-timeout:
				t.Fatalf("attune did not serve within 3 minutes:\n%s", strings.Join(out, "\n"))
			}
		}
	}
	// stop is a Ctrl-C: SIGINT to the whole process group.
	stop := func(cmd *exec.Cmd) {
		t.Helper()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("attune exited with %v after Ctrl-C", err)
			}
		case <-time.After(90 * time.Second):
			t.Fatal("attune did not stop after Ctrl-C")
		}
		if ps := clusterProcesses(dataDir); len(ps) > 0 {
			t.Errorf("the cluster's server still runs after attune stopped: %q", ps)
		}
	}

	cmd, out, base := start()
	text := strings.Join(out, "\n")
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		t.Fatalf("no cluster under .attune/: %v\n%s", err, text)
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}

	// The sign-ins come after every start-up log line.
	lastLog, firstSignIn := -1, -1
	for i, line := range out {
		// River logs on goroutines of its own; start-up's lines are these.
		if strings.HasPrefix(line, "time=") && (strings.Contains(line, "msg=startup") || strings.Contains(line, "msg=serving") ||
			strings.Contains(line, "private database")) {
			lastLog = i
		}
		if firstSignIn < 0 && strings.Contains(line, "@attune.local") {
			firstSignIn = i
		}
	}
	if firstSignIn < 0 || lastLog < 0 || firstSignIn < lastLog {
		t.Fatalf("sign-ins (line %d) not after the start-up log (last at line %d):\n%s", firstSignIn, lastLog, text)
	}
	for _, want := range []string{"admin@attune.local", "lead@attune.local", "annotator1@attune.local", "annotator2@attune.local", "private database: started"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	kept := filepath.Join(work, ".attune", signInsFile)
	fi, err := os.Stat(kept)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", kept, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(kept)
	if !strings.Contains(string(b), "lead@attune.local") || !strings.Contains(string(b), "password: ") {
		t.Errorf("%s lacks the sign-ins:\n%s", kept, b)
	}
	// The sign-ins stay on screen while the demo's judge works: a few
	// lines at most follow them (River's job counts, every 5s), up to
	// River's first report of the judge's.
	select {
	case <-judgeCounted:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		so := strings.Join(later, "\n")
		mu.Unlock()
		t.Fatalf("River reported no judge job counts within 2 minutes of serving:\n%s", so)
	}
	mu.Lock()
	after := slices.Clone(later)
	mu.Unlock()
	if len(after) > 6 {
		t.Errorf("%d lines follow the sign-ins up to the judge's first job counts, scrolling them away:\n%s", len(after), strings.Join(after, "\n"))
	}
	stop(cmd)

	// The next run reuses the cluster and its data: no initdb, no new
	// sign-ins, and a word on where the first ones are.
	cmd, out, _ = start()
	text = strings.Join(out, "\n")
	if strings.Contains(text, "making a PostgreSQL cluster") || strings.Contains(text, "password:") {
		t.Errorf("the second run made a new cluster or new sign-ins:\n%s", text)
	}
	if !strings.Contains(text, ".attune/"+signInsFile) {
		t.Errorf("the second run does not say where the sign-ins are:\n%s", text)
	}
	stop(cmd)
}

// Where no PostgreSQL answers and none is installed, serve says in one
// screen how to get it, and nothing else.
func TestServeWithoutPostgreSQLSaysHowToGetIt(t *testing.T) {
	defer func(u string, dirs []string) { defaultDatabaseURL, pgSearchDirs = u, dirs }(defaultDatabaseURL, pgSearchDirs)
	defaultDatabaseURL, pgSearchDirs = deadURL(t), nil
	work := t.TempDir()
	getenv := func(k string) string {
		return map[string]string{"PATH": work, "ATTUNE_ADDR": "127.0.0.1:0", "ATTUNE_LOG_FORMAT": "text"}[k]
	}
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"serve", "--demo", "--dev-dir", filepath.Join(work, ".attune")}, getenv, strings.NewReader(""), &stdout, &stderr)
	if err == nil {
		t.Fatal("serve succeeded with no PostgreSQL")
	}
	msg := err.Error()
	for _, want := range []string{"apt-get install postgresql", "brew install postgresql", "docker compose up -d db", "DATABASE_URL="} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n > 24 {
		t.Errorf("the message is %d lines, more than a screen:\n%s", n, msg)
	}
	for _, bare := range []string{"dial error", "connection refused", "failed to connect"} {
		if strings.Contains(msg, bare) {
			t.Errorf("the message shows a bare connection error (%q):\n%s", bare, msg)
		}
	}
	if stdout.Len() > 0 || strings.Count(stderr.String(), "\n") > 1 {
		t.Errorf("more than the message was printed:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(work, ".attune")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".attune was made though no PostgreSQL is installed: %v", err)
	}

	// A DATABASE_URL that was set is never replaced by a private
	// cluster: where nothing answers, the error names it.
	dead := deadURL(t)
	getenv2 := func(k string) string {
		return map[string]string{"DATABASE_URL": dead, "ATTUNE_ADDR": "127.0.0.1:0", "ATTUNE_LOG_FORMAT": "text"}[k]
	}
	err = run(context.Background(), []string{"serve", "--demo", "--dev-dir", filepath.Join(work, ".attune")}, getenv2, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL ("+dead+")") {
		t.Errorf("an unanswered DATABASE_URL: %v", err)
	}
}
