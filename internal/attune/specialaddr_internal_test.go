package attune

import (
	"net/netip"
	"testing"
)

// lastAddr is the last address of a block.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestPublicAddrRegistry walks every entry of the special-purpose
// registries: the first and the last address of each block are public
// exactly when the entry is globally reachable and no more specific entry
// inside it says otherwise. The blocks that carry an IPv4 address are
// judged by it and are checked in TestPublicAddrExamples.
func TestPublicAddrRegistry(t *testing.T) {
	carries := map[netip.Prefix]bool{ipv4Mapped: true, nat64: true, sixToFour: true}
	for _, e := range specialAddrs {
		if carries[e.block] {
			continue
		}
		for _, ip := range []netip.Addr{e.block.Addr(), lastAddr(e.block)} {
			want := e.global
			for _, inner := range specialAddrs {
				if inner.block.Bits() > e.block.Bits() && inner.block.Contains(ip) {
					want = inner.global
				}
			}
			if ip.Is4() && ip.IsMulticast() {
				want = false
			}
			if got := PublicAddr(ip); got != want {
				t.Errorf("%s (%s, in %s): public %v, want %v", ip, e.name, e.block, got, want)
			}
		}
	}
}

// TestPublicAddrExamples holds the forms the egress test found passing,
// and the ones that must stay public.
func TestPublicAddrExamples(t *testing.T) {
	for _, tc := range []struct {
		ip     string
		public bool
	}{
		{"::127.0.0.1", false},     // IPv4-compatible, deprecated
		{"::8.8.8.8", false},       // the same form never reaches a public host
		{"::ffff:0:7f00:1", false}, // IPv4-translated 127.0.0.1
		{"::ffff:0:a00:1", false},  // IPv4-translated 10.0.0.1
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:8.8.8.8", true},
		{"fec0::1", false}, // site-local
		{"feff::1", false},
		{"100::1", false},
		{"100::ffff:ffff:ffff:ffff", false},
		{"2001::1", false},         // Teredo
		{"2001:1::1", true},        // PCP anycast, globally reachable
		{"2001:1::4", false},       // the rest of 2001::/23
		{"2001:db8::1", false},     // documentation
		{"3fff::1", false},         // documentation
		{"64:ff9b::7f00:1", false}, // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::808:808", true},    // NAT64 of 8.8.8.8
		{"64:ff9b:1::808:808", false}, // local-use translation
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2002:c0a8:1::1", false},     // 6to4 of 192.168.0.1
		{"2002:808:808::1", true},     // 6to4 of 8.8.8.8
		{"ff02::1", false},
		{"fe80::1%eth0", false},
		{"192.0.2.1", false},
		{"198.51.100.7", false},
		{"203.0.113.200", false},
		{"192.0.0.9", true},
		{"192.0.0.11", false},
		{"192.88.99.1", false},
		{"100.64.0.1", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001::1", true},
	} {
		if got := PublicAddr(netip.MustParseAddr(tc.ip)); got != tc.public {
			t.Errorf("PublicAddr(%s) = %v, want %v", tc.ip, got, tc.public)
		}
	}
}
