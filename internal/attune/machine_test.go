package attune_test

import (
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestOnThisMachine holds the one notion of "this machine" that decides
// whether an API key may go over plain http, and which hosts the judge
// policy calls local.
func TestOnThisMachine(t *testing.T) {
	cases := []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.5.5.5", true},
		{"::1", true},
		{"0:0:0:0:0:0:0:1", true},
		{"::ffff:127.0.0.1", true},
		{"::1%lo", true},
		{"localhost", true},
		{"LocalHost", true},
		{"localhost.", true},
		{"api.localhost", true},
		{"0.0.0.0", false}, // unspecified: where it leads is the system's choice
		{"::", false},
		{"localhost.example.com", false},
		{"mylocalhost", false},
		{"localhost-proxy.internal", false},
		{"127.0.0.1.nip.io", false},
		{"10.0.0.1", false},
		{"192.168.1.10", false},
		{"fe80::1", false},
		{"::ffff:10.0.0.1", false},
		{"api.openai.com", false},
		{"", false},
	}
	for _, c := range cases {
		if got := attune.OnThisMachine(c.host); got != c.want {
			t.Errorf("OnThisMachine(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}

func TestKeyInClear(t *testing.T) {
	cases := []struct {
		base string
		want bool
	}{
		{"https://api.openai.com/v1", false},
		{"https://10.0.0.1/v1", false},
		{"http://127.0.0.1:11434/v1", false},
		{"http://[::1]:8080/v1", false},
		{"HTTP://LOCALHOST:1234/v1", false},
		{"http://localhost.:1234/v1", false},
		{"http://localhost.example.com/v1", true},
		{"http://127.0.0.1.nip.io/v1", true},
		{"http://0.0.0.0:8080/v1", true},
		{"http://10.0.0.1/v1", true},
		{"http://[fe80::1]/v1", true},
		{"http://%zz", true}, // does not parse
	}
	for _, c := range cases {
		if got := attune.KeyInClear(c.base); got != c.want {
			t.Errorf("KeyInClear(%q) = %v, want %v", c.base, got, c.want)
		}
	}
}
