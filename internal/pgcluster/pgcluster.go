// Package pgcluster builds throwaway PostgreSQL servers for tests of attune
// as operators run it: a primary, streaming standbys cloned from it with
// pg_basebackup, and PgBouncer in front. Each server runs from the
// machine's own server programs in a temporary directory, listens on a
// free loopback port only, and is killed and removed when the test ends.
//
// PostgreSQL refuses to run as root; under root (as on CI) the servers run
// as the postgres account that PostgreSQL's packages create. Without the
// programs the tests are skipped, except where CI=true, where they fail.
package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/devdb"
)

// Server is one PostgreSQL server (or PgBouncer) started by a test.
type Server struct {
	Name string // the standby's name in synchronous_standby_names; "primary" for a primary
	Port int
	bin  string
	dir  string // the data directory
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has ended
	t    testing.TB
}

// Options shape a primary.
type Options struct {
	// SyncStandby names the standby every commit waits for
	// (synchronous_standby_names); empty for asynchronous replication.
	SyncStandby string
}

// unavailable skips the test, or fails it on CI, where everything must run.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgcluster: %s (CI=true: the test must run here)", why)
	}
	t.Skipf("pgcluster: %s", why)
}

// owner is the account the servers run as: postgres under root, else the
// current user (nil).
func owner(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		unavailable(t, "running as root and there is no postgres account to run PostgreSQL as")
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// baseDir makes the test's directory, which the servers' account may pass
// through, and removes it when the test ends (after the servers, whose
// cleanups run first).
func baseDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "attune-pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ownedDir makes an empty directory the servers' account owns.
func ownedDir(t testing.TB, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if c := owner(t); c != nil {
		if err := os.Chown(path, int(c.Uid), int(c.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// FreePort returns a loopback TCP port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// programs finds the server programs, newest version first.
func programs(t testing.TB) string {
	t.Helper()
	p, err := devdb.Find(os.Getenv("PATH"), devdb.UsualDirs, 0)
	if err != nil {
		unavailable(t, err.Error())
	}
	for _, prog := range []string{"pg_basebackup", "postgres"} {
		if _, err := os.Stat(filepath.Join(p.Bin, prog)); err != nil {
			unavailable(t, prog+" is not installed beside initdb in "+p.Bin)
		}
	}
	return p.Bin
}

// command runs a program as the servers' account, in a process group of
// its own so that Kill reaches the server and every backend it forked.
func command(t testing.TB, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: owner(t)}
	return cmd
}

func runProgram(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := command(t, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("pgcluster: %s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// NewPrimary initialises a cluster (user postgres, trust on loopback,
// replication allowed) and starts it.
func NewPrimary(t testing.TB, o Options) *Server {
	t.Helper()
	bin := programs(t)
	base := baseDir(t)
	s := &Server{Name: "primary", Port: FreePort(t), bin: bin, dir: filepath.Join(base, "primary"), t: t}
	ownedDir(t, s.dir)
	runProgram(t, filepath.Join(bin, "initdb"), "-D", s.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	// fsync is off: the tests kill processes, not machines, and what a
	// killed server wrote is in the kernel's cache all the same. A commit
	// still waits for the synchronous standby to have the WAL.
	s.appendConf(fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = ''
fsync = off
shared_buffers = 16MB
max_connections = 80
max_wal_senders = 5
wal_keep_size = '64MB'
synchronous_commit = on
synchronous_standby_names = '%s'
`, s.Port, o.SyncStandby))
	s.start()
	return s
}

// NewStandby clones the primary with pg_basebackup -R into a standby
// named name that streams from it, starts it and waits until the primary
// sees it streaming, and synchronous when the primary's
// synchronous_standby_names lists it.
func (p *Server) NewStandby(t testing.TB, name string) *Server {
	t.Helper()
	s := &Server{Name: name, Port: FreePort(t), bin: p.bin, dir: filepath.Join(filepath.Dir(p.dir), name), t: t}
	ownedDir(t, s.dir)
	runProgram(t, filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-D", s.dir, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	// The walreceiver introduces itself by cluster_name, the name
	// synchronous_standby_names lists. Promoted, the standby waits for no
	// standby of its own.
	s.appendConf(fmt.Sprintf(`
port = %d
cluster_name = '%s'
synchronous_standby_names = ''
hot_standby = on
`, s.Port, name))
	s.start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var n int
		// A standby the primary waits for counts as synchronous only once
		// it has reported a flush position; until then it reads "async",
		// and a commit made then would not wait for it.
		err := p.queryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'
			AND (sync_state IN ('sync', 'quorum') OR position($1 in current_setting('synchronous_standby_names')) = 0)`, name).Scan(&n)
		if err == nil && n == 1 {
			return s
		}
		if ctx.Err() != nil {
			t.Fatalf("pgcluster: standby %s is not streaming after 30 s (%v):\n%s", name, err, s.Log())
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-s.done:
			t.Fatalf("pgcluster: standby %s ended:\n%s", name, s.Log())
		}
	}
}

func (s *Server) appendConf(text string) {
	s.t.Helper()
	f, err := os.OpenFile(filepath.Join(s.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		s.t.Fatal(err)
	}
}

// start runs the server and waits until it accepts connections.
func (s *Server) start() {
	t := s.t
	t.Helper()
	s.log = s.dir + ".log"
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = command(t, filepath.Join(s.bin, "postgres"), "-D", s.dir)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("pgcluster: start %s: %v", s.Name, err)
	}
	s.done = make(chan struct{})
	go func() {
		s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	t.Cleanup(s.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pgcluster: %s does not accept connections after 30 s (%v):\n%s", s.Name, err, s.Log())
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-s.done:
			t.Fatalf("pgcluster: %s ended at start:\n%s", s.Name, s.Log())
		}
	}
}

// URL is the connection URL of database db on this server alone.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Log is what the server wrote to its log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// Kill ends the server and every backend at once with SIGKILL, as a
// machine that loses its power would, and waits until they are gone.
// Killing a server already ended does nothing.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	// The backends were the server's children in its group: make sure
	// none outlives it holding the port.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// Promote makes a standby a primary with pg_ctl promote and waits until
// it takes writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	runProgram(t, filepath.Join(s.bin, "pg_ctl"), "promote", "-D", s.dir, "-w", "-t", "30", "-s")
}

// Query runs one statement on database db of this server and returns the
// first column of each row as text.
func (s *Server) Query(t testing.TB, db, sql string, args ...any) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatalf("pgcluster: connect to %s: %v", s.Name, err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("pgcluster: %s on %s: %v", sql, s.Name, err)
	}
	var out []string
	for rows.Next() {
		var v *string
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("pgcluster: %s on %s: %v", sql, s.Name, err)
		}
		if v != nil {
			out = append(out, *v)
		} else {
			out = append(out, "")
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("pgcluster: %s on %s: %v", sql, s.Name, err)
	}
	return out
}

// queryRow runs one query on the server's postgres database.
func (s *Server) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return errRow{err}
	}
	return closingRow{conn: conn, ctx: ctx, row: conn.QueryRow(ctx, sql, args...)}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type closingRow struct {
	conn *pgx.Conn
	ctx  context.Context
	row  pgx.Row
}

func (r closingRow) Scan(dest ...any) error {
	defer r.conn.Close(r.ctx)
	return r.row.Scan(dest...)
}

// PgBouncer is Debian's pgbouncer started in front of a server.
type PgBouncer struct {
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// NewPgBouncer starts pgbouncer in the pool mode given ("transaction" or
// "session") in front of every database of s, and waits until it answers.
// Without pgbouncer installed the test is skipped (failed on CI).
func (s *Server) NewPgBouncer(t testing.TB, mode string) *PgBouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
			if _, e := os.Stat(p); e == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		unavailable(t, "pgbouncer is not installed (apt-get install pgbouncer)")
	}
	b := &PgBouncer{Port: FreePort(t), dir: filepath.Join(filepath.Dir(s.dir), "pgbouncer")}
	ownedDir(t, b.dir)
	b.log = filepath.Join(b.dir, "pgbouncer.log")
	ini := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = 10
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = %s
`, s.Port, b.Port, filepath.Join(b.dir, "users.txt"), mode, b.log)
	for name, text := range map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"} {
		p := filepath.Join(b.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := owner(t); c != nil {
			os.Chown(p, int(c.Uid), int(c.Gid))
		}
	}
	b.cmd = command(t, bin, filepath.Join(b.dir, "pgbouncer.ini"))
	var out bytes.Buffer
	b.cmd.Stdout, b.cmd.Stderr = &out, &out
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("pgcluster: start pgbouncer: %v", err)
	}
	b.done = make(chan struct{})
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, b.URL("postgres")+"&default_query_exec_mode=simple_protocol")
		if err == nil {
			conn.Close(ctx)
			return b
		}
		if ctx.Err() != nil {
			log, _ := os.ReadFile(b.log)
			t.Fatalf("pgcluster: pgbouncer does not answer after 30 s (%v):\n%s%s", err, out.String(), log)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-b.done:
			log, _ := os.ReadFile(b.log)
			if len(log) == 0 {
				log = out.Bytes()
			}
			t.Fatalf("pgcluster: pgbouncer ended at start:\n%s", log)
		}
	}
}

// URL is the connection URL of database db through the pooler.
func (b *PgBouncer) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.Port, db)
}
