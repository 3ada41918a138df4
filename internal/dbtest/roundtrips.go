package dbtest

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/attune/attune/internal/store"
)

// RoundTrips counts the round trips between a store and PostgreSQL, as a
// proxy on the wire sees them: each time a client speaks after the
// server did (or first), that is one round trip, however many statements
// a pipelined batch carries. It counts every connection of the store's
// pool together.
type RoundTrips struct {
	n atomic.Int64
}

// Count returns the round trips since the last Reset.
func (rt *RoundTrips) Count() int64 { return rt.n.Load() }

// Reset starts counting again from zero.
func (rt *RoundTrips) Reset() { rt.n.Store(0) }

// NewCounted returns an open store on a fresh migrated database for this
// test whose every connection goes through a counting proxy.
func NewCounted(t testing.TB) (*store.DB, *RoundTrips) {
	t.Helper()
	return Counted(t, NewURL(t))
}

// Counted returns an open store on the database at target whose every
// connection goes through a counting proxy.
func Counted(t testing.TB, target string) (*store.DB, *RoundTrips) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &RoundTrips{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", u.Host)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rt.pipe(client, server)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	proxied := *u
	proxied.Host = ln.Addr().String()
	db, err := store.Open(context.Background(), proxied.String())
	if err != nil {
		t.Fatalf("dbtest: open through proxy: %v", err)
	}
	t.Cleanup(db.Close) // runs first: before the proxy closes and the database is dropped
	return db, rt
}

// pipe relays one connection both ways, counting the turns the client
// takes.
func (rt *RoundTrips) pipe(client, server net.Conn) {
	var mu sync.Mutex
	clientSpoke := false
	relay := func(dst, src net.Conn, fromClient bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				mu.Lock()
				if fromClient && !clientSpoke {
					rt.n.Add(1)
				}
				clientSpoke = fromClient
				mu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// One side ended: end the other, so that both relays return.
		dst.Close()
		src.Close()
	}
	done := make(chan struct{})
	go func() {
		relay(client, server, false)
		close(done)
	}()
	relay(server, client, true)
	<-done
}
