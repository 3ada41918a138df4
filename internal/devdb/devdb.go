// Package devdb runs a private PostgreSQL cluster for a developer's first
// `make run`: when nothing answers at the default database address, the
// server programs of a PostgreSQL installed on the machine (initdb,
// pg_ctl) make a cluster in a directory of the working copy, serve it on a
// unix socket only, and stop it when attune stops.
package devdb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// UsualDirs are the places, besides PATH, where PostgreSQL's server
// programs are installed without being on PATH: Debian and Ubuntu's
// postgresql packages, the PGDG packages of Red Hat systems, and Homebrew's
// postgresql@N formulas on Apple silicon and Intel Macs.
var UsualDirs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/opt/homebrew/opt/postgresql@*/bin",
	"/usr/local/opt/postgresql@*/bin",
}

// ErrNotInstalled is returned by Find when no directory holds both initdb
// and pg_ctl.
var ErrNotInstalled = errors.New("PostgreSQL's server programs (initdb, pg_ctl) are not installed")

// HowToInstall is the one screen shown when no PostgreSQL answers and none
// is installed: the ways to get one, shortest first.
const HowToInstall = `attune needs PostgreSQL (version 13 or newer). Any one of these will do:

  Debian, Ubuntu   sudo apt-get install postgresql
  Fedora, RHEL     sudo dnf install postgresql-server
  macOS            brew install postgresql@16
  Docker           docker compose up -d db
                   then: DATABASE_URL='postgres://attune:attune@127.0.0.1:5433/attune?sslmode=disable' make run

With the server programs installed (the first three), 'make run' sets up a
private database in .attune/ by itself, no configuration needed; a server
already running on 127.0.0.1:5432 that lets the postgres user in is used as
it is. Or point DATABASE_URL at any PostgreSQL you have.`

// Answers reports whether a server accepts connections at the address of
// dbURL (a TCP host and port, or a unix socket directory; any of them
// where the URL names several). It does not authenticate: a server that
// answers but refuses attune is reported by the connection attempt that
// follows, with PostgreSQL's own words, as is a URL pgx cannot read.
func Answers(ctx context.Context, dbURL string) bool {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return true
	}
	addrs := []struct {
		host string
		port uint16
	}{{cfg.Host, cfg.Port}}
	for _, f := range cfg.Fallbacks {
		addrs = append(addrs, struct {
			host string
			port uint16
		}{f.Host, f.Port})
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	for _, a := range addrs {
		network, addr := "tcp", net.JoinHostPort(a.host, strconv.Itoa(int(a.port)))
		if strings.HasPrefix(a.host, "/") {
			network, addr = "unix", filepath.Join(a.host, fmt.Sprintf(".s.PGSQL.%d", a.port))
		}
		if c, err := d.DialContext(ctx, network, addr); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// Programs is a directory holding PostgreSQL's server programs and the
// major version they are.
type Programs struct {
	Bin     string
	Version int
}

// Find looks for initdb and pg_ctl in the directories of path (a PATH
// value), then in dirs (glob patterns, newest version first). With want
// above zero it returns the first of the major version want, so that a
// cluster made earlier is served by the programs that can read it; with
// none of that version it says which it found.
func Find(path string, dirs []string, want int) (Programs, error) {
	var cands []string
	for _, d := range filepath.SplitList(path) {
		if d != "" && filepath.IsAbs(d) {
			cands = append(cands, d)
		}
	}
	for _, pattern := range dirs {
		matches, _ := filepath.Glob(pattern)
		slices.SortFunc(matches, func(a, b string) int { return versionIn(b) - versionIn(a) })
		cands = append(cands, matches...)
	}
	var found []Programs
	seen := map[string]bool{}
	for _, d := range cands {
		if !isExec(filepath.Join(d, "initdb")) || !isExec(filepath.Join(d, "pg_ctl")) {
			continue
		}
		// A PATH entry is often a link farm (/usr/local/bin): name the
		// programs by their real directory, once.
		real, err := filepath.EvalSymlinks(filepath.Join(d, "pg_ctl"))
		if err != nil {
			continue
		}
		real = filepath.Dir(real)
		if seen[real] {
			continue
		}
		seen[real] = true
		v, err := majorVersion(filepath.Join(real, "pg_ctl"))
		if err != nil {
			continue
		}
		p := Programs{Bin: real, Version: v}
		if want <= 0 || v == want {
			return p, nil
		}
		found = append(found, p)
	}
	if len(found) == 0 {
		return Programs{}, ErrNotInstalled
	}
	var have []string
	for _, p := range found {
		have = append(have, fmt.Sprintf("%d (%s)", p.Version, p.Bin))
	}
	return Programs{}, fmt.Errorf("the private database was made by PostgreSQL %d, and only PostgreSQL %s is installed: install version %d's server programs, or remove the database directory to start afresh (its data is lost)",
		want, strings.Join(have, ", "), want)
}

var digits = regexp.MustCompile(`\d+`)

// versionIn is the version a directory such as /usr/lib/postgresql/16/bin
// or /opt/homebrew/opt/postgresql@15/bin is named for: the last number in
// the name of the directory holding bin.
func versionIn(dir string) int {
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	all := digits.FindAllString(filepath.Base(dir), -1)
	if len(all) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(all[len(all)-1])
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// majorVersion asks a program its version: "pg_ctl (PostgreSQL) 16.4".
func majorVersion(prog string) (int, error) {
	out, err := exec.Command(prog, "--version").Output()
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`\(PostgreSQL\) (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s --version: %q", prog, out)
	}
	return strconv.Atoi(string(m[1]))
}

// ClusterVersion is the major version of the cluster in dataDir, or 0 when
// there is none yet.
func ClusterVersion(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// Options say where the cluster lives and what runs it.
type Options struct {
	// DataDir is the cluster's directory, made by initdb on the first
	// start and reused after. Its parent holds the server's log.
	DataDir string
	// Programs are the server programs to run (see Find).
	Programs Programs
	// Log receives a line per step.
	Log *slog.Logger
}

// Cluster is a running private cluster.
type Cluster struct {
	// URL connects to the cluster's attune database as its superuser.
	URL string

	dataDir, sockDir, logPath string
	progs                     Programs
	owner                     *osUser
	log                       *slog.Logger
}

// osUser is the unprivileged account the server programs run as when
// attune runs as root.
type osUser struct {
	name     string
	uid, gid uint32
}

// dbUser is the cluster's superuser, the name attune connects as.
const dbUser = "attune"

// port only names the socket file: the cluster listens on no TCP port.
const port = 5432

// Start makes the cluster on its first use and starts it, listening only
// on a unix socket in a fresh directory of its own, and waits until it
// accepts connections. Stop it with Stop.
//
// initdb and postgres refuse to run as root. As root, Start runs them as
// the postgres account that PostgreSQL's packages create, as the
// distributions' own tools do, and gives it the cluster's directory;
// without that account it explains what to do instead.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	log := o.Log
	if log == nil {
		log = discard()
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dataDir: dataDir, progs: o.Programs, log: log,
		logPath: filepath.Join(filepath.Dir(dataDir), "postgres.log")}
	parentMode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		if c.owner, err = serverAccount(); err != nil {
			return nil, err
		}
		parentMode = 0o711 // the server's account passes through to the cluster
	}
	if err := os.MkdirAll(filepath.Dir(dataDir), parentMode); err != nil {
		return nil, fmt.Errorf("private database: %w", err)
	}
	if fi, err := os.Stat(filepath.Dir(dataDir)); c.owner != nil && err == nil && fi.Mode().Perm()&0o001 == 0 {
		// Made earlier for the sign-ins only: let the server's account
		// pass through (it may read nothing there).
		os.Chmod(filepath.Dir(dataDir), fi.Mode().Perm()|0o011)
	}
	if c.owner != nil {
		if dir, ok := unreachable(dataDir, c.owner); !ok {
			return nil, fmt.Errorf("private database: the server runs as the %q account (PostgreSQL refuses to run as root), and that account cannot enter %s: "+
				"let others pass through it (chmod o+x %s), or run attune from a directory they can reach, or as an ordinary user",
				c.owner.name, dir, dir)
		}
	}
	if err := c.initOnce(ctx); err != nil {
		return nil, err
	}
	if err := c.refuseRunning(); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		// A start cut short (Ctrl-C while waiting) may have left a server.
		if c.sockDir != "" {
			c.Stop()
		}
		return nil, err
	}
	return c, nil
}

// serverAccount is the account to run the server programs as under root.
func serverAccount() (*osUser, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New(`private database: attune runs as root, and PostgreSQL's server refuses to run as root.
It runs as the "postgres" account when there is one (PostgreSQL's packages
create it), but this machine has none. Either run 'make run' as an ordinary
user, or create the account (useradd --system --user-group postgres), or
point DATABASE_URL at a PostgreSQL server you have`)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("private database: the postgres account (uid %s) cannot run the server", u.Uid)
	}
	return &osUser{name: u.Username, uid: uint32(uid), gid: uint32(gid)}, nil
}

// unreachable reports the first directory on the way to p that u may not
// pass through, judged by its mode bits.
func unreachable(p string, u *osUser) (string, bool) {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return dir, false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok {
			perm := fi.Mode().Perm()
			var can bool
			switch {
			case st.Uid == u.uid:
				can = perm&0o100 != 0
			case st.Gid == u.gid:
				can = perm&0o010 != 0
			default:
				can = perm&0o001 != 0
			}
			if !can {
				return dir, false
			}
		}
		if dir == filepath.Dir(dir) {
			return "", true
		}
	}
}

// initOnce runs initdb when the cluster does not exist yet.
func (c *Cluster) initOnce(ctx context.Context) error {
	if v := ClusterVersion(c.dataDir); v != 0 {
		if v != c.progs.Version {
			return fmt.Errorf("private database: %s was made by PostgreSQL %d, and the programs found are version %d", c.dataDir, v, c.progs.Version)
		}
		return nil
	}
	if entries, err := os.ReadDir(c.dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("private database: %s is not empty and holds no PostgreSQL cluster (no PG_VERSION): move it away, and the next start makes a new one", c.dataDir)
	}
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return fmt.Errorf("private database: %w", err)
	}
	if err := c.give(c.dataDir); err != nil {
		return err
	}
	c.log.Info("private database: making a PostgreSQL cluster (first run only)", "dir", c.dataDir, "postgresql", c.progs.Version)
	out, err := c.command(ctx, "initdb", "-D", c.dataDir, "-U", dbUser, "-A", "trust", "-E", "UTF8", "--locale=C").CombinedOutput()
	if err != nil {
		return fmt.Errorf("private database: initdb failed (%v):\n%s", err, tail(out, 15))
	}
	return nil
}

// refuseRunning fails when the cluster's postmaster.pid names a live
// server: another attune in this directory uses it, or one that was
// killed left it running. A pid file left by a server that died is left
// for postgres, which replaces it.
func (c *Cluster) refuseRunning() error {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return nil
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	// Where /proc tells, a live process that is not postgres only reuses
	// the number of one that died.
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !bytes.Contains(cmd, []byte("postgres")) {
		c.log.Info("private database: removing a stale postmaster.pid", "pid", pid)
		return os.Remove(filepath.Join(c.dataDir, "postmaster.pid"))
	}
	stop := fmt.Sprintf("%s -D %s stop", filepath.Join(c.progs.Bin, "pg_ctl"), c.dataDir)
	if c.owner != nil {
		stop = "runuser -u " + c.owner.name + " -- " + stop
	}
	return fmt.Errorf(`private database: a PostgreSQL server (pid %d) is already running on %s.
Another attune in this directory is using it, or one that was killed left it
running. Stop that attune, or stop the server with:
  %s`, pid, c.dataDir, stop)
}

// start starts the server on a socket in a short new directory (socket
// paths are limited to about 100 bytes) and waits until it is ready.
func (c *Cluster) start(ctx context.Context) error {
	tmp := "/tmp"
	if fi, err := os.Stat(tmp); err != nil || !fi.IsDir() {
		tmp = os.TempDir()
	}
	sock, err := os.MkdirTemp(tmp, "attune-pg-")
	if err != nil {
		return fmt.Errorf("private database: %w", err)
	}
	c.sockDir = sock
	if err := c.give(sock); err != nil {
		return err
	}
	lf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("private database: %w", err)
	}
	lf.Close()
	if err := c.give(c.logPath); err != nil {
		return err
	}
	// pg_ctl hands -o to a shell; the socket directory is ours and has no
	// quote in it. -h '' listens on no TCP address at all.
	opts := fmt.Sprintf("-h '' -k '%s' -p %d", sock, port)
	out, err := c.command(ctx, "pg_ctl", "-D", c.dataDir, "-l", c.logPath, "-o", opts, "-w", "-t", "60", "-s", "start").CombinedOutput()
	if err != nil {
		logTail, _ := os.ReadFile(c.logPath)
		return fmt.Errorf("private database: pg_ctl start failed (%v): %s\nlast lines of %s:\n%s", err, bytes.TrimSpace(out), c.logPath, tail(logTail, 10))
	}
	c.URL = fmt.Sprintf("postgres://%s@/attune?host=%s&port=%d&sslmode=disable", dbUser, url.QueryEscape(sock), port)
	c.log.Info("private database: started", "dir", c.dataDir, "socket", sock, "log", c.logPath,
		"psql", fmt.Sprintf("psql -h %s -U %s attune", sock, dbUser))
	return nil
}

// Stop stops the server, letting it end its sessions (pg_ctl's fast mode),
// and removes its socket directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.command(ctx, "pg_ctl", "-D", c.dataDir, "-m", "fast", "-w", "-t", "55", "-s", "stop").CombinedOutput()
	os.RemoveAll(c.sockDir)
	if err != nil {
		return fmt.Errorf("private database: pg_ctl stop failed (%v): %s", err, bytes.TrimSpace(out))
	}
	c.log.Info("private database: stopped", "dir", c.dataDir)
	return nil
}

// command runs one of the server programs, as the server's account when
// attune is root, in a process group of its own so that a Ctrl-C meant
// for attune reaches the server only through Stop.
func (c *Cluster) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.progs.Bin, prog), args...)
	cmd.Dir = c.dataDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.owner != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.owner.uid, Gid: c.owner.gid, Groups: []uint32{}}
	}
	return cmd
}

// give makes p the server account's when attune is root.
func (c *Cluster) give(p string) error {
	if c.owner == nil {
		return nil
	}
	if err := os.Chown(p, int(c.owner.uid), int(c.owner.gid)); err != nil {
		return fmt.Errorf("private database: %w", err)
	}
	return nil
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
