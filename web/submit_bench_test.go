package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// cpuTime is the CPU time used so far by this process and by the
// database's backends (read from /proc: PostgreSQL runs on this machine).
func cpuTime(tb testing.TB, pool *pgxpool.Pool) (self, backends time.Duration) {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			tb.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // the backend ended, or PostgreSQL is elsewhere
		}
		// Fields after the command (which may hold spaces): utime and
		// stime are the 12th and 13th, in clock ticks of 10 ms.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, f := range fields[11:13] {
			ticks, _ := strconv.ParseInt(f, 10, 64)
			backends += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return self, backends
}

// cpuMeter measures the CPU spent between start and stop, in this process
// and in the database's backends.
type cpuMeter struct {
	tb         testing.TB
	pool       *pgxpool.Pool
	self, back time.Duration
}

func startCPU(tb testing.TB, pool *pgxpool.Pool) *cpuMeter {
	m := &cpuMeter{tb: tb, pool: pool}
	m.self, m.back = cpuTime(tb, pool)
	return m
}

func (m *cpuMeter) stop() time.Duration {
	self, back := cpuTime(m.tb, m.pool)
	return self - m.self + back - m.back
}

// cpuMeasure is a CPU meter in the shape dbtest.InsertReference takes.
func cpuMeasure(tb testing.TB) func(*pgxpool.Pool) func() time.Duration {
	return func(pool *pgxpool.Pool) func() time.Duration { return startCPU(tb, pool).stop }
}

// BenchmarkSubmitAndNext has one annotator submit item after item with
// htmx, each answered with the next item, as fast as the server answers,
// in projects of 1k, 10k and 100k items: what one submit-and-next costs,
// and that the cost does not grow with the project. It reports the round
// trips to PostgreSQL per submit-and-next (counted on the wire, on the
// same database) beside the reference's one per insert, and the CPU per
// submit-and-next (this process, which includes the server, and
// PostgreSQL's backends) beside the CPU per single-row insert measured
// in the same run.
func BenchmarkSubmitAndNext(b *testing.B) {
	for _, items := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) {
			dbURL := dbtest.NewURL(b)
			db, err := store.Open(context.Background(), dbURL)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(db.Close)
			s := newBenchServerOn(b, db)
			lead := s.user("lead@example.org", attune.RoleLead)
			ann := s.user("ann@example.org", attune.RoleAnnotator)
			var lines strings.Builder
			for i := range items {
				fmt.Fprintf(&lines, `{"id":"i%06d","messages":[{"role":"user","content":"I keep worrying about money, night after night (%d)."},{"role":"assistant","content":"That sounds exhausting. What would help most right now?"}]}`+"\n", i, i)
			}
			p := s.project("bench", "empathetic-dialogue@2", 1, lines.String(), lead, []*attune.User{ann})
			f := &submitFlow{s: s, cookie: s.signIn(ann), body: form(likertAnswers, "clock", "js", "active_ms", "15000").Encode()}
			req := httptest.NewRequest(http.MethodPost, fmt.Sprintf("http://attune.test/projects/%d/annotate", p.ID), nil)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			f.path = f.do(b, req).Header().Get("Location")

			// Round trips, on the wire: the same handler over a store
			// whose connections go through a counting proxy.
			counted, rt := dbtest.Counted(b, dbURL)
			cf := *f
			cf.s = newBenchServerOn(b, counted)
			cf.rt = rt
			cf.submit(b) // opens the proxied pool's connections
			var trips int64
			const sample = 5
			for range sample {
				n, more := cf.submit(b)
				if !more {
					b.Fatal("the queue ran out while counting")
				}
				trips += n
			}
			f.path = cf.path
			if _, err := counted.Pool().Exec(context.Background(), dbtest.ReferenceTable); err != nil {
				b.Fatal(err)
			}
			var refTrips int64
			for range 2 { // the first prepares the statement
				rt.Reset()
				if _, err := counted.Pool().Exec(context.Background(), dbtest.ReferenceInsert, 1); err != nil {
					b.Fatal(err)
				}
				refTrips = rt.Count()
			}

			refRate, refCPU := dbtest.InsertReference(b, dbURL, 1, 2000, cpuMeasure(b))
			cpu := startCPU(b, db.Pool())
			ops := 0
			b.ResetTimer()
			for b.Loop() {
				if _, more := f.submit(b); !more {
					b.Fatalf("the queue of %d items ran out after %d submits", items, ops)
				}
				ops++
			}
			b.StopTimer()
			perOp := cpu.stop() / time.Duration(ops)
			b.ReportMetric(float64(trips)/sample, "round-trips/op")
			b.ReportMetric(float64(trips)/sample/float64(refTrips), "round-trips-vs-insert")
			b.ReportMetric(ms(perOp), "cpu-ms/op")
			b.ReportMetric(ms(refCPU), "ref-cpu-ms/insert")
			b.ReportMetric(float64(perOp)/float64(refCPU), "cpu-vs-insert")
			b.Logf("%d items: %.1f round trips per submit-and-next (reference insert: %d); CPU %.2f ms per submit-and-next, reference insert %.3f ms (%.0f inserts/s from one goroutine)",
				items, float64(trips)/sample, refTrips, ms(perOp), ms(refCPU), refRate)
		})
	}
}

// BenchmarkSaturation has many annotators submit-and-next over real HTTP
// with no time between items, until a project's queue is empty: the most
// submits per second the server and PostgreSQL sustain together on this
// machine. Its reference, in the same run on the same PostgreSQL, is the
// minimal submit-and-next on the same semantics (dbtest.SubmitReference)
// with as many annotators, the two in alternating rounds (the reference
// first in odd rounds, second in even ones); it reports the medians of
// the rounds and their ratio. It checks afterwards that every item has
// exactly overlap answer sets, none doubled.
func BenchmarkSaturation(b *testing.B) {
	const (
		annotators = 64
		overlap    = 3
		items      = 1000
	)
	dbURL := dbtest.NewURL(b)
	// The server gets as many connections as the reference: the pool's
	// size is the setting that bounds a busy single server (README).
	db, err := store.Open(context.Background(), dbtest.WithParam(b, dbURL, "pool_max_conns", strconv.Itoa(dbtest.ReferenceWorkers)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	s := newBenchServerOn(b, db)
	srv := httptest.NewServer(s.web)
	b.Cleanup(srv.Close)
	lead, anns, clients := signedInAnnotators(b, s, srv, annotators)
	lines := worryLines(items)
	body := form(likertAnswers, "clock", "js", "active_ms", "15000").Encode()

	var rates, refRates []float64
	for b.Loop() {
		b.StopTimer()
		run := len(rates) + 1
		p := s.project(fmt.Sprintf("bench-%d", run), "empathetic-dialogue@2", overlap, lines.String(), lead, anns)
		if run%2 == 1 {
			refRates = append(refRates, dbtest.SubmitReference(b, dbURL, annotators, items, overlap))
		}
		b.StartTimer()

		var mu sync.Mutex
		var failures []string
		fail := func(format string, args ...any) {
			mu.Lock()
			failures = append(failures, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		submits := 0
		// The settler runs as serve runs it, and the round ends when it
		// has written every label row the submits left to it.
		settleCtx, stopSettler := context.WithCancel(context.Background())
		settled := make(chan struct{})
		go func() { defer close(settled); db.NewSettler(slog.New(slog.DiscardHandler)).Run(settleCtx) }()
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				claim, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/projects/%d/annotate", srv.URL, p.ID), nil)
				claim.Header.Set("Origin", srv.URL)
				claim.Header.Set("Sec-Fetch-Site", "same-origin")
				resp, err := c.Do(claim)
				if err != nil {
					fail("annotate: %v", err)
					return
				}
				resp.Body.Close()
				path := resp.Header.Get("Location")
				if resp.StatusCode != http.StatusSeeOther || !itemPathRE.MatchString(path) {
					return // nothing left for this annotator
				}
				for {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+path+"/labels", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.Header.Set("Origin", srv.URL)
					req.Header.Set("Sec-Fetch-Site", "same-origin")
					req.Header.Set("HX-Request", "true")
					resp, err := c.Do(req)
					if err != nil {
						fail("submit: %v", err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						fail("submit %s: %d", path, resp.StatusCode)
						return
					}
					mu.Lock()
					submits++
					mu.Unlock()
					next := resp.Header.Get("HX-Push-Url")
					if !itemPathRE.MatchString(next) {
						return // the done screen
					}
					path = next
				}
			})
		}
		wg.Wait()
		for {
			var queued bool
			if err := db.Pool().QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM labels_pending) OR EXISTS (SELECT 1 FROM settle_queue)`).Scan(&queued); err != nil {
				b.Fatal(err)
			}
			if !queued {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		rates = append(rates, float64(submits)/time.Since(start).Seconds())
		stopSettler()
		<-settled
		b.StopTimer()
		if len(failures) > 0 {
			b.Fatalf("%d failures, first: %s", len(failures), failures[0])
		}
		var wrong, total, doubled int
		ctx := context.Background()
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE n <> $2), coalesce(sum(n), 0) FROM (
			SELECT i.id, count(s.id) AS n FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id) x`,
			p.ID, overlap).Scan(&wrong, &total); err != nil {
			b.Fatal(err)
		}
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT item_id, rater_id FROM answer_sets WHERE project_id = $1 GROUP BY 1, 2 HAVING count(*) > 1) d`,
			p.ID).Scan(&doubled); err != nil {
			b.Fatal(err)
		}
		if wrong != 0 || total != items*overlap || doubled != 0 {
			b.Fatalf("%d items without exactly %d answer sets; %d answer sets (want %d); %d doubled", wrong, overlap, total, items*overlap, doubled)
		}
		if run%2 == 0 {
			refRates = append(refRates, dbtest.SubmitReference(b, dbURL, annotators, items, overlap))
		}
		b.StartTimer()
	}
	rate, ref := medianRate(rates), medianRate(refRates)
	b.ReportMetric(rate, "submits/s")
	b.ReportMetric(ref, "ref-submits/s")
	b.ReportMetric(rate/ref, "x_of_minimal")
	b.Logf("%d annotators over HTTP, no time between items: %.0f submit-and-next/s (rounds %.0f); minimal submit-and-next, same annotators: %.0f/s (rounds %.0f); ratio of medians %.2f; every item has exactly %d answer sets, none doubled",
		annotators, rate, rates, ref, refRates, rate/ref, overlap)
}

// medianRate is the middle of the figures (the mean of the middle two for
// an even count).
func medianRate(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
