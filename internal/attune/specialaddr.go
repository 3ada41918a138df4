package attune

import (
	"encoding/binary"
	"net/netip"
)

// specialAddr is one entry of an IANA special-purpose address registry:
// its block and whether the registry marks it globally reachable.
type specialAddr struct {
	block  netip.Prefix
	global bool
	name   string
}

// specialAddrs are the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry) and the IANA
// IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry, last
// updated 2025-10-09), RFC 6890 and RFC 8190, as published in October 2025.
// Only entries whose "Globally Reachable" is True are global; False and
// N/A (6to4, Teredo, the deprecated 6to4 relay anycast) are not. Where
// entries nest (192.0.0.9/32 inside 192.0.0.0/24), the most specific one
// decides, as the registry's footnote on 192.0.0.0/24 says. A change to the
// registries is a change to this table and to TestPublicAddrRegistry.
var specialAddrs = []specialAddr{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/8"), false, `"This network"`},
	{netip.MustParsePrefix("0.0.0.0/32"), false, `"This host on this network"`},
	{netip.MustParsePrefix("10.0.0.0/8"), false, "Private-Use"},
	{netip.MustParsePrefix("100.64.0.0/10"), false, "Shared Address Space"},
	{netip.MustParsePrefix("127.0.0.0/8"), false, "Loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), false, "Link Local"},
	{netip.MustParsePrefix("172.16.0.0/12"), false, "Private-Use"},
	{netip.MustParsePrefix("192.0.0.0/24"), false, "IETF Protocol Assignments"},
	{netip.MustParsePrefix("192.0.0.0/29"), false, "IPv4 Service Continuity Prefix"},
	{netip.MustParsePrefix("192.0.0.8/32"), false, "IPv4 dummy address"},
	{netip.MustParsePrefix("192.0.0.9/32"), true, "Port Control Protocol Anycast"},
	{netip.MustParsePrefix("192.0.0.10/32"), true, "Traversal Using Relays around NAT Anycast"},
	{netip.MustParsePrefix("192.0.0.170/32"), false, "NAT64/DNS64 Discovery"},
	{netip.MustParsePrefix("192.0.0.171/32"), false, "NAT64/DNS64 Discovery"},
	{netip.MustParsePrefix("192.0.2.0/24"), false, "Documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("192.31.196.0/24"), true, "AS112-v4"},
	{netip.MustParsePrefix("192.52.193.0/24"), true, "AMT"},
	{netip.MustParsePrefix("192.88.99.0/24"), false, "Deprecated (6to4 Relay Anycast)"},
	{netip.MustParsePrefix("192.168.0.0/16"), false, "Private-Use"},
	{netip.MustParsePrefix("192.175.48.0/24"), true, "Direct Delegation AS112 Service"},
	{netip.MustParsePrefix("198.18.0.0/15"), false, "Benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), false, "Documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), false, "Documentation (TEST-NET-3)"},
	{netip.MustParsePrefix("240.0.0.0/4"), false, "Reserved"},
	{netip.MustParsePrefix("255.255.255.255/32"), false, "Limited Broadcast"},
	// IPv6.
	{netip.MustParsePrefix("::1/128"), false, "Loopback Address"},
	{netip.MustParsePrefix("::/128"), false, "Unspecified Address"},
	{netip.MustParsePrefix("::ffff:0:0/96"), false, "IPv4-mapped Address"},
	{netip.MustParsePrefix("64:ff9b::/96"), true, "IPv4-IPv6 Translat."},
	{netip.MustParsePrefix("64:ff9b:1::/48"), false, "IPv4-IPv6 Translat."},
	{netip.MustParsePrefix("100::/64"), false, "Discard-Only Address Block"},
	{netip.MustParsePrefix("100:0:0:1::/64"), false, "Dummy IPv6 Prefix"},
	{netip.MustParsePrefix("2001::/23"), false, "IETF Protocol Assignments"},
	{netip.MustParsePrefix("2001::/32"), false, "TEREDO"},
	{netip.MustParsePrefix("2001:1::1/128"), true, "Port Control Protocol Anycast"},
	{netip.MustParsePrefix("2001:1::2/128"), true, "Traversal Using Relays around NAT Anycast"},
	{netip.MustParsePrefix("2001:1::3/128"), true, "DNS-SD Service Registration Protocol Anycast"},
	{netip.MustParsePrefix("2001:2::/48"), false, "Benchmarking"},
	{netip.MustParsePrefix("2001:3::/32"), true, "AMT"},
	{netip.MustParsePrefix("2001:4:112::/48"), true, "AS112-v6"},
	{netip.MustParsePrefix("2001:10::/28"), false, "Deprecated (previously ORCHID)"},
	{netip.MustParsePrefix("2001:20::/28"), true, "ORCHIDv2"},
	{netip.MustParsePrefix("2001:30::/28"), true, "Drone Remote ID Protocol Entity Tags (DETs) Prefix"},
	{netip.MustParsePrefix("2001:db8::/32"), false, "Documentation"},
	{netip.MustParsePrefix("2002::/16"), false, "6to4"},
	{netip.MustParsePrefix("2620:4f:8000::/48"), true, "Direct Delegation AS112 Service"},
	{netip.MustParsePrefix("3fff::/20"), false, "Documentation"},
	{netip.MustParsePrefix("5f00::/16"), false, "Segment Routing (SRv6) SIDs"},
	{netip.MustParsePrefix("fc00::/7"), false, "Unique-Local"},
	{netip.MustParsePrefix("fe80::/10"), false, "Link-Local Unicast"},
}

// ipv6Unicast is the only IPv6 space the IANA IPv6 Address Space registry
// (https://www.iana.org/assignments/ipv6-address-space) gives out as global
// unicast. The rest is reserved by the IETF or special: the deprecated
// IPv4-compatible addresses (::/96, RFC 4291), site-local fec0::/10 (RFC
// 3879), multicast ff00::/8; none of it reaches a public host.
var ipv6Unicast = netip.MustParsePrefix("2000::/3")

// Prefixes whose addresses carry an IPv4 address (RFC 4291 §2.5.5, RFC
// 6052, RFC 3056, RFC 2765): such an address is public only if the IPv4
// address it carries is.
var (
	ipv4Mapped     = netip.MustParsePrefix("::ffff:0:0/96")
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// PublicAddr reports whether ip may be reached as a public host: a unicast
// address that no entry of the IANA special-purpose registries (above)
// marks as not globally reachable, and for IPv6 inside 2000::/3. An IPv6
// address that carries an IPv4 one (IPv4-mapped, IPv4-translated, NAT64's
// 64:ff9b::/96, 6to4's 2002::/16) is judged by the IPv4 address it
// carries; so ::ffff:127.0.0.1, ::ffff:0:7f00:1, 64:ff9b::10.0.0.1 and
// 2002:7f00:1:: are all refused. A zone is ignored.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return false
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case ipv4Mapped.Contains(ip), ipv4Translated.Contains(ip), nat64.Contains(ip):
			return PublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			var v4 [4]byte
			binary.BigEndian.PutUint32(v4[:], binary.BigEndian.Uint32(b[2:6]))
			return PublicAddr(netip.AddrFrom4(v4))
		case !ipv6Unicast.Contains(ip):
			return false
		}
	} else if ip.IsMulticast() {
		// 224.0.0.0/4 is in the IPv4 multicast registry, not the
		// special-purpose one, and reaches no single host.
		return false
	}
	best, global := -1, true
	for _, e := range specialAddrs {
		if e.block.Bits() > best && e.block.Contains(ip) {
			best, global = e.block.Bits(), e.global
		}
	}
	return global
}
