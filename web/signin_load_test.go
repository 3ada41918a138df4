package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web"
)

// TestSignInGuessesRaceTheLimit sends 30 wrong guesses at one account at
// the same moment: the limit is 5, so at most 5 passwords may be checked
// and the rest must be refused (busy while checks are under way, locked
// once they have failed), however the requests interleave.
func TestSignInGuessesRaceTheLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.SignInMaxPerAccount = 5; o.SignInMaxPerAddress = 1000 })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	statuses := make(chan int, 30)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 30 {
		c := a.client()
		wg.Go(func() {
			<-start
			statuses <- c.signIn(ann.Email, fmt.Sprintf("guess-number-%d", i)).StatusCode
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusUnauthorized] > 5 || counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests]+counts[http.StatusServiceUnavailable] != 30 {
		t.Fatalf("30 concurrent guesses with a limit of 5 got %v, want at most 5 × 401 and the rest 429 or 503", counts)
	}
	var recorded int
	if err := a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM sign_in_attempts WHERE email = $1`, ann.Email).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != counts[http.StatusUnauthorized] {
		t.Fatalf("%d attempts recorded for %d checked passwords", recorded, counts[http.StatusUnauthorized])
	}
	// The right password is refused too once the account is locked.
	for range 5 - counts[http.StatusUnauthorized] {
		a.client().signIn(ann.Email, "one-more-guess")
	}
	wantStatus(t, a.client().signIn(ann.Email, "pw-"+ann.Email), http.StatusTooManyRequests)
}

// signInBurst signs in 200 clients at once at base: a quarter with the
// right password, a quarter with a wrong one, half with emails no account
// has. It returns the statuses by count.
func signInBurst(tb testing.TB, db *store.DB, base string, params password.Params) map[int]int {
	tb.Helper()
	ctx := context.Background()
	const n = 200
	// One hash for every account: making 100 would cost more than the burst.
	hash, err := password.Hash("the-shared-password", params)
	if err != nil {
		tb.Fatal(err)
	}
	type try struct{ email, pw string }
	tries := make([]try, 0, n)
	for i := range n / 2 {
		email := fmt.Sprintf("person%03d@example.org", i)
		if _, err := db.CreateUser(ctx, nil, store.NewUser{Email: email, Role: attune.RoleAnnotator, PasswordHash: hash}); err != nil {
			tb.Fatal(err)
		}
		pw := "the-shared-password"
		if i%2 == 1 {
			pw = "a-wrong-password"
		}
		tries = append(tries, try{email, pw}, try{fmt.Sprintf("nobody%03d@example.org", i), "a-wrong-password"})
	}
	statuses := make(chan int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tr := range tries {
		wg.Go(func() {
			<-start
			form := url.Values{"email": {tr.email}, "password": {tr.pw}}
			req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
			resp, err := client.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	return counts
}

// heapPeak samples the bytes of live and unswept heap objects every half
// millisecond (runtime/metrics reads without stopping the world) until
// stop is called, which returns the highest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		peak := read()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				result <- max(peak, read())
				return
			case <-tick.C:
				peak = max(peak, read())
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}

// TestSignInMemoryStaysBounded signs in 200 clients at once and measures
// the heap: password hashing holds its memory only in the server's few
// hash slots, and unknown emails take none, so the peak stays under
// slots × 2 × the hash's memory (one block live per slot, one awaiting the
// collector) plus 48 MiB for everything else, where 200 unbounded hashes
// would take 200 blocks. Each hash here holds 4 MiB rather than the
// production 19 MiB, to keep the test quick under the race detector; the
// bound scales with it (BenchmarkSignInBurst measures the production
// setting). Not parallel: the heap must be this test's alone.
func TestSignInMemoryStaysBounded(t *testing.T) {
	params := password.Params{MemoryKiB: 4 * 1024, Time: 1, Threads: 1}
	a := newApp(t, func(o *web.Options) {
		o.PasswordParams = params
		o.SignInMaxPerAddress = 1000
	})
	slots := runtime.GOMAXPROCS(0)
	runtime.GC()
	baseline := heapPeak()()
	stop := heapPeak()
	counts := signInBurst(t, a.db, a.srv.URL, params)
	peak := stop()
	if counts[http.StatusSeeOther] != 50 || counts[http.StatusUnauthorized] != 150 {
		t.Fatalf("200 sign-ins got %v, want 50 × 303 and 150 × 401", counts)
	}
	grown := int64(peak) - int64(baseline)
	bound := int64(slots)*2*int64(params.MemoryKiB)<<10 + 48<<20
	t.Logf("heap peak %d MiB over a %d MiB baseline; bound %d MiB (%d slots)", grown>>20, baseline>>20, bound>>20, slots)
	if grown > bound {
		t.Fatalf("200 concurrent sign-ins grew the heap by %d MiB, over the bound of %d MiB", grown>>20, bound>>20)
	}
}

// BenchmarkSignInBurst signs in 200 clients at once with the production
// password parameters and reports the heap's peak growth (peak-MiB) and the
// burst's duration; run it with make bench.
func BenchmarkSignInBurst(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		db := dbtest.New(b)
		o := testOptions()
		o.PasswordParams = password.Default
		o.SignInMaxPerAddress = 1000
		w := web.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)), o)
		srv := httptest.NewServer(w)
		runtime.GC()
		baseline := heapPeak()()
		stop := heapPeak()
		b.StartTimer()
		counts := signInBurst(b, db, srv.URL, password.Default)
		b.StopTimer()
		peak := stop()
		srv.Close()
		w.Close()
		if counts[http.StatusSeeOther] != 50 || counts[http.StatusUnauthorized] != 150 {
			b.Fatalf("200 sign-ins got %v", counts)
		}
		b.ReportMetric(float64(int64(peak)-int64(baseline))/(1<<20), "peak-MiB")
		b.StartTimer()
	}
}
