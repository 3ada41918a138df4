package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
)

// Round trips to PostgreSQL bound what one request costs whatever the
// load: each is a wait on the network and a wake-up of a backend. They
// are deterministic, so they are held here, on the wire, through a
// counting proxy (the benchmarks report them beside their references).
const (
	maxPageRoundTrips   = 2 // an item page: session, then one batch
	maxSubmitRoundTrips = 8 // an htmx submit answered with the next item
)

// submitFlow is an annotator signed in on a project, holding the item at
// path; rt, when set, counts the round trips of the server's store.
type submitFlow struct {
	s      *benchServer
	rt     *dbtest.RoundTrips
	cookie *http.Cookie
	path   string
	body   string
}

func newSubmitFlow(tb testing.TB, items int) *submitFlow {
	tb.Helper()
	db, rt := dbtest.NewCounted(tb)
	s := newBenchServerOn(tb, db)
	lead := s.user("lead@example.org", attune.RoleLead)
	ann := s.user("ann@example.org", attune.RoleAnnotator)
	var lines strings.Builder
	for i := range items {
		fmt.Fprintf(&lines, `{"id":"i%06d","messages":[{"role":"user","content":"I keep worrying about money (%d)."},{"role":"assistant","content":"That sounds exhausting. What would help most right now?"}]}`+"\n", i, i)
	}
	p := s.project("round trips", "empathetic-dialogue@2", 1, lines.String(), lead, []*attune.User{ann})
	f := &submitFlow{s: s, rt: rt, cookie: s.signIn(ann), body: form(likertAnswers, "clock", "js", "active_ms", "15000").Encode()}
	req := httptest.NewRequest(http.MethodPost, fmt.Sprintf("http://attune.test/projects/%d/annotate", p.ID), nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := f.do(tb, req)
	if rec.Code != http.StatusSeeOther {
		tb.Fatalf("claim: %d", rec.Code)
	}
	f.path = rec.Header().Get("Location")
	return f
}

func (f *submitFlow) do(tb testing.TB, req *http.Request) *httptest.ResponseRecorder {
	req.AddCookie(f.cookie)
	rec := httptest.NewRecorder()
	f.s.web.ServeHTTP(rec, req)
	return rec
}

// page opens the item held, as a browser does, and returns the round trips.
func (f *submitFlow) page(tb testing.TB) int64 {
	tb.Helper()
	f.rt.Reset()
	rec := f.do(tb, httptest.NewRequest(http.MethodGet, "http://attune.test"+f.path, nil))
	n := f.rt.Count()
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET %s: %d", f.path, rec.Code)
	}
	return n
}

// submit submits the item held with htmx, moves on to the next one, and
// returns the round trips; false when the answer was the done screen.
func (f *submitFlow) submit(tb testing.TB) (int64, bool) {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://attune.test"+f.path+"/labels", strings.NewReader(f.body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("HX-Request", "true")
	if f.rt != nil {
		f.rt.Reset()
	}
	rec := f.do(tb, req)
	var n int64
	if f.rt != nil {
		n = f.rt.Count()
	}
	if rec.Code != http.StatusOK {
		tb.Fatalf("submit %s: %d", f.path, rec.Code)
	}
	next := rec.Header().Get("HX-Push-Url")
	if !itemPathRE.MatchString(next) {
		return n, false
	}
	f.path = next
	return n, true
}

func TestRoundTripsPerRequest(t *testing.T) {
	t.Parallel()
	f := newSubmitFlow(t, 20)
	// The first of each opens the pool's connections; count the rest.
	f.page(t)
	f.submit(t)
	for i := range 5 {
		if n := f.page(t); n > maxPageRoundTrips {
			t.Errorf("item page %d: %d round trips, want at most %d", i, n, maxPageRoundTrips)
		}
		n, more := f.submit(t)
		if n > maxSubmitRoundTrips {
			t.Errorf("submit-and-next %d: %d round trips, want at most %d", i, n, maxSubmitRoundTrips)
		}
		t.Logf("page then submit-and-next: round trips %d", n)
		if !more {
			t.Fatal("the queue ran out early")
		}
	}
}
