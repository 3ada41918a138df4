// Package egress connects attune to hosts that people name (judges' base
// URLs, webhooks' URLs) only where the admin's host policy allows: one
// dialer, so the rule against reaching this machine, a private network or
// a cloud's metadata service is enforced in one place.
package egress

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

// ErrRefused is what a RefusedError wraps.
var ErrRefused = errors.New("address refused by the host policy")

// RefusedError is what the dialer returns for a host none of whose
// addresses the policy allows; nothing was connected to.
type RefusedError struct {
	Host string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s resolves only to addresses attune may not call (this machine, a private network or link-local); an admin can allow it in ATTUNE_JUDGE_HOSTS", e.Host)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Transport returns an HTTP transport whose connections go only to
// addresses the policy allows (see Dial). No proxy is used: a proxy would
// hide the address from the check.
func Transport(p attune.JudgePolicy) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = Dial(p, &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, net.DefaultResolver)
	return t
}

// Dial connects to addr ("host:port") through d, trying in turn each
// address the host resolves to that the policy allows. It resolves the
// host itself and dials the address it checked, so a name that resolves to
// a private address, or resolves again to another one between check and
// connection, reaches nothing. When the policy allows none of the
// addresses it connects nowhere and returns a *RefusedError.
func Dial(p attune.JudgePolicy, d *net.Dialer, res *net.Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
		return nil, &RefusedError{Host: host}
	}
}
