package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/static"
	"github.com/attune/attune/web"
)

// benchServer is the real handler on a fresh database, for benchmarks.
type benchServer struct {
	tb  testing.TB
	db  *store.DB
	web *web.Server
}

func newBenchServer(tb testing.TB) *benchServer {
	tb.Helper()
	return newBenchServerOn(tb, dbtest.New(tb))
}

// newBenchServerOn is newBenchServer on a store the caller opened.
func newBenchServerOn(tb testing.TB, db *store.DB) *benchServer {
	tb.Helper()
	if err := db.LoadBuiltinRubrics(context.Background()); err != nil {
		tb.Fatal(err)
	}
	w := web.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)), testOptions())
	tb.Cleanup(w.Close)
	return &benchServer{tb: tb, db: db, web: w}
}

func (s *benchServer) user(email string, role attune.Role) *attune.User {
	hash, err := password.Hash("pw-"+email, fastParams)
	if err != nil {
		s.tb.Fatal(err)
	}
	u, err := s.db.CreateUser(context.Background(), nil, store.NewUser{Email: email, Role: role, PasswordHash: hash})
	if err != nil {
		s.tb.Fatal(err)
	}
	return u
}

// project creates a project of the rubric with the items (JSONL) and adds
// the annotators.
func (s *benchServer) project(name, ref string, overlap int, items string, lead *attune.User, anns []*attune.User) *attune.Project {
	ctx := context.Background()
	r, _ := rubric.ParseRef(ref)
	_, rv, err := s.db.FindRubric(ctx, r)
	if err != nil {
		s.tb.Fatal(err)
	}
	p, err := s.db.CreateProject(ctx, &lead.ID, store.NewProject{Name: name, RubricVersionID: rv.ID, Overlap: overlap, Lease: time.Hour})
	if err != nil {
		s.tb.Fatal(err)
	}
	if _, err := importer.Import(ctx, s.db, p, strings.NewReader(items), importer.Options{Source: "bench"}); err != nil {
		s.tb.Fatal(err)
	}
	for _, u := range anns {
		if err := s.db.AddMember(ctx, &lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			s.tb.Fatal(err)
		}
	}
	return p
}

// signIn signs u in through the real route and returns the session cookie.
func (s *benchServer) signIn(u *attune.User) *http.Cookie {
	form := url.Values{"email": {u.Email}, "password": {"pw-" + u.Email}}
	req := httptest.NewRequest(http.MethodPost, "http://attune.test/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	s.web.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		s.tb.Fatalf("sign in as %s: %d", u.Email, rec.Code)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == "attune_session" {
			return c
		}
	}
	s.tb.Fatal("no session cookie")
	return nil
}

// percentile returns the p-th percentile (0–100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRenderWorkspace40Turns times the server answering the item page
// of a 40-turn conversation under the twelve-criteria rubric: the real
// handler with its session, access checks, queries and render, through
// httptest.NewRecorder. Beside it, in the same loop and so under the same
// load, it times the same handler serving a 52 KB static file (htmx), the
// least a request can cost, and reports the page's median as a multiple
// of the file's (x-static-p50). ns/op covers both requests.
func BenchmarkRenderWorkspace40Turns(b *testing.B) { benchmarkRenderWorkspace(b, 40) }

// BenchmarkRenderWorkspace186Turns is BenchmarkRenderWorkspace40Turns with
// the longest conversation of the corpus the project was built for.
func BenchmarkRenderWorkspace186Turns(b *testing.B) { benchmarkRenderWorkspace(b, 186) }

func benchmarkRenderWorkspace(b *testing.B, turns int) {
	s := newBenchServer(b)
	lead := s.user("lead@example.org", attune.RoleLead)
	ann := s.user("ann@example.org", attune.RoleAnnotator)
	p := s.project("bench", "coaching-conversation@2.0", 1, conversation("long", turns, strings.Repeat("It has been like this for months. ", 4)), lead, []*attune.User{ann})
	a, err := s.db.NextAssignment(context.Background(), p.ID, ann.ID)
	if err != nil {
		b.Fatal(err)
	}
	cookie := s.signIn(ann)
	get := func(path string, cookie *http.Cookie) int {
		req := httptest.NewRequest(http.MethodGet, "http://attune.test"+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		s.web.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec.Body.Len()
	}
	page := fmt.Sprintf("/projects/%d/items/%d", p.ID, a.ItemID)
	file := static.URL("js/htmx.min.js")
	size := get(page, cookie) // warm: rubric parsed and its pane rendered, counts cached
	fileSize := get(file, nil)
	var times, fileTimes []time.Duration
	var cpu, fileCPU time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start, cpu0 := time.Now(), processCPU(b)
		get(page, cookie)
		mid, cpu1 := time.Now(), processCPU(b)
		get(file, nil)
		times, fileTimes = append(times, mid.Sub(start)), append(fileTimes, time.Since(mid))
		cpu, fileCPU = cpu+cpu1-cpu0, fileCPU+processCPU(b)-cpu1
	}
	slices.Sort(times)
	slices.Sort(fileTimes)
	p50, fileP50 := percentile(times, 50), percentile(fileTimes, 50)
	b.ReportMetric(ms(p50), "ms-p50")
	b.ReportMetric(ms(percentile(times, 99)), "ms-p99")
	b.ReportMetric(float64(size)/1024, "KiB-page")
	b.ReportMetric(ms(fileP50), "ms-static-p50")
	b.ReportMetric(float64(p50)/float64(fileP50), "x-static-p50")
	// The server's own CPU time per page, which the machine's load moves
	// far less than the time a page takes (PostgreSQL's is not counted).
	n := float64(len(times))
	b.ReportMetric(float64(cpu.Microseconds())/n, "µs-cpu/page")
	b.ReportMetric(float64(fileCPU.Microseconds())/n, "µs-cpu/static")
	b.Logf("%d turns: page %.0f KiB, median %.2f ms; static file %.0f KiB, median %.3f ms (same run): %.1f×",
		turns, float64(size)/1024, ms(p50), float64(fileSize)/1024, ms(fileP50), float64(p50)/float64(fileP50))
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSubmitAndNext200 has 200 annotators work through a project at
// once over real HTTP, as the page does with htmx: submit, and the answer
// is the next item. Each annotator takes thinkMin to thinkMax (uniformly
// random) over an item before submitting — a tenth of the time a person
// takes, so the load is about ten times a real team's. It reports the
// latency of submit-and-next (p50, p99, max) and the submits per second,
// and checks afterwards that every item has exactly overlap answer sets.
func BenchmarkSubmitAndNext200(b *testing.B) {
	const (
		annotators = 200
		overlap    = 3
		items      = 600
		thinkMin   = 1 * time.Second
		thinkMax   = 3 * time.Second
	)
	s := newBenchServer(b)
	srv := httptest.NewServer(s.web)
	b.Cleanup(srv.Close)
	lead, anns, clients := signedInAnnotators(b, s, srv, annotators)
	lines := worryLines(items)
	body := form(likertAnswers, "clock", "js", "active_ms", "15000").Encode()

	run := 0
	var all []time.Duration
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		run++
		p := s.project(fmt.Sprintf("bench-%d", run), "empathetic-dialogue@2", overlap, lines.String(), lead, anns)
		b.StartTimer()

		var mu sync.Mutex
		var failures []string
		fail := func(format string, args ...any) {
			mu.Lock()
			failures = append(failures, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(run), uint64(i)))
				think := func() time.Duration { return thinkMin + time.Duration(rng.Int64N(int64(thinkMax-thinkMin)+1)) }
				var times []time.Duration
				defer func() {
					mu.Lock()
					all = append(all, times...)
					mu.Unlock()
				}()
				// Open the workspace as a browser does: Start labelling
				// (a post that claims), then the item's page.
				start, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/projects/%d/annotate", srv.URL, p.ID), nil)
				start.Header.Set("Origin", srv.URL)
				start.Header.Set("Sec-Fetch-Site", "same-origin")
				resp, err := c.Do(start)
				if err != nil {
					fail("annotate: %v", err)
					return
				}
				resp.Body.Close()
				path := resp.Header.Get("Location")
				if resp.StatusCode != http.StatusSeeOther || !itemPathRE.MatchString(path) {
					return // nothing left for this annotator
				}
				if resp, err = c.Get(srv.URL + path); err != nil {
					fail("page: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				for {
					time.Sleep(think()) // the annotator reads and answers
					req, _ := http.NewRequest(http.MethodPost, srv.URL+path+"/labels", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.Header.Set("Origin", srv.URL)
					req.Header.Set("Sec-Fetch-Site", "same-origin")
					req.Header.Set("HX-Request", "true")
					t0 := time.Now()
					resp, err := c.Do(req)
					if err != nil {
						fail("submit: %v", err)
						return
					}
					io.Copy(io.Discard, resp.Body) // the next item, whole
					resp.Body.Close()
					times = append(times, time.Since(t0))
					if resp.StatusCode != http.StatusOK {
						fail("submit %s: %d", path, resp.StatusCode)
						return
					}
					next := resp.Header.Get("HX-Push-Url")
					if !itemPathRE.MatchString(next) {
						return // the done screen
					}
					path = next
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		b.StopTimer()
		if len(failures) > 0 {
			b.Fatalf("%d failures, first: %s", len(failures), failures[0])
		}
		var wrong, total, doubled int
		ctx := context.Background()
		if err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE n <> $2), coalesce(sum(n), 0) FROM (
			SELECT i.id, count(s.id) AS n FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id) x`,
			p.ID, overlap).Scan(&wrong, &total); err != nil {
			b.Fatal(err)
		}
		if err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT item_id, rater_id FROM answer_sets WHERE project_id = $1 GROUP BY 1, 2 HAVING count(*) > 1) d`, p.ID).Scan(&doubled); err != nil {
			b.Fatal(err)
		}
		if wrong != 0 || total != items*overlap || doubled != 0 {
			b.Fatalf("%d items without exactly %d answer sets; %d answer sets (want %d); %d doubled", wrong, overlap, total, items*overlap, doubled)
		}
		b.StartTimer()
	}
	slices.Sort(all)
	p50, p99, worst := percentile(all, 50), percentile(all, 99), all[len(all)-1]
	b.ReportMetric(ms(p50), "ms-p50")
	b.ReportMetric(ms(p99), "ms-p99")
	b.ReportMetric(ms(worst), "ms-max")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "submits/s")
	b.Logf("%d annotators, %d items × overlap %d, %v–%v per item: %d submit-and-next in %v (%.0f/s); p50 %.1f ms, p99 %.1f ms, max %.1f ms; every item has exactly %d answer sets, none doubled",
		annotators, items, overlap, thinkMin, thinkMax, len(all), elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds(),
		ms(p50), ms(p99), ms(worst), overlap)
}

// signedInAnnotators makes a lead and n annotators, each with an HTTP
// client signed in to srv; the clients share one transport, with a
// connection each, and do not follow redirects.
func signedInAnnotators(tb testing.TB, s *benchServer, srv *httptest.Server, n int) (*attune.User, []*attune.User, []*http.Client) {
	tb.Helper()
	lead := s.user("lead@example.org", attune.RoleLead)
	var anns []*attune.User
	for i := range n {
		anns = append(anns, s.user(fmt.Sprintf("a%03d@example.org", i), attune.RoleAnnotator))
	}
	transport := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	tb.Cleanup(transport.CloseIdleConnections)
	clients := make([]*http.Client, n)
	base, _ := url.Parse(srv.URL)
	for i, u := range anns {
		jar, _ := cookiejar.New(nil)
		jar.SetCookies(base, []*http.Cookie{s.signIn(u)})
		clients[i] = &http.Client{Jar: jar, Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return lead, anns, clients
}

// worryLines is a dataset of n two-message conversations, a line each.
func worryLines(n int) *strings.Builder {
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"id":"i%04d","messages":[{"role":"user","content":"I keep worrying about money, night after night (%d)."},{"role":"assistant","content":"That sounds exhausting. What would help most right now?"}]}`+"\n", i, i)
	}
	return &lines
}
