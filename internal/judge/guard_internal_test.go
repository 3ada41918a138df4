package judge

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// countingServer is a listener on the loopback address that counts the
// connections it accepts.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// TestGuardedClientDialsOnlyAllowedAddresses checks the guard where DNS
// decides: under "*" a name that resolves to the loopback address
// (localhost) reaches nothing, not even a connection; the same listener is
// reached once its address is allowed.
func TestGuardedClientDialsOnlyAllowedAddresses(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	byName := "http://localhost:" + strconv.Itoa(port) + "/v1/models"
	byAddr := srv.URL + "/v1/models"

	public := guardedClient(attune.JudgePolicy{Hosts: []attune.HostRule{{Any: true}}})
	for _, u := range []string{byName, byAddr} {
		resp, err := public.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s under \"*\": %s, want refused", u, resp.Status)
		}
		var fe *FatalError
		if !errors.As(err, &fe) || !errors.Is(err, errAddressRefused) {
			t.Fatalf("GET %s: %v, want a fatal refusal", u, err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the listener saw %d connections, want none", n)
	}

	allowed := guardedClient(attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}})
	resp, err := allowed.Get(byAddr)
	if err != nil {
		t.Fatalf("GET an allowed address: %v", err)
	}
	resp.Body.Close()
	if n := conns.Load(); n != 1 {
		t.Fatalf("the listener saw %d connections, want 1", n)
	}
	// Another port of the same address is not allowed by a rule with a
	// port.
	ported := guardedClient(attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: "1"}}})
	if resp, err := ported.Get(byAddr); err == nil {
		resp.Body.Close()
		t.Fatal("a rule for port 1 let a call through to another port")
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the listener saw %d connections, want 1", n)
	}
}
