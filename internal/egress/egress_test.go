package egress_test

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
	"github.com/attune/attune/internal/egress"
)

// TestTransportDialsOnlyAllowedAddresses checks the guard where DNS
// decides: under "*" a name that resolves to the loopback address
// (localhost), or the address itself, reaches nothing, not even a
// connection; the listener is reached once its address is allowed.
func TestTransportDialsOnlyAllowedAddresses(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)

	public := &http.Client{Transport: egress.Transport(attune.JudgePolicy{Hosts: []attune.HostRule{{Any: true}}})}
	for _, u := range []string{"http://localhost:" + port + "/", srv.URL + "/"} {
		resp, err := public.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s under \"*\": %s, want refused", u, resp.Status)
		}
		var refused *egress.RefusedError
		if !errors.As(err, &refused) || !errors.Is(err, egress.ErrRefused) {
			t.Fatalf("GET %s: %v, want a refusal", u, err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the listener saw %d connections, want none", n)
	}
	allowed := &http.Client{Transport: egress.Transport(attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}})}
	resp, err := allowed.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET an allowed address: %v", err)
	}
	resp.Body.Close()
	if n := conns.Load(); n != 1 {
		t.Fatalf("the listener saw %d connections, want 1", n)
	}
}
