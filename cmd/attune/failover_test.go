package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/pgcluster"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// haAnswers are valid answers to every item of empathetic-dialogue@2.
var haAnswers = map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}

// haProject is a project set up for an HA test: its items, annotators
// with API tokens, and a judge whose run is queued.
type haProject struct {
	db     *store.DB
	p      *attune.Project
	def    *rubric.Definition
	items  int
	tokens []string
	judge  *attune.Judge
	run    *attune.JudgeRun
	env    []string // the settings attune needs to call the fake model
}

// newHAProject migrates the database at dbURL through attune itself and
// sets up a project with items items at overlap 2, annotators annotators,
// and a judge over a fake model answering after latency, with its run
// queued.
func newHAProject(t *testing.T, dbURL string, items, annotators int, latency time.Duration) *haProject {
	t.Helper()
	ctx := context.Background()
	if out, err := runCmd(t, envFor(dbURL), "", "migrate", "up"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-dialogue@2")
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "ha", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for i := range items {
		fmt.Fprintf(&data, `{"id":"ha%d","messages":[{"role":"user","content":"Week %d: my flatmate moved out and I feel a bit lost."},{"role":"assistant","content":"That is a big change (%d). What do you miss most?"}]}`+"\n", i, i, i)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(data.String()), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	h := &haProject{db: db, p: p, def: def, items: items}
	// The annotators sign in with tokens only: a cheap hash will do.
	hash, err := password.Hash(password.Generate(), password.Params{MemoryKiB: 64, Time: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range annotators {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("ann%d@example.org", i), Name: fmt.Sprintf("Ann %d", i),
			Role: attune.RoleAnnotator, PasswordHash: hash})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.AddMember(ctx, nil, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
		tok, _, err := db.CreateAPIToken(ctx, nil, u.ID, "ha", false)
		if err != nil {
			t.Fatal(err)
		}
		h.tokens = append(h.tokens, tok)
	}
	const key = "sk-ha-test-key"
	model := httptest.NewServer(fakellm.New(fakellm.Options{APIKey: key, Latency: latency}))
	t.Cleanup(model.Close)
	host := strings.TrimPrefix(model.URL, "http://")
	hosts, err := attune.ParseHostRules(host)
	if err != nil {
		t.Fatal(err)
	}
	policy := attune.JudgePolicy{KeyEnvs: []string{"HA_TEST_KEY"}, Hosts: hosts}
	h.judge, err = db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: "j", Provider: "openai", BaseURL: model.URL + "/v1", Model: "fake-1",
		APIKeyEnv: "HA_TEST_KEY", Settings: attune.JudgeSettings{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	h.run, err = db.CreateRun(ctx, nil, store.NewRun{JudgeID: h.judge.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	queuer, err := judge.NewRunner(db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := queuer.Queue(ctx, h.run.ID); err != nil {
		t.Fatal(err)
	}
	h.env = []string{"HA_TEST_KEY", key, "ATTUNE_JUDGE_KEY_ENVS", "HA_TEST_KEY", "ATTUNE_JUDGE_HOSTS", host}
	return h
}

// haResponse is what an annotator got for one request.
type haResponse struct {
	at         time.Time
	path       string
	status     int
	body       string
	retryAfter string
}

// annotator labels through the API until nothing is left, as a client
// that handles failures well does: a request answered 503 is sent again
// (the same submission, for an ambiguous one) after a short pause, and
// every answer is recorded.
type annotator struct {
	base, token string
	client      *http.Client
	mu          sync.Mutex
	responses   []haResponse
	acked       map[int64]int64 // assignment → answer set, for every submit answered 2xx
}

func (a *annotator) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	a.mu.Lock()
	a.responses = append(a.responses, haResponse{at: time.Now(), path: path, status: resp.StatusCode, body: string(out), retryAfter: resp.Header.Get("Retry-After")})
	a.mu.Unlock()
	return resp.StatusCode, out, nil
}

// until sends one request until it is answered with something other than
// 503, and returns that answer.
func (a *annotator) until(ctx context.Context, method, path string, body any) (int, []byte, error) {
	for {
		status, out, err := a.call(ctx, method, path, body)
		if err != nil || status != http.StatusServiceUnavailable {
			return status, out, err
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// work labels until the project has nothing left for this annotator;
// acks counts every acknowledged submission across annotators.
func (a *annotator) work(ctx context.Context, projectID int64, acks *atomic.Int64) error {
	for {
		status, out, err := a.until(ctx, "POST", fmt.Sprintf("/api/v1/projects/%d/next", projectID), nil)
		if err != nil {
			return err
		}
		if status == http.StatusNoContent {
			return nil
		}
		if status != http.StatusOK {
			return fmt.Errorf("next: %d %s", status, out)
		}
		var next struct {
			Assignment struct {
				ID int64 `json:"id"`
			} `json:"assignment"`
		}
		if err := json.Unmarshal(out, &next); err != nil {
			return err
		}
		status, out, err = a.until(ctx, "POST", fmt.Sprintf("/api/v1/assignments/%d/labels", next.Assignment.ID),
			map[string]any{"answers": haAnswers, "confirm_warnings": true})
		if err != nil {
			return err
		}
		if status != http.StatusCreated && status != http.StatusOK {
			return fmt.Errorf("submit %d: %d %s", next.Assignment.ID, status, out)
		}
		var done struct {
			AnswerSetID int64 `json:"answer_set_id"`
		}
		if err := json.Unmarshal(out, &done); err != nil {
			return err
		}
		a.mu.Lock()
		a.acked[next.Assignment.ID] = done.AnswerSetID
		a.mu.Unlock()
		acks.Add(1)
	}
}

// TestFailoverLosesNoAcknowledgedLabel runs attune on a primary with a
// synchronous standby, reached through a multi-host DATABASE_URL that asks
// for the read-write server. Annotators submit over HTTP and a judge run
// works while the primary is killed with SIGKILL and the standby promoted.
// attune must carry on within seconds, every submission it acknowledged
// must be on the new primary exactly once, the run must finish with one
// answer per item and rubric item, and during the outage the annotators
// must be told to try again (503 with a message), never a 500.
func TestFailoverLosesNoAcknowledgedLabel(t *testing.T) {
	t.Parallel()
	primary := pgcluster.NewPrimary(t, pgcluster.Options{SyncStandby: "standby1"})
	standby := primary.NewStandby(t, "standby1")
	dbURL := fmt.Sprintf("postgres://postgres@%s,%s/attune?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.Addr(), standby.Addr())

	const items, annotators = 30, 4
	h := newHAProject(t, dbURL, items, annotators, 20*time.Millisecond)
	s := serve(t, envFor(dbURL, h.env...))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var acks atomic.Int64
	anns := make([]*annotator, annotators)
	errs := make(chan error, annotators)
	for i := range anns {
		anns[i] = &annotator{base: s.base, token: h.tokens[i], client: &http.Client{Timeout: 20 * time.Second}, acked: map[int64]int64{}}
		go func() { errs <- anns[i].work(ctx, h.p.ID, &acks) }()
	}
	// The primary is killed a third of the way through the submissions,
	// with the judge's run under way.
	for acks.Load() < items*2/3 {
		select {
		case err := <-errs:
			t.Fatalf("an annotator stopped before the kill: %v", err)
		case <-ctx.Done():
			t.Fatal("the annotators never got a third of the way")
		case <-time.After(5 * time.Millisecond):
		}
	}
	var judged int
	if err := h.db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND ok`, h.run.ID).Scan(&judged); err != nil {
		t.Fatal(err)
	}
	ackedBefore := acks.Load()
	primary.Kill()
	killed := time.Now()
	standby.Promote(t)
	promoted := time.Now()
	t.Logf("killed the primary after %d acknowledged submissions and %d judge answers; the standby was promoted %s later",
		ackedBefore, judged, promoted.Sub(killed).Round(time.Millisecond))

	for range anns {
		if err := <-errs; err != nil {
			t.Fatalf("an annotator: %v", err)
		}
	}
	waiter, err := judge.NewRunner(h.db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := waiter.Wait(ctx, h.run.ID)
	if err != nil || run.Status != attune.RunCompleted {
		jobs := standby.Query(t, "attune", `SELECT concat_ws(' ', id, kind, state, attempt, scheduled_at - now(), finalized_at - now(), attempted_by, args::text, errors::text) FROM river_job ORDER BY id`)
		runs := standby.Query(t, "attune", `SELECT concat_ws(' ', id, status, generation, items_done, items_total, reason) FROM judge_runs`)
		answered := standby.Query(t, "attune", `SELECT count(*)::text FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE r.judge_id IS NOT NULL`)
		t.Fatalf("the judge run is %v (%v) %s after the kill; runs: %s; items the judge answered: %s; jobs:\n%s",
			run, err, time.Since(killed).Round(time.Millisecond), strings.Join(runs, ", "), answered[0], strings.Join(jobs, "\n"))
	}
	t.Logf("the judge run completed %s after the kill", time.Since(killed).Round(time.Millisecond))

	// What the annotators were told.
	var firstOK time.Time
	statuses := map[int]int{}
	var unavailable []haResponse
	acked := map[int64]int64{}
	for _, a := range anns {
		for _, r := range a.responses {
			statuses[r.status]++
			if r.status == http.StatusServiceUnavailable {
				unavailable = append(unavailable, r)
			}
			if r.at.After(killed) && strings.HasSuffix(r.path, "/labels") && (r.status == http.StatusCreated || r.status == http.StatusOK) &&
				(firstOK.IsZero() || r.at.Before(firstOK)) {
				firstOK = r.at
			}
		}
		for asg, set := range a.acked {
			acked[asg] = set
		}
	}
	t.Logf("responses by status: %v", statuses)
	for status, n := range statuses {
		if status >= 500 && status != http.StatusServiceUnavailable {
			t.Errorf("%d responses %d: a failover must never answer with a server error", n, status)
		}
	}
	if len(unavailable) == 0 {
		t.Error("no request was answered 503 during the outage: the test did not catch attune without its database")
	}
	for _, r := range unavailable {
		if !strings.Contains(r.body, "try again") || r.retryAfter == "" {
			t.Fatalf("a 503 without a clear try again (Retry-After %q): %s", r.retryAfter, r.body)
		}
	}
	if firstOK.IsZero() {
		t.Fatal("no submission succeeded after the kill")
	}
	t.Logf("failover: kill → first acknowledged submission %s (promotion took %s)",
		firstOK.Sub(killed).Round(time.Millisecond), promoted.Sub(killed).Round(time.Millisecond))
	if d := firstOK.Sub(promoted); d > 10*time.Second {
		t.Errorf("the first submission after the promotion succeeded %s later; attune must carry on within seconds", d)
	}

	// Every acknowledged submission is on the new primary, once.
	if len(acked) != items*2 {
		t.Fatalf("%d submissions acknowledged, want %d (every item at overlap 2)", len(acked), items*2)
	}
	var sets, distinct, labels, wrong int
	ids := make([]int64, 0, len(acked))
	setIDs := make([]int64, 0, len(acked))
	for asg, set := range acked {
		ids, setIDs = append(ids, asg), append(setIDs, set)
	}
	writeQueuedLabels(t, h.db)
	if err := h.db.Pool().QueryRow(ctx, `
		SELECT count(*), count(DISTINCT (s.item_id, s.rater_id)),
		       (SELECT count(*) FROM labels l WHERE l.answer_set_id = ANY($3)),
		       (SELECT count(*) FROM unnest($2::bigint[], $3::bigint[]) AS x(asg, set)
		        WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.id = x.asg AND a.answer_set_id = x.set AND a.state = 'submitted'))
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE s.project_id = $1 AND r.judge_id IS NULL`, h.p.ID, ids, setIDs).Scan(&sets, &distinct, &labels, &wrong); err != nil {
		t.Fatal(err)
	}
	t.Logf("on the new primary: %d answer sets (%d distinct item × annotator), %d labels; %d acknowledged submissions not as acknowledged",
		sets, distinct, labels, wrong)
	if sets != len(acked) || distinct != len(acked) || wrong != 0 || labels != len(acked)*len(haAnswers) {
		t.Fatalf("the new primary has %d answer sets (%d distinct) and %d labels, %d acknowledged ones missing or changed; want exactly the %d acknowledged, each once with %d labels",
			sets, distinct, labels, wrong, len(acked), len(haAnswers))
	}
	var jl, jdistinct int
	if err := h.db.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT (item_id, rubric_item_key)) FROM labels l JOIN raters r ON r.id = l.rater_id WHERE r.judge_id = $1`,
		h.judge.ID).Scan(&jl, &jdistinct); err != nil {
		t.Fatal(err)
	}
	t.Logf("the judge's answers: %d (%d distinct)", jl, jdistinct)
	if want := items * len(h.def.Items); jl != want || jdistinct != want {
		t.Fatalf("the judge has %d answers (%d distinct), want exactly one per item and rubric item: %d", jl, jdistinct, want)
	}
}
