package attune_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/attune/attune/internal/attune"
)

func mustRules(t *testing.T, list string) []attune.HostRule {
	t.Helper()
	rs, err := attune.ParseHostRules(list)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestParseHostRules(t *testing.T) {
	t.Parallel()
	rs := mustRules(t, " 127.0.0.1:11434, VLLM.internal., 10.0.0.0/8 ,[::1]:8000, *, localhost:8081,::1")
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	want := []string{"127.0.0.1:11434", "vllm.internal", "10.0.0.0/8", "[::1]:8000", "*", "localhost:8081", "::1"}
	if len(got) != len(want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rules %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"http://x.org", "x.org:0", "x.org:99999", "10.0.0.0/33", "a b", "-x.org", "x.org:8o"} {
		if _, err := attune.ParseHostRules(bad); err == nil {
			t.Errorf("%q accepted as a host rule", bad)
		}
	}
}

func TestJudgePolicyBaseURL(t *testing.T) {
	t.Parallel()
	local := attune.JudgePolicy{Hosts: mustRules(t, "127.0.0.1:11434,vllm.internal,10.1.0.0/16")}
	public := attune.JudgePolicy{Hosts: mustRules(t, "*")}
	for _, c := range []struct {
		policy attune.JudgePolicy
		url    string
		ok     bool
	}{
		{attune.JudgePolicy{}, "", true},
		{attune.JudgePolicy{}, "https://api.openai.com/v1", true},
		{attune.JudgePolicy{}, "https://API.anthropic.com./", true},
		{attune.JudgePolicy{}, "https://llm.example.org/v1", false},
		{attune.JudgePolicy{}, "http://127.0.0.1:11434/v1", false},
		{local, "http://127.0.0.1:11434/v1", true},
		{local, "http://127.0.0.1:5432/", false},
		{local, "http://localhost:11434/v1", false},
		{local, "http://vllm.internal:8000/v1", true},
		{local, "http://10.1.2.3/v1", true},
		{local, "http://10.2.0.1/v1", false},
		{local, "http://[::ffff:10.1.2.3]/v1", true},
		{public, "https://llm.example.org/v1", true},
		{public, "http://8.8.8.8/v1", true},
		{public, "http://127.0.0.1/v1", false},
		{public, "http://[::1]:8080/v1", false},
		{public, "http://169.254.169.254/latest", false},
		{public, "http://100.100.1.1/", false},
		{public, "http://[::ffff:127.0.0.1]/", false},
		{public, "http://localhost:8080/", false},
		{public, "http://evil.localhost/", false},
		{public, "http://0.0.0.0:8080/", false},
	} {
		msg := c.policy.CheckBaseURL(c.url)
		if (msg == "") != c.ok {
			t.Errorf("%v: %q allowed %v (%q), want %v", c.policy.Hosts, c.url, msg == "", msg, c.ok)
		}
	}
}

func TestJudgePolicyDial(t *testing.T) {
	t.Parallel()
	p := attune.JudgePolicy{Hosts: mustRules(t, "*,vllm.internal,127.0.0.1:8081")}
	ip := netip.MustParseAddr
	for _, c := range []struct {
		host, port string
		ip         netip.Addr
		ok         bool
	}{
		{"llm.example.org", "443", ip("93.184.216.34"), true},
		// A name under "*" that resolves to a private or loopback
		// address reaches nothing: DNS decides nothing the admin did not.
		{"llm.example.org", "443", ip("127.0.0.1"), false},
		{"llm.example.org", "443", ip("10.0.0.7"), false},
		{"llm.example.org", "443", ip("169.254.169.254"), false},
		{"llm.example.org", "443", ip("::ffff:192.168.1.1"), false},
		{"llm.example.org", "443", ip("fd00::1"), false},
		// A name the admin listed may resolve anywhere.
		{"vllm.internal", "8000", ip("10.0.0.7"), true},
		{"127.0.0.1", "8081", ip("127.0.0.1"), true},
		{"127.0.0.1", "8082", ip("127.0.0.1"), false},
		{"api.openai.com", "443", ip("10.0.0.1"), true},
	} {
		if got := p.AllowsDial(c.host, c.port, c.ip); got != c.ok {
			t.Errorf("dial %s:%s at %s: allowed %v, want %v", c.host, c.port, c.ip, got, c.ok)
		}
	}
}

func TestJudgeCheckChange(t *testing.T) {
	t.Parallel()
	owner, other, admin := int64(1), int64(2), int64(3)
	j := &attune.Judge{Name: "J", Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "m", APIKeyEnv: "OPENAI_API_KEY", CreatedBy: &owner}
	as := func(id int64, role attune.Role) *attune.User { return &attune.User{ID: id, Role: role} }
	moved := *j
	moved.BaseURL = "https://llm.example.org/v1"
	rekeyed := *j
	rekeyed.APIKeyEnv = "OTHER_KEY"
	renamed := *j
	renamed.Name, renamed.Model = "J2", "m2"
	unkeyed := moved
	unkeyed.APIKeyEnv = ""
	for _, c := range []struct {
		name      string
		actor     *attune.User
		next      *attune.Judge
		confirmed bool
		want      error
	}{
		{"another lead renames", as(other, attune.RoleLead), &renamed, false, nil},
		{"another lead moves it", as(other, attune.RoleLead), &moved, true, attune.ErrForbidden},
		{"another lead changes the key", as(other, attune.RoleLead), &rekeyed, false, attune.ErrForbidden},
		{"the owner moves it unconfirmed", as(owner, attune.RoleLead), &moved, false, attune.ErrInvalid},
		{"the owner moves it confirmed", as(owner, attune.RoleLead), &moved, true, nil},
		{"the owner moves it without a key", as(owner, attune.RoleLead), &unkeyed, false, nil},
		{"the owner changes the key", as(owner, attune.RoleLead), &rekeyed, false, nil},
		{"an admin moves it confirmed", as(admin, attune.RoleAdmin), &moved, true, nil},
		{"an admin moves it unconfirmed", as(admin, attune.RoleAdmin), &moved, false, attune.ErrInvalid},
		{"the command line", nil, &moved, true, nil},
	} {
		err := j.CheckChange(c.actor, c.next, c.confirmed)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A judge with no owner (made on the command line): only admins.
	j.CreatedBy = nil
	if err := j.CheckChange(as(owner, attune.RoleLead), &moved, true); !errors.Is(err, attune.ErrForbidden) {
		t.Errorf("a lead moved an ownerless judge: %v", err)
	}
}
