package attune

import (
	"net/netip"
	"net/url"
	"strings"
)

// OnThisMachine reports whether host, a URL's host as url.URL.Hostname
// gives it (no brackets, no port), names this machine: a loopback address
// (127.0.0.0/8 or ::1, also written as an IPv4-mapped IPv6 address) or
// localhost and the names under it, which RFC 6761 keeps for loopback, in
// any letter case and with or without the root's trailing dot. A name
// that merely contains "localhost" (localhost.example.com) is another
// machine. The unspecified addresses 0.0.0.0 and :: are not counted: what
// a connection to them reaches is up to the system, and every caller errs
// towards treating a host as remote.
func OnThisMachine(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().WithZone("").IsLoopback()
}

// KeyInClear reports whether an API key sent to base would cross a
// network unencrypted: base is plain http to a host not on this machine
// (OnThisMachine). The judge runner refuses to send a key then. A URL that
// does not parse counts as in the clear.
func KeyInClear(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return true
	}
	return u.Scheme != "https" && !OnThisMachine(u.Hostname())
}
