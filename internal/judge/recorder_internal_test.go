package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// recorderFixture is a run with one item to record calls of.
func recorderFixture(t *testing.T) (*store.DB, store.JudgeCall) {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-dialogue@2")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "recorded", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	data := `{"id":"r1","messages":[{"role":"user","content":"Hello."},{"role":"assistant","content":"Hi."}]}` + "\n"
	if _, err := importer.Import(ctx, db, p, strings.NewReader(data), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	var itemID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1`, p.ID).Scan(&itemID); err != nil {
		t.Fatal(err)
	}
	policy := attune.JudgePolicy{KeyEnvs: []string{"ATTUNE_TEST_KEY"}, Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}}
	j, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: "j", Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "m",
		APIKeyEnv: "ATTUNE_TEST_KEY", Settings: attune.JudgeSettings{Concurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	return db, store.JudgeCall{RunID: run.ID, JudgeID: j.ID, ItemID: itemID, RubricItemKey: "understanding", Model: "m", OK: true,
		Raw: "3", Response: []byte(`{"Text":"3"}`), InputTokens: 10, OutputTokens: 1, CostUSD: 0.000123, Latency: 20 * time.Millisecond}
}

func cacheKeyOf(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "call %d", i))
	return hex.EncodeToString(sum[:])
}

// TestRecorderStoresEveryCallInBatches records calls from many callers at
// once while the first write is held back: the calls waiting meanwhile go
// in batches of at most maxRecordBatch, every caller returns once its call
// is stored, and every call is stored once.
func TestRecorderStoresEveryCallInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, proto := recorderFixture(t)
	const callers = 300

	var mu sync.Mutex
	var batches []int
	started, release := make(chan struct{}), make(chan struct{})
	rec := newRecorder(func(ctx context.Context, calls []store.JudgeCall) error {
		mu.Lock()
		first := len(batches) == 0
		batches = append(batches, len(calls))
		mu.Unlock()
		if first {
			close(started)
			<-release // the others queue behind this write
		}
		return db.RecordCalls(ctx, calls)
	})
	queued := make(chan struct{}, callers)
	rec.queued = func() { queued <- struct{}{} }

	errs := make(chan error, callers)
	stored := func(key string) bool {
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE cache_key = $1`, key).Scan(&n); err != nil {
			t.Error(err)
		}
		return n == 1
	}
	record := func(i int) {
		c := proto
		c.CacheKey, c.PromptHash, c.Sample = cacheKeyOf(i), fmt.Sprint(i), i
		err := rec.record(ctx, c)
		if err == nil && !stored(c.CacheKey) {
			err = fmt.Errorf("call %d returned before it was stored", i)
		}
		errs <- err
	}
	go record(0)
	<-started
	for i := 1; i < callers; i++ {
		go record(i)
	}
	for range callers - 1 {
		<-queued
	}
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got, want := batchesSoFar(&mu, &batches), []int{1, maxRecordBatch, callers - 1 - maxRecordBatch}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches %v, want %v", got, want)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1`, proto.RunID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != callers {
		t.Errorf("%d calls stored, want %d", n, callers)
	}
	var cost float64
	var latency int
	if err := db.Pool().QueryRow(ctx, `SELECT cost_usd::float8, latency_ms FROM judge_calls WHERE cache_key = $1`, cacheKeyOf(7)).Scan(&cost, &latency); err != nil {
		t.Fatal(err)
	}
	if cost != proto.CostUSD || latency != 20 {
		t.Errorf("stored cost %v and latency %d ms, want %v and 20", cost, latency, proto.CostUSD)
	}
}

// TestRecorderRefusedCallCostsNoOther puts a call the database refuses in
// a batch: its caller gets the error, and the others are stored.
func TestRecorderRefusedCallCostsNoOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, proto := recorderFixture(t)
	started, release := make(chan struct{}), make(chan struct{})
	writes := 0 // writes take turns, so this needs no lock
	rec := newRecorder(func(ctx context.Context, calls []store.JudgeCall) error {
		writes++
		if writes == 1 {
			close(started)
			<-release
		}
		return db.RecordCalls(ctx, calls)
	})
	queued := make(chan struct{}, 3)
	rec.queued = func() { queued <- struct{}{} }
	errs := make([]error, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		c := proto
		c.CacheKey = cacheKeyOf(100)
		errs[0] = rec.record(ctx, c)
	})
	<-started
	for i := 1; i < 4; i++ {
		wg.Go(func() {
			c := proto
			c.CacheKey, c.Sample = cacheKeyOf(100+i), i
			if i == 2 {
				c.CacheKey = "not a cache key" // the table's check refuses it
			}
			errs[i] = rec.record(ctx, c)
		})
	}
	for range 3 {
		<-queued
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Errorf("call %d: error %v", i, err)
		}
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1`, proto.RunID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d calls stored, want 3", n)
	}
}

func batchesSoFar(mu *sync.Mutex, b *[]int) []int {
	mu.Lock()
	defer mu.Unlock()
	return append([]int(nil), *b...)
}
