package judge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/attune/attune/internal/attune"
)

// checkPolicy refuses, before any call, a judge whose key variable or
// base URL the admin's policy does not allow: a judge stored before the
// policy was tightened (or written to the database by other means) is held
// to it all the same. The key is not read.
func checkPolicy(p attune.JudgePolicy, j *attune.Judge) error {
	if j.APIKeyEnv != "" && !p.AllowsKeyEnv(j.APIKeyEnv) {
		return &FatalError{Reason: fmt.Sprintf("the key variable %s is not one an admin allows for judges (ATTUNE_JUDGE_KEY_ENVS); no call was made", j.APIKeyEnv)}
	}
	if msg := p.CheckBaseURL(j.BaseURL); msg != "" {
		return &FatalError{Reason: "the base URL is not allowed: " + msg + " No call was made."}
	}
	return nil
}

// errAddressRefused is what the dialer returns for a host none of whose
// addresses the policy allows.
var errAddressRefused = errors.New("address refused by the judge host policy")

// guardedClient returns the HTTP client of judge calls: pooled connections
// (dozens of calls to one endpoint at once) over a dialer that connects
// only to addresses the policy allows. It resolves the host itself and
// dials the address it checked, so a name that resolves to a private
// address, or resolves again to another one between check and
// connection, reaches nothing. No proxy is used: a proxy would hide the
// address from the check.
func guardedClient(p attune.JudgePolicy) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	t.DialContext = guardedDial(p, &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, net.DefaultResolver)
	return &http.Client{Transport: t}
}

// guardedDial connects to addr ("host:port") through d, trying in turn
// each address the host resolves to that the policy allows; when it allows
// none, it connects nowhere and returns a *FatalError.
func guardedDial(p attune.JudgePolicy, d *net.Dialer, res *net.Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = res.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		var lastErr error
		for _, ip := range ips {
			if !p.AllowsDial(host, port, ip) {
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			lastErr = err
		}
		if lastErr != nil {
			return nil, lastErr
		}
		return nil, &FatalError{err: errAddressRefused, Reason: fmt.Sprintf(
			"%s resolves only to addresses judges may not call (this machine, a private network or link-local); an admin can allow it in ATTUNE_JUDGE_HOSTS", host)}
	}
}
