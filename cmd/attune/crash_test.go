package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
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

// asAttune, set in a child's environment, makes the test binary run as the
// attune command itself (see TestMain): a real process that a test can
// kill -9.
const asAttune = "ATTUNE_TEST_RUN_AS_ATTUNE"

// process is attune running as a child process.
type process struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
}

// syncBuffer collects a child's output while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAttune runs `attune args…` as a child process with env added to
// this one's, and for serve waits, by reading its output, until it serves.
func startAttune(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asAttune+"=1"), env...)
	p := &process{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if after, ok := strings.CutPrefix(sc.Text(), "attune is serving at "); ok {
			p.base = after
			go io.Copy(io.Discard, out)
			return p
		}
	}
	cmd.Wait()
	t.Fatalf("attune %s ended without serving:\n%s", strings.Join(args, " "), p.stderr)
	return nil
}

// freezingProvider is a model endpoint (the fake model, over real HTTP)
// that answers a number of calls and then holds each further call open
// until its client goes away or the test thaws it: the calls under way
// when the worker is killed. It counts the answers it delivered per
// request body. The probe a run starts with is passed through uncounted.
type freezingProvider struct {
	next      http.Handler
	mu        sync.Mutex
	answerN   int // answers delivered before it freezes
	frozen    bool
	served    map[string]int
	held      int
	heldCalls chan struct{} // closed once two calls are held
	thaw      chan struct{} // closed by take
}

func (p *freezingProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if strings.Contains(string(body), "Is the sky blue on a clear day") {
		p.next.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	if p.frozen {
		p.held++
		if p.held == 2 {
			close(p.heldCalls)
		}
		p.mu.Unlock()
		select {
		case <-r.Context().Done():
			return
		case <-p.thaw:
		}
	} else {
		p.mu.Unlock()
	}
	p.next.ServeHTTP(w, r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Context().Err() == nil {
		p.served[string(body)]++
		if p.answerN--; p.answerN == 0 {
			p.frozen = true
		}
	}
}

// take returns the answers delivered so far and starts a new count,
// answering again.
func (p *freezingProvider) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.served
	p.served = map[string]int{}
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
	return s
}

// TestJudgeRunSurvivesKill9 kills a serving attune with SIGKILL while its
// judge calls are under way and checks that the run ends within a minute,
// with exactly one answer per item and rubric item, and that no call whose
// answer was stored is paid for again: once when attune is started again
// after the kill, once when another attune was serving all along.
func TestJudgeRunSurvivesKill9(t *testing.T) {
	t.Parallel()
	t.Run("restart", func(t *testing.T) {
		t.Parallel()
		killMidRun(t, false)
	})
	t.Run("other server", func(t *testing.T) {
		t.Parallel()
		killMidRun(t, true)
	})
}

func killMidRun(t *testing.T, peer bool) {
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("coaching-conversation@2.0")
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "crash", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const items = 8
	var data strings.Builder
	for i := range items {
		fmt.Fprintf(&data, `{"id":"c%d","messages":[{"role":"user","content":"Day %d: I can't stop worrying about work."},{"role":"assistant","content":"That sounds heavy (%d). What worries you most?"}]}`+"\n", i, i, i)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(data.String()), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	const key = "sk-crash-test-key"
	provider := &freezingProvider{next: fakellm.New(fakellm.Options{APIKey: key}), answerN: 20, served: map[string]int{},
		heldCalls: make(chan struct{}), thaw: make(chan struct{})}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	// What the servers below allow: the key's variable and the fake's host.
	hosts, err := attune.ParseHostRules(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	policy := attune.JudgePolicy{KeyEnvs: []string{"CRASH_TEST_KEY"}, Hosts: hosts}
	j, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: "j", Provider: "openai", BaseURL: srv.URL + "/v1", Model: "fake-1",
		APIKeyEnv: "CRASH_TEST_KEY", Settings: attune.JudgeSettings{Concurrency: 4}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	queuer, err := judge.NewRunner(db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := queuer.Queue(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	env := []string{"ATTUNE_ADDR=127.0.0.1:0", "ATTUNE_LOG_FORMAT=text", "CRASH_TEST_KEY=" + key,
		"ATTUNE_JUDGE_KEY_ENVS=CRASH_TEST_KEY", "ATTUNE_JUDGE_HOSTS=" + strings.TrimPrefix(srv.URL, "http://")}

	// The first server's sessions carry a name, so that the test can tell
	// when the server has seen them all end.
	first := startAttune(t, append(env, "DATABASE_URL="+dbURL+"&application_name=attune-killed"), "serve")
	env = append(env, "DATABASE_URL="+dbURL)
	select {
	case <-provider.heldCalls:
	case <-time.After(time.Minute):
		t.Fatalf("the first server never got 20 answers and two more calls under way:\n%s", first.stderr)
	}
	var second *process
	if peer {
		// Started now, it finds every item taken by the first.
		second = startAttune(t, env, "serve")
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	killed := time.Now()
	// A statement the killed process had sent still runs to its end; once
	// its sessions are over, what it stored is settled.
	if _, err := db.Pool().Exec(ctx, `
		SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'attune-killed'`); err != nil {
		t.Fatal(err)
	}

	// The killed server's jobs are left running, as the queue saw them.
	var orphans int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = 'judge' AND state = 'running'`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans == 0 {
		t.Fatal("no job was under way when the server was killed: the test proves nothing")
	}
	// Answers the server delivered but the killed process never stored are
	// the only ones that may be paid for again.
	var stored int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND ok`, run.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	before := provider.take()
	delivered := 0
	for _, n := range before {
		delivered += n
	}
	mayRepeat := delivered - stored
	t.Logf("killed with %d jobs under way; %d answers delivered, %d stored", orphans, delivered, stored)

	if !peer {
		second = startAttune(t, env, "serve")
	}
	// Within a minute of the restart, or of the kill for a server already
	// running.
	from := time.Now()
	if peer {
		from = killed
	}
	wctx, cancel := context.WithDeadline(ctx, from.Add(time.Minute))
	defer cancel()
	done, err := queuer.Wait(wctx, run.ID)
	if err != nil || done.Status != attune.RunCompleted {
		t.Fatalf("a minute on, the run is %v (%v):\n%s", done, err, second.stderr)
	}
	t.Logf("the run completed %s on", time.Since(from).Round(time.Millisecond))

	var labels, distinct int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT (item_id, rubric_item_key)) FROM labels l JOIN raters r ON r.id = l.rater_id WHERE r.judge_id = $1`,
		j.ID).Scan(&labels, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := items * len(def.Items); labels != want || distinct != want {
		t.Fatalf("%d labels (%d distinct), want exactly one per item and rubric item: %d", labels, distinct, want)
	}
	after := provider.take()
	repeats := 0
	for body, n := range after {
		if n > 1 || before[body] > 1 {
			t.Fatalf("a prompt was paid for %d times in one process: %.200s", max(n, before[body]), body)
		}
		repeats += before[body]
	}
	// Every answer delivered but not stored must be asked for again, so
	// one more repeat would be a stored answer paid for twice.
	if repeats != mayRepeat {
		t.Fatalf("%d prompts paid for twice; exactly the %d answers lost in the kill must be", repeats, mayRepeat)
	}
	if asked := len(before) + len(after) - repeats; asked != items*len(def.Items) {
		t.Fatalf("%d distinct prompts asked, want %d", asked, items*len(def.Items))
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("the second server did not stop cleanly: %v\n%s", err, second.stderr)
	}
}
