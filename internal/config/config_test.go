package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != DefaultDatabaseURL || c.Addr != "127.0.0.1:8080" || c.BaseURL != "http://127.0.0.1:8080" {
		t.Errorf("defaults = %+v", c)
	}
	if c.SecureCookies() {
		t.Error("plain http must not ask for Secure cookies")
	}
	if c.SessionIdleTimeout != 2*time.Hour || c.SignInMaxPerAccount != 20 || c.SignInMaxPerAddressAccount != 5 || c.SignInMaxPerAddress != 50 {
		t.Errorf("timeouts or limits wrong: %+v", c)
	}
	if c.SearchTimeout != 5*time.Second || c.ReportTimeout != 30*time.Second || c.ExportTimeout != time.Minute || c.LeadReads != 0 {
		t.Errorf("heavy-read limits: %v, %v, %v, %d", c.SearchTimeout, c.ReportTimeout, c.ExportTimeout, c.LeadReads)
	}
	if c.ReplicaURL != "" || c.ReplicaMaxLag != 30*time.Second {
		t.Errorf("replica: %q, %v", c.ReplicaURL, c.ReplicaMaxLag)
	}
	c, err = Load(env(map[string]string{"ATTUNE_SEARCH_TIMEOUT": "2s", "ATTUNE_LEAD_READS": "3"}))
	if err != nil || c.SearchTimeout != 2*time.Second || c.LeadReads != 3 {
		t.Errorf("search limits set: %v, %d, %v", c.SearchTimeout, c.LeadReads, err)
	}
	c, err = Load(env(map[string]string{"ATTUNE_REPORT_TIMEOUT": "10s", "ATTUNE_EXPORT_TIMEOUT": "2m",
		"ATTUNE_REPLICA_URL": "postgres://replica:5432/attune", "ATTUNE_REPLICA_MAX_LAG": "5s"}))
	if err != nil || c.ReportTimeout != 10*time.Second || c.ExportTimeout != 2*time.Minute ||
		c.ReplicaURL != "postgres://replica:5432/attune" || c.ReplicaMaxLag != 5*time.Second {
		t.Errorf("report, export and replica settings: %+v, %v", c, err)
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"ATTUNE_SESSION_LIFETIME": "soon"}, "ATTUNE_SESSION_LIFETIME"},
		{map[string]string{"ATTUNE_SIGNIN_MAX_PER_ACCOUNT": "-1"}, "ATTUNE_SIGNIN_MAX_PER_ACCOUNT"},
		{map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		{map[string]string{"ATTUNE_DIRECT_DATABASE_URL": "http://db:5432/attune"}, "ATTUNE_DIRECT_DATABASE_URL must be a postgres:// URL"},
		{map[string]string{"ATTUNE_TLS_CERT": "cert.pem"}, "ATTUNE_TLS_KEY"},
		{map[string]string{"ATTUNE_LOG_LEVEL": "loud"}, "ATTUNE_LOG_LEVEL"},
		{map[string]string{"ATTUNE_BASE_URL": "ftp://x"}, "ATTUNE_BASE_URL"},
		{map[string]string{"ATTUNE_SESSION_IDLE_TIMEOUT": "24h"}, "ATTUNE_SESSION_IDLE_TIMEOUT"},
		{map[string]string{"ATTUNE_SEARCH_TIMEOUT": "0s"}, "ATTUNE_SEARCH_TIMEOUT"},
		{map[string]string{"ATTUNE_SEARCH_TIMEOUT": "500us"}, "at least 1ms"},
		{map[string]string{"ATTUNE_LEAD_READS": "0"}, "ATTUNE_LEAD_READS"},
		{map[string]string{"ATTUNE_REPORT_TIMEOUT": "900us"}, "ATTUNE_REPORT_TIMEOUT must be at least 1ms"},
		{map[string]string{"ATTUNE_EXPORT_TIMEOUT": "forever"}, "ATTUNE_EXPORT_TIMEOUT"},
		{map[string]string{"ATTUNE_REPLICA_URL": "replica:5432"}, "ATTUNE_REPLICA_URL must be a postgres:// URL"},
		{map[string]string{"ATTUNE_REPLICA_MAX_LAG": "0s"}, "ATTUNE_REPLICA_MAX_LAG must be a positive duration"},
		// attune's own secrets can never be named as a judge's key.
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "OPENAI_API_KEY,DATABASE_URL"}, "must not list DATABASE_URL"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "ATTUNE_ADMIN_PASSWORD"}, "must not list ATTUNE_ADMIN_PASSWORD"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "PGPASSWORD"}, "must not list PGPASSWORD"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "MY KEY"}, "ATTUNE_JUDGE_KEY_ENVS"},
		{map[string]string{"ATTUNE_JUDGE_HOSTS": "127.0.0.1, http://x.org"}, "ATTUNE_JUDGE_HOSTS"},
		{map[string]string{"ATTUNE_SIGNIN_MAX_PER_ADDRESS_ACCOUNT": "0"}, "ATTUNE_SIGNIN_MAX_PER_ADDRESS_ACCOUNT"},
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "10.0.0.0/8, proxy.internal"}, `ATTUNE_TRUSTED_PROXIES must list CIDR ranges or addresses, like 10.0.0.0/8 or 192.0.2.7, not "proxy.internal"`},
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "10.0.0.0/33"}, "ATTUNE_TRUSTED_PROXIES must list CIDR ranges"},
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "fe80::1%eth0"}, "ATTUNE_TRUSTED_PROXIES must list CIDR ranges"},
		// Trusting every address would let anyone say where they come from.
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "0.0.0.0/0"}, "ATTUNE_TRUSTED_PROXIES must not hold \"0.0.0.0/0\""},
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "10.0.0.1, ::/0"}, "ATTUNE_TRUSTED_PROXIES must not hold \"::/0\""},
		{map[string]string{"ATTUNE_TRUSTED_PROXIES": "::ffff:0.0.0.0/96"}, "ATTUNE_TRUSTED_PROXIES must not hold"},
	}
	for _, tt := range tests {
		_, err := Load(env(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%v) error = %v, want one naming %s", tt.env, err, tt.want)
		}
	}
}

func TestSecureCookies(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"ATTUNE_BASE_URL": "https://attune.example.org/"}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.SecureCookies() || c.BaseURL != "https://attune.example.org" {
		t.Errorf("https base URL: secure=%v base=%q", c.SecureCookies(), c.BaseURL)
	}
}

func TestEveryVariableIsDocumented(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, v := range Vars {
		seen[v.Name] = true
	}
	// Every variable Load reads must appear in Vars, or `attune help` lies.
	var read []string
	Load(func(k string) string { read = append(read, k); return "" })
	for _, k := range read {
		if !seen[k] {
			t.Errorf("%s is read but not documented in Vars", k)
		}
	}
}

func TestJudgePolicy(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.JudgePolicy.KeyEnvs, ","); got != DefaultJudgeKeyEnvs || len(c.JudgePolicy.Hosts) != 0 {
		t.Errorf("default judge policy %+v", c.JudgePolicy)
	}
	c, err = Load(env(map[string]string{"ATTUNE_JUDGE_KEY_ENVS": " VLLM_KEY , ,VLLM_KEY,OPENAI_API_KEY", "ATTUNE_JUDGE_HOSTS": "127.0.0.1:11434, *"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.JudgePolicy.KeyEnvs, ","); got != "VLLM_KEY,OPENAI_API_KEY" {
		t.Errorf("key variables %q", got)
	}
	if c.JudgePolicy.CheckBaseURL("http://127.0.0.1:11434/v1") != "" || c.JudgePolicy.CheckBaseURL("http://127.0.0.1:5432/") == "" {
		t.Errorf("hosts %v", c.JudgePolicy.Hosts)
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TrustedProxies) != 0 {
		t.Fatalf("trusted proxies by default: %v", c.TrustedProxies)
	}
	c, err = Load(env(map[string]string{"ATTUNE_TRUSTED_PROXIES": " 10.1.2.3/8 ,, 192.0.2.7, 2001:db8::/32, ::ffff:172.16.0.0/108"}))
	if err != nil {
		t.Fatal(err)
	}
	// Ranges are masked, addresses are ranges of one, IPv4-mapped ranges are IPv4.
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "172.16.0.0/12"}
	if len(c.TrustedProxies) != len(want) {
		t.Fatalf("trusted proxies %v, want %v", c.TrustedProxies, want)
	}
	for i, p := range c.TrustedProxies {
		if p.String() != want[i] {
			t.Errorf("trusted proxy %d is %s, want %s", i, p, want[i])
		}
	}
}
