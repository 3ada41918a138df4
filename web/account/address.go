package account

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientAddress is the address sign-in limits count by.
//
// It is the connection's peer, unless the peer is a trusted proxy
// (trustedProxies): then X-Forwarded-For is read from the right,
// where each proxy appended the address it was reached from, and the
// client is the first address that is not itself a trusted proxy.
// Entries left of it were written by the client and prove nothing, so a
// forged one changes nothing. An entry that is no address ends the walk at
// the last proxy that vouched for the one before it.
//
// An IPv6 client counts by its /64: a network hands each of its hosts a
// whole /64, so counting single addresses would give one guesser 2^64 of
// them.
func (s *Handler) clientAddress(r *http.Request) string {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	addr := peer.Addr().Unmap().WithZone("")
	if s.trustedProxy(addr) {
		hops := forwardedFor(r.Header)
		for i := len(hops) - 1; i >= 0; i-- {
			hop, ok := parseHop(hops[i])
			if !ok {
				break
			}
			addr = hop
			if !s.trustedProxy(hop) {
				break
			}
		}
	}
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

func (s *Handler) trustedProxy(a netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the X-Forwarded-For entries, from every line of the
// header in order.
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, line := range h.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// parseHop reads one X-Forwarded-For entry: an address, or an address with
// a port as some proxies write it.
func parseHop(hop string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(hop)
	if err != nil {
		ap, err := netip.ParseAddrPort(hop)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}
