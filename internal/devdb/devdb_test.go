package devdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePrograms makes dir hold an initdb and a pg_ctl that say they are
// PostgreSQL version.
func fakePrograms(t *testing.T, dir string, version int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "pg_ctl"} {
		script := fmt.Sprintf("#!/bin/sh\necho '%s (PostgreSQL) %d.3'\n", name, version)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	fakePrograms(t, filepath.Join(root, "lib", "9", "bin"), 9)
	fakePrograms(t, filepath.Join(root, "lib", "16", "bin"), 16)
	fakePrograms(t, filepath.Join(root, "lib", "15", "bin"), 15)
	fakePrograms(t, filepath.Join(root, "path"), 14)
	os.MkdirAll(filepath.Join(root, "empty"), 0o755)
	dirs := []string{filepath.Join(root, "lib", "*", "bin")}
	for _, tc := range []struct {
		name    string
		path    string
		dirs    []string
		want    int
		version int    // found
		err     string // or this error
	}{
		{"newest of the usual places", "", dirs, 0, 16, ""},
		{"by number, not by name", filepath.Join(root, "empty"), dirs, 0, 16, ""},
		{"PATH first", filepath.Join(root, "path"), dirs, 0, 14, ""},
		{"the cluster's version", filepath.Join(root, "path"), dirs, 15, 15, ""},
		{"no program of the cluster's version", "", dirs, 13, 0, "made by PostgreSQL 13, and only PostgreSQL 16"},
		{"none", filepath.Join(root, "empty"), nil, 0, 0, ErrNotInstalled.Error()},
		{"relative PATH entries are not trusted", "path", nil, 0, 0, ErrNotInstalled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(tc.path, tc.dirs, tc.want)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Find = %+v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got.Version != tc.version {
				t.Fatalf("Find = %+v, %v; want version %d", got, err, tc.version)
			}
		})
	}
	if _, err := Find("", nil, 0); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Find with nowhere to look: %v", err)
	}
}

// A postmaster.pid naming a live postgres is another server on the same
// cluster: refused, saying how to stop it. One naming a dead process, or a
// live one that is not postgres (its number reused), is stale.
func TestRefuseRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc here")
	}
	// argv[0] is set by the exec itself, so /proc shows it as soon as Start
	// returns; a shell's `exec -a` would leave a moment in which the process
	// is still bash.
	live := exec.Command("sleep", "60")
	live.Args[0] = "postgres-of-another-run"
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		pid       int
		refused   bool
		fileStays bool
	}{
		{"live postgres", live.Process.Pid, true, true},
		{"dead process", dead.Process.Pid, false, true},
		{"live process that is not postgres", os.Getpid(), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "postmaster.pid")
			os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n%s\n", tc.pid, dir)), 0o600)
			c := &Cluster{dataDir: dir, progs: Programs{Bin: "/usr/lib/postgresql/15/bin"}, log: discard()}
			err := c.refuseRunning()
			if tc.refused != (err != nil) {
				t.Fatalf("refuseRunning: %v", err)
			}
			if err != nil && (!strings.Contains(err.Error(), fmt.Sprint(tc.pid)) || !strings.Contains(err.Error(), "pg_ctl -D "+dir+" stop")) {
				t.Errorf("the refusal does not name the server and how to stop it: %v", err)
			}
			if _, err := os.Stat(pidFile); (err == nil) != tc.fileStays {
				t.Errorf("postmaster.pid there: %v, want %v", err == nil, tc.fileStays)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	root := t.TempDir()
	closed := filepath.Join(root, "closed")
	open := filepath.Join(root, "open")
	os.Mkdir(closed, 0o700)
	os.Mkdir(open, 0o711)
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	u := &osUser{name: "someone", uid: 65530, gid: 65530}
	if dir, ok := unreachable(filepath.Join(closed, "pgdata"), u); ok || dir != closed {
		t.Errorf("through a 0700 directory: %q, %v", dir, ok)
	}
	if dir, ok := unreachable(filepath.Join(open, "pgdata"), u); !ok {
		t.Errorf("through 0711 directories: stopped at %q", dir)
	}
}
