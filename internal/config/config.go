// Package config reads attune's settings from the environment, once, into a
// validated Config. Nothing else in the program reads the environment.
package config

import (
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
)

// DefaultDatabaseURL is the local PostgreSQL server's attune database, as a
// developer machine has it.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/attune?sslmode=disable"

// Config is every setting of the attune binary.
type Config struct {
	DatabaseURL string
	// DirectDatabaseURL, when set, connects straight to PostgreSQL for
	// the work that needs a session of its own, while DatabaseURL leads
	// to a connection pooler (PgBouncer in transaction mode).
	DirectDatabaseURL string
	Addr              string
	BaseURL           string // how users reach the app; used in messages and links
	TLSCert           string
	TLSKey            string

	SessionIdleTimeout time.Duration
	SessionLifetime    time.Duration

	ReadTimeout     time.Duration
	WriteTimeout    time.Duration
	ShutdownTimeout time.Duration

	SignInWindow               time.Duration
	SignInMaxPerAccount        int
	SignInMaxPerAddressAccount int
	SignInMaxPerAddress        int

	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// (ATTUNE_TRUSTED_PROXIES); none by default.
	TrustedProxies []netip.Prefix

	AdminEmail    string
	AdminPassword string

	// JudgePolicy is what judges may use: the variables their keys may
	// come from (ATTUNE_JUDGE_KEY_ENVS) and the hosts their calls may go
	// to (ATTUNE_JUDGE_HOSTS).
	JudgePolicy attune.JudgePolicy

	// SearchTimeout is the statement_timeout of a lead's items search
	// (page and API), ReportTimeout that of each part of a report's read
	// of the labels, ExportTimeout that of each fetch of an export's rows;
	// LeadReads is how many connections such reads may hold at once, 0
	// for a quarter of the pool.
	SearchTimeout time.Duration
	ReportTimeout time.Duration
	ExportTimeout time.Duration
	LeadReads     int

	// ReplicaURL is a hot standby that reports, exports and the items
	// search read from while it is at most ReplicaMaxLag behind the
	// primary; "" for none.
	ReplicaURL    string
	ReplicaMaxLag time.Duration

	// BreakAfter is how long an annotator labels without a pause before
	// the workspace offers a break.
	BreakAfter time.Duration

	LogLevel  slog.Level
	LogFormat string // "json" or "text"
}

// SecureCookies reports whether cookies must carry the Secure attribute:
// when attune serves TLS itself or is reached over https behind a proxy.
func (c Config) SecureCookies() bool {
	return c.TLSCert != "" || strings.HasPrefix(c.BaseURL, "https://")
}

// DefaultJudgeKeyEnvs are the variables judge keys may come from when
// ATTUNE_JUDGE_KEY_ENVS is not set: the providers' usual names.
const DefaultJudgeKeyEnvs = "OPENAI_API_KEY,ANTHROPIC_API_KEY"

// Var documents one environment variable.
type Var struct {
	Name, Default, Help string
}

// Vars lists every environment variable attune reads, for `attune help`.
var Vars = []Var{
	{"DATABASE_URL", DefaultDatabaseURL, "PostgreSQL connection URL; pgx pool settings such as pool_max_conns may be added as query parameters. The database is created when missing."},
	{"ATTUNE_DIRECT_DATABASE_URL", "", "with DATABASE_URL leading to PgBouncer: a connection straight to PostgreSQL (or to the pooler in session mode) for what needs a session of its own — the job queue, worker and migration locks, LISTEN. attune refuses to start behind PgBouncer without it"},
	{"ATTUNE_ADDR", "127.0.0.1:8080", "address the web server listens on (host:port; :0 picks a free port)"},
	{"ATTUNE_BASE_URL", "http://<ATTUNE_ADDR>", "the URL users reach attune at; an https URL makes cookies Secure (for TLS ended at a proxy)"},
	{"ATTUNE_TLS_CERT", "", "PEM certificate file: serve HTTPS directly (with ATTUNE_TLS_KEY)"},
	{"ATTUNE_TLS_KEY", "", "PEM private key file for ATTUNE_TLS_CERT"},
	{"ATTUNE_SESSION_IDLE_TIMEOUT", "2h", "sign a user out after this long without a request"},
	{"ATTUNE_SESSION_LIFETIME", "12h", "sign a user out this long after sign-in, active or not"},
	{"ATTUNE_READ_TIMEOUT", "60s", "longest time to read one request, body included (uploads)"},
	{"ATTUNE_WRITE_TIMEOUT", "120s", "longest time to write one response"},
	{"ATTUNE_SHUTDOWN_TIMEOUT", "30s", "on SIGTERM or SIGINT, how long in-flight requests may take to finish"},
	{"ATTUNE_SIGNIN_WINDOW", "15m", "the window over which failed sign-ins are counted"},
	{"ATTUNE_SIGNIN_MAX_PER_ACCOUNT", "20", "failed sign-ins for one email, from any address, within the window before the account is locked everywhere until they leave the window, a right password signs in, the password is changed or an admin clears the lock"},
	{"ATTUNE_SIGNIN_MAX_PER_ADDRESS_ACCOUNT", "5", "failed sign-ins for one email from one client address within the window before that email is locked at that address"},
	{"ATTUNE_SIGNIN_MAX_PER_ADDRESS", "50", "failed sign-ins from one client address, at any email, within the window before further failures from it are slowed (one answered per second); a right password is never refused for it"},
	{"ATTUNE_TRUSTED_PROXIES", "", "comma-separated CIDR ranges (or addresses) of the reverse proxies in front of attune, e.g. 10.0.0.0/8: only from them is X-Forwarded-For believed, and the client is its right-most address outside these ranges. Unset, the connection's own address is the client"},
	{"ATTUNE_ADMIN_EMAIL", "admin@attune.local", "email of the admin account created on first start when there is none"},
	{"ATTUNE_ADMIN_PASSWORD", "(random, printed once)", "password of that first admin account (secret: prefer setting it through a secrets mechanism)"},
	{"ATTUNE_BREAK_AFTER", "50m", "offer annotators a break after this long of continuous labelling (a pause of over 10 minutes starts afresh)"},
	{"ATTUNE_JUDGE_KEY_ENVS", DefaultJudgeKeyEnvs, "comma-separated names of the environment variables a judge's API key may be read from; a judge naming any other is refused. Never attune's own variables"},
	{"ATTUNE_JUDGE_HOSTS", "", "comma-separated hosts judges may call besides api.openai.com and api.anthropic.com, and webhooks may notify: names (vllm.internal), addresses or CIDR ranges (127.0.0.1, 10.0.0.0/8), each optionally with :port, or * for any public host. Private, loopback and link-local addresses are refused unless listed; e.g. 127.0.0.1:11434 for a local Ollama, 127.0.0.1:8081 for 'attune fake-llm'"},
	{"ATTUNE_SEARCH_TIMEOUT", "5s", "longest a lead's items search (page or API) may run; PostgreSQL cancels it after that (statement_timeout) and the lead is asked to narrow it"},
	{"ATTUNE_REPORT_TIMEOUT", "30s", "longest each part of an agreement report's read of the labels may run (a report over six million labels takes a few seconds, its labels read in two parts at once); PostgreSQL cancels it after that and the lead is asked to narrow the report or try later"},
	{"ATTUNE_EXPORT_TIMEOUT", "60s", "longest PostgreSQL may take to produce each batch of an export's rows (2,000 rows; the first batch includes any sorting): an export whose query makes no progress is cancelled, one streaming to a slow download is never cut for its length"},
	{"ATTUNE_LEAD_READS", "(a quarter of pool_max_conns)", "how many database connections leads' heavy reads — items searches, reports (two each when free), exports (three for the dataset export) — may hold at once; a search that finds too few free gets 503 busy with Retry-After at once, a report or export after waiting up to 15 s for slots to be given back (holding no connection meanwhile), so that these reads never take the connections annotators submit through. With a replica, it has as many again of its own"},
	{"ATTUNE_REPLICA_URL", "", "a hot standby (streaming replica) of the database: reports, exports and the items search read from it while it is at most ATTUNE_REPLICA_MAX_LAG behind, and their pages say how current it is; when it is down, promoted or further behind, they read the primary and say so"},
	{"ATTUNE_REPLICA_MAX_LAG", "30s", "how far behind the primary the replica may be (the age of its newest replayed change, when it has not replayed all the primary wrote) before heavy reads go to the primary"},
	{"ATTUNE_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"ATTUNE_LOG_FORMAT", "auto", "json, text, or auto: text on a terminal, JSON otherwise"},
}

// Load reads the configuration from getenv and validates it. Its error
// names the variable and what is wrong with it.
func Load(getenv func(string) string) (Config, error) {
	l := loader{getenv: getenv}
	c := Config{
		DatabaseURL:                l.str("DATABASE_URL", DefaultDatabaseURL),
		Addr:                       l.str("ATTUNE_ADDR", "127.0.0.1:8080"),
		TLSCert:                    l.str("ATTUNE_TLS_CERT", ""),
		TLSKey:                     l.str("ATTUNE_TLS_KEY", ""),
		SessionIdleTimeout:         l.duration("ATTUNE_SESSION_IDLE_TIMEOUT", 2*time.Hour),
		SessionLifetime:            l.duration("ATTUNE_SESSION_LIFETIME", 12*time.Hour),
		ReadTimeout:                l.duration("ATTUNE_READ_TIMEOUT", 60*time.Second),
		WriteTimeout:               l.duration("ATTUNE_WRITE_TIMEOUT", 120*time.Second),
		ShutdownTimeout:            l.duration("ATTUNE_SHUTDOWN_TIMEOUT", 30*time.Second),
		SignInWindow:               l.duration("ATTUNE_SIGNIN_WINDOW", 15*time.Minute),
		SignInMaxPerAccount:        l.positiveInt("ATTUNE_SIGNIN_MAX_PER_ACCOUNT", 20),
		SignInMaxPerAddressAccount: l.positiveInt("ATTUNE_SIGNIN_MAX_PER_ADDRESS_ACCOUNT", 5),
		SignInMaxPerAddress:        l.positiveInt("ATTUNE_SIGNIN_MAX_PER_ADDRESS", 50),
		TrustedProxies:             l.prefixes("ATTUNE_TRUSTED_PROXIES"),
		AdminEmail:                 l.str("ATTUNE_ADMIN_EMAIL", "admin@attune.local"),
		AdminPassword:              getenv("ATTUNE_ADMIN_PASSWORD"),
		BreakAfter:                 l.duration("ATTUNE_BREAK_AFTER", 50*time.Minute),
		SearchTimeout:              l.duration("ATTUNE_SEARCH_TIMEOUT", 5*time.Second),
		ReportTimeout:              l.duration("ATTUNE_REPORT_TIMEOUT", 30*time.Second),
		ExportTimeout:              l.duration("ATTUNE_EXPORT_TIMEOUT", 60*time.Second),
		LeadReads:                  l.positiveInt("ATTUNE_LEAD_READS", 0),
		ReplicaURL:                 l.str("ATTUNE_REPLICA_URL", ""),
		ReplicaMaxLag:              l.duration("ATTUNE_REPLICA_MAX_LAG", 30*time.Second),
		LogFormat:                  l.str("ATTUNE_LOG_FORMAT", "auto"),
	}
	c.BaseURL = l.str("ATTUNE_BASE_URL", "")
	if c.BaseURL == "" {
		scheme := "http"
		if c.TLSCert != "" {
			scheme = "https"
		}
		c.BaseURL = scheme + "://" + c.Addr
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.fail("ATTUNE_BASE_URL", "must be an http or https URL, like https://attune.example.org")
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		l.fail("DATABASE_URL", "must be a postgres:// URL")
	}
	c.DirectDatabaseURL = l.str("ATTUNE_DIRECT_DATABASE_URL", "")
	if u, err := url.Parse(c.DirectDatabaseURL); c.DirectDatabaseURL != "" && (err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql")) {
		l.fail("ATTUNE_DIRECT_DATABASE_URL", "must be a postgres:// URL")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		l.fail("ATTUNE_TLS_KEY", "ATTUNE_TLS_CERT and ATTUNE_TLS_KEY go together")
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"ATTUNE_SEARCH_TIMEOUT", c.SearchTimeout}, {"ATTUNE_REPORT_TIMEOUT", c.ReportTimeout}, {"ATTUNE_EXPORT_TIMEOUT", c.ExportTimeout}} {
		if t.d < time.Millisecond {
			l.fail(t.name, "must be at least 1ms (PostgreSQL counts statement_timeout in milliseconds)")
		}
	}
	if u, err := url.Parse(c.ReplicaURL); c.ReplicaURL != "" && (err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql")) {
		l.fail("ATTUNE_REPLICA_URL", "must be a postgres:// URL")
	}
	if c.SessionIdleTimeout > c.SessionLifetime {
		l.fail("ATTUNE_SESSION_IDLE_TIMEOUT", "must not be longer than ATTUNE_SESSION_LIFETIME")
	}
	if err := c.LogLevel.UnmarshalText([]byte(l.str("ATTUNE_LOG_LEVEL", "info"))); err != nil {
		l.fail("ATTUNE_LOG_LEVEL", "must be debug, info, warn or error")
	}
	if c.LogFormat != "json" && c.LogFormat != "text" && c.LogFormat != "auto" {
		l.fail("ATTUNE_LOG_FORMAT", "must be json, text or auto")
	}
	c.JudgePolicy.KeyEnvs = l.keyEnvs("ATTUNE_JUDGE_KEY_ENVS", DefaultJudgeKeyEnvs)
	if hosts, err := attune.ParseHostRules(l.str("ATTUNE_JUDGE_HOSTS", "")); err != nil {
		l.fail("ATTUNE_JUDGE_HOSTS", "has "+err.Error())
	} else {
		c.JudgePolicy.Hosts = hosts
	}
	if l.err != nil {
		return Config{}, l.err
	}
	return c, nil
}

// keyEnvs reads a list of variable names a judge key may come from. attune's
// own variables (and PostgreSQL's password variable) are refused: a lead
// could otherwise send them to an endpoint as a key.
func (l *loader) keyEnvs(name, def string) []string {
	var out []string
	for _, v := range strings.Split(l.str(name, def), ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			continue
		case !envName.MatchString(v):
			l.fail(name, fmt.Sprintf("must list names of environment variables (letters, digits and _), not %q", v))
		case ownVar(v):
			l.fail(name, fmt.Sprintf("must not list %s: it is attune's own setting, not a judge's key", v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ownVar reports whether name is one of attune's own settings or the
// database's password variable.
func ownVar(name string) bool {
	if strings.HasPrefix(strings.ToUpper(name), "ATTUNE_") || strings.HasPrefix(strings.ToUpper(name), "PG") {
		return true
	}
	for _, v := range Vars {
		if strings.EqualFold(v.Name, name) {
			return true
		}
	}
	return false
}

type loader struct {
	getenv func(string) string
	err    error
}

func (l *loader) fail(name, problem string) {
	if l.err == nil {
		l.err = fmt.Errorf("config: %s %s", name, problem)
	}
}

func (l *loader) str(name, def string) string {
	if v := strings.TrimSpace(l.getenv(name)); v != "" {
		return v
	}
	return def
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v := l.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.fail(name, fmt.Sprintf("must be a positive duration such as 90s or 2h, not %q", v))
		return def
	}
	return d
}

// prefixes reads a comma-separated list of CIDR ranges; a bare address is
// a range of one. A range holding every address is refused: it would
// believe X-Forwarded-For from anyone, who could then sign in as coming
// from anywhere.
func (l *loader) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, v := range strings.Split(l.str(name, ""), ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil || a.Zone() != "" {
				l.fail(name, fmt.Sprintf("must list CIDR ranges or addresses, like 10.0.0.0/8 or 192.0.2.7, not %q", v))
				return nil
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				l.fail(name, fmt.Sprintf("must not hold %q: an IPv4-mapped range needs a length of at least 96", v))
				return nil
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		p = p.Masked()
		if p.Bits() == 0 {
			l.fail(name, fmt.Sprintf("must not hold %q: it would believe X-Forwarded-For from every address", v))
			return nil
		}
		out = append(out, p)
	}
	return out
}

func (l *loader) positiveInt(name string, def int) int {
	v := l.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		l.fail(name, fmt.Sprintf("must be a positive whole number, not %q", v))
		return def
	}
	return n
}
