package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// settleAll settles every item queued so far, as a settler would.
func settleAll(t testing.TB, db *store.DB) {
	t.Helper()
	if _, err := db.SettleQueued(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// queued counts the project's rows waiting in the settle queue.
func queued(t *testing.T, db *store.DB, projectID int64) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM settle_queue WHERE project_id = $1`, projectID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSubmitLeavesGoldToTheSettler: the submit that completes an item
// decides no gold in its own transaction; it leaves the item queued, and
// a running Settler settles it (gold when its people agree, the queue of
// disagreements when not), telling so on its Settled signal: what was
// queued before it started at once, and a submit made while it runs
// within SettleBound of the submit's return.
func TestSubmitLeavesGoldToTheSettler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 3, annotators: 2})
	answers := func(a int, source string) map[string]string {
		if source == "item-001" { // too far apart: the queue of disagreements
			return likert([]string{"1", "5"}[a], "4", "4", "4", "4")
		}
		return likert("4", "4", "3", "4", "4")
	}
	// The first annotator's labels complete nothing and queue nothing.
	first := *f
	first.annotators = f.annotators[:1]
	first.labelWith(t, answers, nil)
	if n := queued(t, f.db, f.project.ID); n != 0 {
		t.Fatalf("%d items queued with one person's labels of two", n)
	}

	u := f.annotators[1]
	submit := func() {
		t.Helper()
		a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		it, err := f.db.FindItem(ctx, f.project.ID, a.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers(1, it.SourceID), ActiveMS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	submit()
	submit()
	// Committed, and not settled: that is the settler's.
	if n := queued(t, f.db, f.project.ID); n != 2 {
		t.Fatalf("%d items queued, want the 2 the submits completed", n)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-000")); len(got) != 0 {
		t.Fatalf("the submit decided gold %v itself", got)
	}

	runCtx, stop := context.WithCancel(ctx)
	s := f.db.NewSettler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		s.Run(runCtx)
	}()
	t.Cleanup(func() { stop(); <-ran })
	wait := func(rows int) time.Duration {
		t.Helper()
		start := time.Now()
		for got := 0; got < rows; {
			select {
			case n := <-s.Settled():
				got += n
			case <-time.After(30 * time.Second):
				t.Fatalf("the settler settled %d rows of %d in 30 s", got, rows)
			}
		}
		return time.Since(start)
	}
	wait(2)
	if got := goldOf(t, f.db, f.itemID(t, "item-000")); got["helpfulness"] != "3/automatic" {
		t.Fatalf("item-000 gold = %v after settling", got)
	}
	if got := queueOf(t, f.db, f.project.ID); fmt.Sprint(got) != "[item-001]" {
		t.Fatalf("queue = %v, want item-001", got)
	}
	submit()
	if took := wait(1); took > store.SettleBound {
		t.Errorf("item-002 settled %v after its submit returned, over the bound of %v", took, store.SettleBound)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-002")); got["helpfulness"] != "3/automatic" {
		t.Fatalf("item-002 gold = %v after settling", got)
	}
	if n := queued(t, f.db, f.project.ID); n != 0 {
		t.Fatalf("%d rows left in the settle queue", n)
	}
}

// TestSettlerKilledMidWaySettlesOnce: a settler whose connection dies
// after it wrote gold and queued its announcements, before it committed
// (the process killed, or the server ending the backend), leaves gold,
// announcements and the queue as they were; the next settling decides
// the item once: its gold, one gold.changed, one full-overlap, the queue
// empty. The gold is announced once more by nothing after it.
func TestSettlerKilledMidWaySettlesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 1, annotators: 2})
	if _, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook",
		[]attune.WebhookEvent{attune.EventGoldChanged, attune.EventFullOverlap}); err != nil {
		t.Fatal(err)
	}
	for _, u := range f.annotators {
		a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: likert("4", "4", "3", "4", "4"), ActiveMS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	id := f.itemID(t, "item-000")
	store.SetSettleHook(db, func(ctx context.Context, tx pgx.Tx) error {
		// Everything is written, not committed: the backend goes.
		_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	})
	if _, err := db.SettleQueued(ctx); err == nil {
		t.Fatal("a settling whose connection was ended succeeded")
	}
	if got := goldOf(t, db, id); len(got) != 0 {
		t.Fatalf("the dead settling left gold %v", got)
	}
	if got := announced(t, db, f.project.ID); len(got) != 0 {
		t.Fatalf("the dead settling announced %v", got)
	}
	if n := queued(t, db, f.project.ID); n != 1 {
		t.Fatalf("%d rows in the settle queue after the dead settling, want its 1 back", n)
	}
	store.SetSettleHook(db, nil)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { settleAll(t, db) })
	}
	wg.Wait()
	settleAll(t, db)
	if got := goldOf(t, db, id); got["helpfulness"] != "3/automatic" || len(got) != 5 {
		t.Fatalf("gold = %v after the settling that lived", got)
	}
	got := announced(t, db, f.project.ID)
	if got[attune.EventGoldChanged] != 1 || got[attune.EventFullOverlap] != 1 {
		t.Fatalf("announced %v, want gold.changed and full overlap once each", got)
	}
	if n := queued(t, db, f.project.ID); n != 0 {
		t.Fatalf("%d rows left in the settle queue", n)
	}
}

// TestConcurrentSubmitsOfOneItemOneGoldDecision: after a lead lowered the
// overlap below the people holding an item, their submissions at once
// each queue it; settlers running at once decide it once: one verdict,
// its gold written once, one gold.changed.
func TestConcurrentSubmitsOfOneItemOneGoldDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const people = 4
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{rubric: "empathetic-dialogue@2", overlap: people, items: 1, annotators: people})
	if _, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", []attune.WebhookEvent{attune.EventGoldChanged}); err != nil {
		t.Fatal(err)
	}
	held := make([]*attune.Assignment, people)
	for i, u := range f.annotators {
		a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = a
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE projects SET overlap = 1 WHERE id = $1`, f.project.ID); err != nil {
		t.Fatal(err)
	}
	// The submissions at once, then settlers at once: each submission
	// queued the item, and however the settlers share the rows out, the
	// item is decided once.
	at := func(n int, fn func(i int) error) {
		t.Helper()
		start := make(chan struct{})
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs <- fn(i)
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	at(people, func(i int) error {
		_, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: held[i].ID, UserID: f.annotators[i].ID, Answers: likert("4", "4", "3", "4", "4"), ActiveMS: 1})
		return err
	})
	if n := queued(t, db, f.project.ID); n != people {
		t.Fatalf("%d rows queued, want one per submission (%d)", n, people)
	}
	at(people, func(int) error {
		_, err := db.SettleQueued(ctx)
		return err
	})
	id := f.itemID(t, "item-000")
	var verdicts, goldRows, decisions int
	if err := db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM gold_consensus WHERE item_id = $1),
		(SELECT count(*) FROM gold_labels WHERE item_id = $1), (SELECT count(DISTINCT decided_at) FROM gold_labels WHERE item_id = $1)`,
		id).Scan(&verdicts, &goldRows, &decisions); err != nil {
		t.Fatal(err)
	}
	if verdicts != 1 || goldRows != 5 || decisions != 1 {
		t.Fatalf("%d verdicts, %d gold rows decided at %d moments; want 1, 5, 1", verdicts, goldRows, decisions)
	}
	if got := goldAnnouncements(t, db, f.project.ID); len(got) != 1 {
		t.Fatalf("%d gold.changed, want 1: %q", len(got), got)
	}
	if n := queued(t, db, f.project.ID); n != 0 {
		t.Fatalf("%d rows left in the settle queue", n)
	}
}

// TestSettleQueueOfDeletedProject: rows left by a project deleted since
// are dropped, and hold up no other project's.
func TestSettleQueueOfDeletedProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{rubric: "empathetic-dialogue@2", overlap: 1, items: 1, annotators: 1})
	if _, err := db.Pool().Exec(ctx, `INSERT INTO settle_queue (project_id, item_id, completed) VALUES (0, 0, true)`); err != nil {
		t.Fatal(err)
	}
	a, err := db.NextAssignment(ctx, f.project.ID, f.annotators[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: f.annotators[0].ID, Answers: likert("4", "4", "3", "4", "4"), ActiveMS: 1}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.SettleQueued(ctx); err != nil || n != 3 {
		t.Fatalf("took %d rows, %v; want the answer set's labels, the live project's item and the deleted one's", n, err)
	}
	if verdictAt(t, db, f.itemID(t, "item-000")).IsZero() {
		t.Fatal("the live project's item was not judged")
	}
	var left int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM settle_queue`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows left in the settle queue", left)
	}
}

// TestBacklogSettledInBatchesOnce: a backlog of completed items (no
// settler ran while they were labelled) is worked through a few rows per
// transaction by settlers running at once, one of them killed mid-way
// through a batch: every item's gold is decided and announced once, and
// the project's full overlap, handed from batch to batch until the last,
// is announced once.
func TestBacklogSettledInBatchesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	const items = 30
	f := newProject(t, db, projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: items, annotators: 2})
	if _, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook",
		[]attune.WebhookEvent{attune.EventGoldChanged, attune.EventFullOverlap}); err != nil {
		t.Fatal(err)
	}
	for _, u := range f.annotators {
		for range items {
			a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: likert("4", "4", "3", "4", "4"), ActiveMS: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := queued(t, db, f.project.ID); n != items {
		t.Fatalf("%d rows queued for %d completed items", n, items)
	}

	store.SetSettleBatch(db, 4)
	var settlings atomic.Int32
	store.SetSettleHook(db, func(ctx context.Context, tx pgx.Tx) error {
		if settlings.Add(1) == 3 { // the third batch dies before its commit
			_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return err
		}
		return nil
	})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { db.SettleQueued(ctx) }) // one of them meets the dead batch
	}
	wg.Wait()
	settleAll(t, db)
	if settlings.Load() < items/4+1 {
		t.Fatalf("%d settling transactions for %d rows in batches of 4: the batches were not small", settlings.Load(), items)
	}
	if n := queued(t, db, f.project.ID); n != 0 {
		t.Fatalf("%d rows left in the settle queue", n)
	}
	for i := range items {
		id := f.itemID(t, fmt.Sprintf("item-%03d", i))
		if got := goldOf(t, db, id); len(got) != 5 || got["helpfulness"] != "3/automatic" {
			t.Fatalf("item-%03d: gold %v", i, got)
		}
	}
	if got := announced(t, db, f.project.ID); got[attune.EventFullOverlap] != 1 {
		t.Fatalf("announced %v, want full overlap once", got)
	}
	// A settling announces the items whose gold it changed in one
	// gold.changed; over all of them, each item is told once.
	var told int
	if err := db.Pool().QueryRow(ctx, `
		SELECT coalesce(sum((d.body -> 'data' ->> 'changed')::int), 0) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE w.project_id = $1 AND d.event = $2`, f.project.ID, attune.EventGoldChanged).Scan(&told); err != nil {
		t.Fatal(err)
	}
	if told != items {
		t.Fatalf("gold.changed told of %d items' gold, want each of the %d once", told, items)
	}
}
