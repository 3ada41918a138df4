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
	if c.SessionIdleTimeout != 2*time.Hour || c.SignInMaxPerAccount != 5 {
		t.Errorf("timeouts or limits wrong: %+v", c)
	}
	if c.SearchTimeout != 5*time.Second || c.LeadReads != 0 {
		t.Errorf("search limits: %v, %d", c.SearchTimeout, c.LeadReads)
	}
	c, err = Load(env(map[string]string{"ATTUNE_SEARCH_TIMEOUT": "2s", "ATTUNE_LEAD_READS": "3"}))
	if err != nil || c.SearchTimeout != 2*time.Second || c.LeadReads != 3 {
		t.Errorf("search limits set: %v, %d, %v", c.SearchTimeout, c.LeadReads, err)
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
		{map[string]string{"ATTUNE_TLS_CERT": "cert.pem"}, "ATTUNE_TLS_KEY"},
		{map[string]string{"ATTUNE_LOG_LEVEL": "loud"}, "ATTUNE_LOG_LEVEL"},
		{map[string]string{"ATTUNE_BASE_URL": "ftp://x"}, "ATTUNE_BASE_URL"},
		{map[string]string{"ATTUNE_SESSION_IDLE_TIMEOUT": "24h"}, "ATTUNE_SESSION_IDLE_TIMEOUT"},
		{map[string]string{"ATTUNE_SEARCH_TIMEOUT": "0s"}, "ATTUNE_SEARCH_TIMEOUT"},
		{map[string]string{"ATTUNE_SEARCH_TIMEOUT": "500us"}, "at least 1ms"},
		{map[string]string{"ATTUNE_LEAD_READS": "0"}, "ATTUNE_LEAD_READS"},
		// attune's own secrets can never be named as a judge's key.
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "OPENAI_API_KEY,DATABASE_URL"}, "must not list DATABASE_URL"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "ATTUNE_ADMIN_PASSWORD"}, "must not list ATTUNE_ADMIN_PASSWORD"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "PGPASSWORD"}, "must not list PGPASSWORD"},
		{map[string]string{"ATTUNE_JUDGE_KEY_ENVS": "MY KEY"}, "ATTUNE_JUDGE_KEY_ENVS"},
		{map[string]string{"ATTUNE_JUDGE_HOSTS": "127.0.0.1, http://x.org"}, "ATTUNE_JUDGE_HOSTS"},
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
