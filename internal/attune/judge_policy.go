package attune

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// JudgePolicy is what an admin lets judges use: the environment variables
// a judge's API key may be read from (ATTUNE_JUDGE_KEY_ENVS) and the hosts
// its calls may go to (ATTUNE_JUDGE_HOSTS). A lead choosing a judge's
// settings can name nothing else, so that no judge can carry the server's
// own secrets (its database URL, the admin password) to a listener of the
// lead's choosing. The zero JudgePolicy allows no key variable and no host
// but the providers' own APIs.
//
// The policy is checked where a judge is stored (Judge.Validate, inside the
// store's transaction) and again where a call is made (the judge runner
// builds its client only for a judge the policy allows, and its dialer
// connects only to addresses AllowsDial accepts, after DNS resolution, so a
// name that resolves to a private address does not get through).
type JudgePolicy struct {
	// KeyEnvs are the variables a key may come from.
	KeyEnvs []string
	// Hosts are the hosts calls may go to, besides ProviderHosts.
	Hosts []HostRule
}

// ProviderHosts are the providers' own APIs, which a judge with an empty
// base URL calls; they are always allowed.
var ProviderHosts = []string{"api.openai.com", "api.anthropic.com"}

// HostRule is one entry of ATTUNE_JUDGE_HOSTS: a host name (calls to that
// name may go to whatever address it resolves to: the admin trusts its
// DNS), an IP address or a CIDR range (calls may go to those addresses,
// private ones included), or "*" (any host name whose addresses are all
// public). Each may carry a port, which then is the only one allowed.
type HostRule struct {
	Any    bool
	Name   string       // lower case, without a trailing dot
	Prefix netip.Prefix // an address is a /32 or /128
	Port   string       // "" for any port
}

// String writes the rule as it is written in ATTUNE_JUDGE_HOSTS.
func (h HostRule) String() string {
	var s string
	switch {
	case h.Any:
		s = "*"
	case h.Name != "":
		s = h.Name
	case h.Prefix.IsSingleIP():
		s = h.Prefix.Addr().String()
		if h.Port != "" && h.Prefix.Addr().Is6() {
			s = "[" + s + "]"
		}
	default:
		s = h.Prefix.String()
	}
	if h.Port != "" {
		s += ":" + h.Port
	}
	return s
}

// ParseHostRules reads a comma-separated list of host rules (see HostRule),
// such as "127.0.0.1:11434, vllm.internal, 10.0.0.0/8, *". Its error names
// the entry that is not one.
func ParseHostRules(list string) ([]HostRule, error) {
	var rules []HostRule
	for _, e := range strings.Split(list, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		r, ok := parseHostRule(e)
		if !ok {
			return nil, fmt.Errorf("%q is not a host name, an IP address or a CIDR range (optionally with :port), nor *", e)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseHostRule(e string) (HostRule, bool) {
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		return HostRule{Prefix: p.Masked()}, err == nil
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		return HostRule{Prefix: netip.PrefixFrom(ap.Addr().Unmap(), ap.Addr().Unmap().BitLen()), Port: strconv.Itoa(int(ap.Port()))}, ap.Port() != 0
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
		a = a.Unmap()
		return HostRule{Prefix: netip.PrefixFrom(a, a.BitLen())}, a.Zone() == ""
	}
	host, port := e, ""
	if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host, port = e[:i], e[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return HostRule{}, false
		}
	}
	if host == "*" {
		return HostRule{Any: true, Port: port}, true
	}
	host = strings.TrimSuffix(host, ".")
	if !validHostName(host) {
		return HostRule{}, false
	}
	return HostRule{Name: host, Port: port}, true
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// AllowsKeyEnv reports whether a judge's key may be read from the
// environment variable name.
func (p JudgePolicy) AllowsKeyEnv(name string) bool { return slices.Contains(p.KeyEnvs, name) }

func (p JudgePolicy) keyEnvRefusal(name string) string {
	if len(p.KeyEnvs) == 0 {
		return fmt.Sprintf("attune reads judge keys only from variables an admin allows in ATTUNE_JUDGE_KEY_ENVS, and none is allowed yet: ask an admin to add %s.", name)
	}
	return fmt.Sprintf("attune reads judge keys only from variables an admin allows in ATTUNE_JUDGE_KEY_ENVS (%s); %s is not one of them.",
		strings.Join(p.KeyEnvs, ", "), name)
}

// rules is the admin's rules and the providers' own hosts.
func (p JudgePolicy) rules() []HostRule {
	rs := make([]HostRule, 0, len(p.Hosts)+len(ProviderHosts))
	for _, h := range ProviderHosts {
		rs = append(rs, HostRule{Name: h})
	}
	return append(rs, p.Hosts...)
}

// endpoint splits a base URL into its host (lower case, no trailing dot)
// and port (the scheme's when none is written).
func endpoint(u *url.URL) (host, port string) {
	host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port = u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return host, port
}

// CheckBaseURL returns a message fit to show when the policy does not
// allow calls to base's host, or "" when it does ("" is the provider's own
// API, always allowed). The runner checks it again before every run and
// try, so a judge stored before a rule was tightened is held to the rule.
func (p JudgePolicy) CheckBaseURL(base string) string {
	if msg := checkBaseURL(base); msg != "" {
		return msg
	}
	return p.checkHost(base, "Judges")
}

// checkHost checks base's host against the rules; who ("Judges",
// "Webhooks") names what would call it in the refusal.
func (p JudgePolicy) checkHost(base, who string) string {
	if base == "" {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil {
		return judgeMessages["base_url"]
	}
	host, port := endpoint(u)
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	isIP := err == nil
	addr = addr.Unmap()
	for _, r := range p.rules() {
		if r.Port != "" && r.Port != port {
			continue
		}
		switch {
		case r.Any && isIP && PublicAddr(addr), r.Any && !isIP && !OnThisMachine(host):
			return ""
		case r.Name != "" && r.Name == host, r.Prefix.IsValid() && isIP && r.Prefix.Contains(addr):
			return ""
		}
	}
	where := host
	if u.Port() != "" {
		where += ":" + u.Port()
	}
	if isIP && !PublicAddr(addr) || OnThisMachine(host) {
		return fmt.Sprintf("%s is on this machine or a private network: %s may call it only if an admin allows it in ATTUNE_JUDGE_HOSTS.", where, strings.ToLower(who))
	}
	if who != "Judges" {
		return fmt.Sprintf("%s may call only the hosts an admin allows in ATTUNE_JUDGE_HOSTS; %s is not one of them.", who, where)
	}
	return fmt.Sprintf("Judges may call only the providers' own APIs and the hosts an admin allows in ATTUNE_JUDGE_HOSTS; %s is not one of them.", where)
}

// AllowsDial reports whether a call to the host name (as written in the
// base URL) on port may connect to ip, one of the addresses the name
// resolved to. A host the admin named is trusted to resolve anywhere; an
// address is allowed when a rule's address or range holds it; under "*" it
// must be public.
func (p JudgePolicy) AllowsDial(host, port string, ip netip.Addr) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	ip = ip.Unmap().WithZone("")
	for _, r := range p.rules() {
		if r.Port != "" && r.Port != port {
			continue
		}
		switch {
		case r.Name != "" && r.Name == host, r.Prefix.IsValid() && r.Prefix.Contains(ip), r.Any && PublicAddr(ip):
			return true
		}
	}
	return false
}
