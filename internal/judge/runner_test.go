package judge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const runnerKey = "sk-test-0123456789-do-not-log"

// Datasets, one per rubric kind.
var (
	replies = `{"id":"r1","messages":[{"role":"user","content":"I lost my job today."},{"role":"assistant","content":"I'm so sorry. That is a real shock. How are you holding up?"}]}
{"id":"r2","messages":[{"role":"user","content":"My cat is ill."},{"role":"assistant","content":"Pets are replaceable."}]}
{"id":"r3","messages":[{"role":"user","content":"Exams next week and I can't focus."},{"role":"assistant","content":"Exam stress is hard. Try 25-minute focus blocks with short breaks."}]}
`
	conversations = `{"id":"c1","messages":[{"role":"user","content":"I'm overwhelmed at work."},{"role":"assistant","content":"That sounds exhausting. What weighs most?"},{"role":"user","content":"Saying no."},{"role":"assistant","content":"Saying no can feel risky. What happens when you imagine it?"}]}
{"id":"c2","messages":[{"role":"user","content":"I argue with my partner daily."},{"role":"assistant","content":"Try couples therapy."}]}
`
)

type fixture struct {
	db      *store.DB
	runner  *judge.Runner
	project *attune.Project
	judge   *attune.Judge
	fake    *fakellm.Server
	srv     *httptest.Server
	logs    *lockedBuffer
	def     *rubric.Definition
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type setup struct {
	rubric   string
	data     string
	settings attune.JudgeSettings
	fake     fakellm.Options
	wrap     func(http.Handler) http.Handler
	keyEnv   string // default ATTUNE_TEST_KEY, holding runnerKey
	opts     judge.RunnerOptions
	evidence rubric.EvidencePolicy // the project's turn evidence setting; "" the default
}

func newFixture(t *testing.T, s setup) *fixture { return newFixtureTB(t, s) }

func newFixtureTB(t testing.TB, s setup) *fixture {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef(s.rubric)
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "judged", RubricVersionID: rv.ID, Overlap: 3, Lease: time.Hour, EvidencePolicy: s.evidence})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(s.data), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	if s.fake.APIKey == "" {
		s.fake.APIKey = runnerKey
	}
	fake := fakellm.New(s.fake)
	var h http.Handler = fake
	if s.wrap != nil {
		h = s.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if s.settings.Concurrency == 0 {
		s.settings.Concurrency = 4
	}
	keyEnv := s.keyEnv
	if keyEnv == "" {
		keyEnv = "ATTUNE_TEST_KEY"
	}
	j, err := db.CreateJudge(ctx, nil, testPolicy, store.NewJudge{Name: "j", Provider: "openai", BaseURL: srv.URL + "/v1", Model: "fake-1",
		APIKeyEnv: keyEnv, Settings: s.settings})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	opts := s.opts
	opts.Policy = testPolicy
	opts.Getenv = func(k string) string {
		if k == "ATTUNE_TEST_KEY" {
			return runnerKey
		}
		if k == "WRONG_KEY" {
			return "sk-wrong-key-that-is-also-secret"
		}
		return ""
	}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Millisecond
	}
	r, err := judge.NewRunner(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, runner: r, project: p, judge: j, fake: fake, srv: srv, logs: logs, def: def}
}

// run starts a run, works it to its end in this process, and returns it.
func (f *fixture) run(t *testing.T, limit int) *attune.JudgeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nr := store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID}
	if limit > 0 {
		nr.ItemLimit = &limit
	}
	run, err := f.db.CreateRun(ctx, nil, nr)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Queue(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.runner.Stop(context.Background())
	done, err := f.runner.Wait(ctx, run.ID)
	if err != nil {
		t.Fatalf("waiting for run: %v", err)
	}
	return done
}

type labelRow struct {
	item, key, value, method, rationale, raw string
	weighted                                 *float64
	spread                                   *float64
}

func (f *fixture) labels(t *testing.T) []labelRow {
	t.Helper()
	rows, err := f.db.Pool().Query(context.Background(), `
		SELECT i.source_id, l.rubric_item_key, l.value, d.method, l.rationale, d.raw, d.weighted_score, d.spread
		FROM labels l JOIN items i ON i.id = l.item_id JOIN raters r ON r.id = l.rater_id
		JOIN judge_label_details d ON d.label_id = l.id
		WHERE r.judge_id = $1 ORDER BY i.source_id, l.rubric_item_key`, f.judge.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []labelRow
	for rows.Next() {
		var l labelRow
		if err := rows.Scan(&l.item, &l.key, &l.value, &l.method, &l.rationale, &l.raw, &l.weighted, &l.spread); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) noSecretLogged(t *testing.T) {
	t.Helper()
	if strings.Contains(f.logs.String(), runnerKey) || strings.Contains(f.logs.String(), "sk-wrong-key") {
		t.Fatal("an API key reached the logs")
	}
	var n int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM judge_calls WHERE raw LIKE '%sk-%' OR error LIKE '%sk-%' OR response::text LIKE '%sk-%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Fatal("an API key was stored with a call")
	}
}

func TestRunEveryRubricKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rubric string
		data   string
		items  int
	}{
		{"empathetic-dialogue@2", replies, 3},
		{"coaching-conversation@2.0", conversations, 2},
		{"empathetic-understanding@1", replies, 3},
	} {
		t.Run(tc.rubric, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, setup{rubric: tc.rubric, data: tc.data})
			run := f.run(t, 0)
			if run.Status != attune.RunCompleted {
				t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
			}
			labels := f.labels(t)
			if want := tc.items * len(f.def.Items); len(labels) != want {
				t.Fatalf("%d labels, want %d (one per item and rubric item)", len(labels), want)
			}
			for _, l := range labels {
				it, _ := f.def.Item(l.key)
				if !f.def.Allows(it, rubric.Value(l.value)) && l.value != "NA" {
					t.Errorf("%s/%s = %q is not an answer of the rubric", l.item, l.key, l.value)
				}
				if l.method == "" || l.method == "error" {
					t.Errorf("%s/%s reached by %q", l.item, l.key, l.method)
				}
			}
			// One call per item and rubric item (the probe aside), as the
			// criteria rubric's document says: 12 per conversation.
			var calls int
			if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND ok`, run.ID).Scan(&calls); err != nil {
				t.Fatal(err)
			}
			if calls != tc.items*len(f.def.Items) {
				t.Fatalf("%d calls, want %d", calls, tc.items*len(f.def.Items))
			}
			// The same run again pays for nothing: every answer exists.
			before := f.fake.Stats().OK
			again := f.run(t, 0)
			if again.Status != attune.RunCompleted || f.fake.Stats().OK-before > 1 {
				t.Fatalf("a second run made %d paid calls", f.fake.Stats().OK-before)
			}
			f.noSecretLogged(t)
		})
	}
}

// failFirst answers the first len(plan) completion requests with the
// planned failures before letting requests through.
func failFirst(plan ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		var mu sync.Mutex
		i := 0
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/completions") {
				mu.Lock()
				var f string
				if i < len(plan) {
					f = plan[i]
					i++
				}
				mu.Unlock()
				if f != "" {
					r.Header.Set("X-Fake-Fail", f)
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRunRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		plan []string
		opts judge.RunnerOptions
	}{
		{"429 with Retry-After", []string{"", "429"}, judge.RunnerOptions{}},
		{"500 then success", []string{"", "500", "500"}, judge.RunnerOptions{}},
		{"timeout", []string{"", "timeout"}, judge.RunnerOptions{CallTimeout: 300 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies, wrap: failFirst(tc.plan...), opts: tc.opts,
				fake: fakellm.Options{RetryAfter: time.Second, Timeout: 5 * time.Second}})
			start := time.Now()
			run := f.run(t, 1)
			if run.Status != attune.RunCompleted {
				t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
			}
			labels := f.labels(t)
			if len(labels) != 1 || labels[0].value == "ERROR" {
				t.Fatalf("labels = %+v, want one real answer after the retries", labels)
			}
			st := f.fake.Stats()
			if tc.plan[1] == "429" {
				if st.RateLimited != 1 || time.Since(start) < time.Second {
					t.Fatalf("429: rate limited %d times, run took %v; the Retry-After of 1s was not waited out", st.RateLimited, time.Since(start))
				}
			}
			if tc.plan[1] == "500" && st.ServerErrors != 2 {
				t.Fatalf("%d server errors seen, want 2", st.ServerErrors)
			}
			f.noSecretLogged(t)
		})
	}
}

func TestBadKeyPausesRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies, keyEnv: "WRONG_KEY"})
	run := f.run(t, 0)
	if run.Status != attune.RunPaused || !strings.Contains(strings.ToLower(run.Reason), "key") {
		t.Fatalf("run = %s (%q), want paused naming the key", run.Status, run.Reason)
	}
	if n := len(f.labels(t)); n != 0 {
		t.Fatalf("%d labels written for a run that could not call", n)
	}
	if strings.Contains(run.Reason, "sk-wrong") {
		t.Fatal("the pause reason shows the key")
	}
	f.noSecretLogged(t)

	// A judge whose key variable is unset pauses too, saying which variable.
	g := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies, keyEnv: "UNSET_KEY_VAR"})
	run = g.run(t, 0)
	if run.Status != attune.RunPaused || !strings.Contains(run.Reason, "UNSET_KEY_VAR") {
		t.Fatalf("run = %s (%q), want paused naming UNSET_KEY_VAR", run.Status, run.Reason)
	}
}

func TestGarbageIsReaskedThenError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies, fake: fakellm.Options{RateGarbage: 1},
		settings: attune.JudgeSettings{Concurrency: 2}})
	run := f.run(t, 2)
	if run.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
	}
	labels := f.labels(t)
	if len(labels) != 2 {
		t.Fatalf("%d labels, want 2", len(labels))
	}
	for _, l := range labels {
		if l.value != "ERROR" || l.method != "error" || l.raw == "" {
			t.Fatalf("garbage answer stored as %+v, want ERROR with the raw text kept", l)
		}
	}
	var reasks int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND reask`, run.ID).Scan(&reasks); err != nil {
		t.Fatal(err)
	}
	if reasks != 2 {
		t.Fatalf("%d re-asks, want one per unreadable answer", reasks)
	}
}

func TestLogprobsAndSamples(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies, settings: attune.JudgeSettings{Logprobs: true, Samples: 3}})
	run := f.run(t, 0)
	if run.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
	}
	var caps judge.Capabilities
	json.Unmarshal(run.Capabilities, &caps)
	if !caps.Logprobs {
		t.Fatalf("capabilities %s: the probe did not find log-probabilities", run.Capabilities)
	}
	for _, l := range f.labels(t) {
		if l.method != "sampled" || l.spread == nil {
			t.Fatalf("label %+v: want the median of 3 samples with its spread", l)
		}
		if l.weighted == nil || *l.weighted < 1 || *l.weighted > 5 {
			t.Fatalf("label %+v: want a probability-weighted score in [1, 5]", l)
		}
	}
	var samples int
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT count(DISTINCT sample) FROM judge_calls WHERE run_id = $1`, run.ID).Scan(&samples); err != nil {
		t.Fatal(err)
	}
	if samples != 3 {
		t.Fatalf("%d distinct samples called, want 3", samples)
	}
}

func TestRateLimitHeldAtTheServer(t *testing.T) {
	t.Parallel()
	const rpm = 1200 // one request every 50 ms
	f := newFixture(t, setup{rubric: "empathetic-dialogue@2", data: replies, settings: attune.JudgeSettings{Concurrency: 8, RPM: rpm}})
	run := f.run(t, 0)
	if run.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
	}
	arr := f.fake.Stats().Arrivals
	if len(arr) < 15 {
		t.Fatalf("only %d requests", len(arr))
	}
	// In any second, no more than rpm/60 requests (plus one at the edge).
	for i := range arr {
		n := 0
		for j := i; j < len(arr) && arr[j].Sub(arr[i]) < time.Second; j++ {
			n++
		}
		if n > rpm/60+1 {
			t.Fatalf("%d requests within one second at the server, limit %d a minute", n, rpm)
		}
	}
}

// TestWorkerKilledMidRun stops a runner abruptly in the middle of a run and
// lets another finish it: every (item, rubric item) is answered exactly
// once, and no answer the runner stored is paid for again. Only answers
// lost in the kill itself (delivered by the server but never stored by the
// dying runner) may be asked again.
func TestWorkerKilledMidRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	served := map[string]int{}
	frozen := false
	reached := make(chan struct{})
	var once sync.Once
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/completions") {
				next.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			if frozen {
				// After the kill begins, nothing more is answered.
				mu.Unlock()
				<-r.Context().Done()
				return
			}
			mu.Unlock()
			next.ServeHTTP(w, r)
			mu.Lock()
			if r.Context().Err() == nil {
				served[string(body)]++
			}
			n := len(served)
			mu.Unlock()
			if n >= 10 {
				once.Do(func() { close(reached) })
			}
		})
	}
	f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: conversations + strings.NewReplacer(`"id":"c`, `"id":"d`, `."}`, `. Again."}`, `?"}`, `? Again."}`).Replace(conversations),
		fake: fakellm.Options{Latency: 20 * time.Millisecond}, wrap: record, settings: attune.JudgeSettings{Concurrency: 4}})
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	f.runner.Queue(ctx, run.ID)
	f.runner.Start(ctx)
	<-reached
	mu.Lock()
	frozen = true
	mu.Unlock()
	f.runner.StopAndCancel(ctx) // the worker dies mid-run
	// Answers the server delivered but the dying runner never stored are
	// the only ones that may be asked again.
	var recorded int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND ok`, run.ID).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	delivered := 0
	for body, n := range served {
		if !strings.Contains(body, "Is the sky blue on a clear day") {
			delivered += n
		}
	}
	mayRepeat := delivered - recorded
	frozen = false
	mu.Unlock()

	second, err := judge.NewRunner(f.db, judge.RunnerOptions{Getenv: func(string) string { return runnerKey }, Policy: testPolicy, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	second.Start(ctx)
	defer second.Stop(context.Background())
	done, err := second.Wait(ctx, run.ID)
	if err != nil || done.Status != attune.RunCompleted {
		t.Fatalf("after the restart the run is %v (%v)", done, err)
	}
	var labels, distinct int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT (item_id, rubric_item_key)) FROM labels l JOIN raters r ON r.id = l.rater_id WHERE r.judge_id = $1`,
		f.judge.ID).Scan(&labels, &distinct); err != nil {
		t.Fatal(err)
	}
	if labels != 4*12 || distinct != 4*12 {
		t.Fatalf("%d labels (%d distinct), want exactly one per item and criterion: 48", labels, distinct)
	}
	mu.Lock()
	defer mu.Unlock()
	repeats := 0
	for body, n := range served {
		if n > 2 {
			t.Fatalf("a prompt was paid for %d times: %.200s", n, body)
		}
		if n == 2 && !strings.Contains(body, "Is the sky blue on a clear day") {
			repeats++
		}
	}
	if repeats > mayRepeat {
		t.Fatalf("%d prompts paid for twice; only the %d answers lost in the kill may be", repeats, mayRepeat)
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: conversations,
		settings: attune.JudgeSettings{MaxTokens: 100, Prices: attune.Prices{InputPerMTok: 1, OutputPerMTok: 2}}})
	e, err := f.runner.EstimateRun(context.Background(), f.judge, f.project, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Items != 2 || e.Calls != 24 || e.OutputTokens != 2400 || e.InputTokens < 1000 {
		t.Fatalf("estimate = %+v", e)
	}
	want := float64(e.InputTokens)/1e6 + float64(e.OutputTokens)*2/1e6
	if diff := e.USD - want; diff > 1e-9 || diff < -1e-9 {
		t.Fatalf("estimate $%f, want $%f", e.USD, want)
	}
}

func TestBudgetPausesThenResumes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newFixture(t, setup{rubric: "empathetic-dialogue@2", data: replies,
		settings: attune.JudgeSettings{Concurrency: 1, Prices: attune.Prices{InputPerMTok: 1000, OutputPerMTok: 1000}}})
	tiny := 0.0001
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID, BudgetUSD: &tiny})
	if err != nil {
		t.Fatal(err)
	}
	f.runner.Queue(ctx, run.ID)
	f.runner.Start(ctx)
	defer f.runner.Stop(context.Background())
	done, err := f.runner.Wait(ctx, run.ID)
	if err != nil || done.Status != attune.RunPaused || !strings.Contains(done.Reason, "budget") {
		t.Fatalf("over budget: %v (%v)", done, err)
	}
	if err := f.runner.RaiseBudget(ctx, run.ID, &tiny); err == nil {
		t.Fatal("a budget below what was spent was accepted")
	}
	plenty := 1000.0
	if err := f.runner.RaiseBudget(ctx, run.ID, &plenty); err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Resume(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	done, err = f.runner.Wait(ctx, run.ID)
	if err != nil || done.Status != attune.RunCompleted {
		t.Fatalf("after raising the budget: %v (%v)", done, err)
	}
	if n := len(f.labels(t)); n != 3*5 {
		t.Fatalf("%d labels, want 15", n)
	}
}
