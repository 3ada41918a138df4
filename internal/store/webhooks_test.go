package store_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// hookPolicy allows the private range the test webhooks point at; nothing
// is sent in these tests (no worker runs), the deliveries are counted.
var hookPolicy = attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("10.0.0.0/8")}}}

// announced counts the project's queued deliveries by event, and checks
// that each has its job in the queue.
func announced(t *testing.T, db *store.DB, projectID int64) map[attune.WebhookEvent]int {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `
		SELECT d.event, count(*), count(j.id) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		LEFT JOIN river_job j ON j.kind = 'webhook_delivery' AND (j.args ->> 'delivery_id')::bigint = d.id AND j.queue = $2
		WHERE w.project_id = $1 GROUP BY d.event`, projectID, store.WebhookQueue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[attune.WebhookEvent]int{}
	for rows.Next() {
		var event string
		var n, jobs int
		if err := rows.Scan(&event, &n, &jobs); err != nil {
			t.Fatal(err)
		}
		if jobs != n {
			t.Fatalf("%s: %d deliveries but %d jobs", event, n, jobs)
		}
		out[attune.WebhookEvent(event)] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEachEventAnnouncedOnceWithItsChange walks a project through every
// event and checks after each step that exactly the events it caused were
// queued, once, and that a change that rolled back announced nothing.
func TestEachEventAnnouncedOnceWithItsChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{overlap: 2, items: 2, annotators: 2})
	if _, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", attune.WebhookEvents); err != nil {
		t.Fatal(err)
	}
	// A webhook that is off, and one that asked for gold only, hear
	// nothing else.
	off, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.4/hook", attune.WebhookEvents)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetWebhookEnabled(ctx, f.project.ID, off.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.5/hook", []attune.WebhookEvent{attune.EventGoldChanged}); err != nil {
		t.Fatal(err)
	}
	want := map[attune.WebhookEvent]int{}
	check := func(step string) {
		t.Helper()
		if got := announced(t, db, f.project.ID); !maps.Equal(got, want) {
			t.Fatalf("after %s: announced %v, want %v", step, got, want)
		}
	}

	// An import that rolls back (an item changed without update)
	// announces nothing; one that commits, once.
	changed := testItem(0, "changed")
	_, err = db.ImportItems(ctx, f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		return emit([]store.ImportItem{changed})
	})
	if !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("conflicting import: %v", err)
	}
	check("a refused import")
	if _, err := db.ImportItems(ctx, f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		return emit([]store.ImportItem{testItem(0, "x")})
	}); err != nil {
		t.Fatal(err)
	}
	want[attune.EventImportFinished] = 1
	check("an import")

	// Full overlap comes with the last label, not before, and once.
	for i, u := range f.annotators {
		for range 2 {
			a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			f.submit(t, a, u)
			settleAll(t, db)
			if i == 0 {
				check("a first annotator's labels")
			}
		}
	}
	// Each item's last label settles it by the consensus rule: the
	// annotators agree, so each gets gold, and both webhooks that asked
	// for gold hear it.
	want[attune.EventFullOverlap] = 1
	want[attune.EventGoldChanged] = 4
	check("every item's k labels")

	// Gold: an adjudication, then the rule, which changes nothing and so
	// announces nothing; both webhooks that asked hear the adjudication.
	item, err := db.FindItem(ctx, f.project.ID, mustItemID(t, db, f.project.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: item.ID, ActorID: f.lead.ID, Answers: fullAnswers}); err != nil {
		t.Fatal(err)
	}
	want[attune.EventGoldChanged] = 6
	check("an adjudication")
	if _, err := db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	check("the consensus rule, which changed no gold")
	if _, err := db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	check("the consensus rule with nothing new")

	// A run: starting it is not an event; pausing is, ending is; a move
	// that does not happen (from a status it is not in) is not.
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "hooked", Provider: "openai", Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	move := func(from, to attune.RunStatus, moves bool) {
		t.Helper()
		if ok, err := db.SetRunStatus(ctx, run.ID, []attune.RunStatus{from}, to, "", nil); err != nil || ok != moves {
			t.Fatalf("%s → %s: %v, %v", from, to, ok, err)
		}
	}
	move(attune.RunQueued, attune.RunRunning, true)
	check("a run's start")
	move(attune.RunRunning, attune.RunPaused, true)
	want[attune.EventRunPaused] = 1
	check("a run's pause")
	move(attune.RunRunning, attune.RunPaused, false)
	check("a pause of a run not running")
	move(attune.RunPaused, attune.RunRunning, true)
	move(attune.RunRunning, attune.RunCompleted, true)
	want[attune.EventRunFinished] = 1
	check("a run's end")
}

func mustItemID(t *testing.T, db *store.DB, projectID int64) int64 {
	t.Helper()
	var id int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT id FROM items WHERE project_id = $1 ORDER BY id LIMIT 1`, projectID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLabelsImportAnnouncesFullOverlapOnce: imported people's answers
// count towards overlap, so the import that completes it announces it,
// once; importing again announces the import but not the overlap.
func TestLabelsImportAnnouncesFullOverlapOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 1})
	if _, _, err := f.db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", attune.WebhookEvents); err != nil {
		t.Fatal(err)
	}
	half := "item,rater,rater_kind,rubric_item,value\nitem-000,Ann,human,CQ1,YES\n"
	if _, err := f.importLabelsCSV(t, half); err != nil {
		t.Fatal(err)
	}
	want := map[attune.WebhookEvent]int{attune.EventImportFinished: 1}
	if got := announced(t, f.db, f.project.ID); !maps.Equal(got, want) {
		t.Fatalf("after half the items: %v, want %v", got, want)
	}
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-001,Ann,human,CQ1,YES\n"); err != nil {
		t.Fatal(err)
	}
	want = map[attune.WebhookEvent]int{attune.EventImportFinished: 2, attune.EventFullOverlap: 1}
	if got := announced(t, f.db, f.project.ID); !maps.Equal(got, want) {
		t.Fatalf("after every item: %v, want %v", got, want)
	}
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-001,Bob,human,CQ1,NO\n"); err != nil {
		t.Fatal(err)
	}
	want[attune.EventImportFinished] = 3
	if got := announced(t, f.db, f.project.ID); !maps.Equal(got, want) {
		t.Fatalf("after more labels: %v, want %v", got, want)
	}
}

// TestFullOverlapAnnouncedOnceUnderConcurrentSubmits: the submits that
// give the last items their labels at the same moment, settled by
// settlers running beside them and after them, announce full overlap once
// between them, not twice and not never.
func TestFullOverlapAnnouncedOnceUnderConcurrentSubmits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 6
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: n, annotators: n})
	if _, _, err := f.db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", []attune.WebhookEvent{attune.EventFullOverlap}); err != nil {
		t.Fatal(err)
	}
	held := make([]*attune.Assignment, n)
	for i, u := range f.annotators {
		a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = a
	}
	errs := make(chan error, n)
	start := make(chan struct{})
	for i, u := range f.annotators {
		go func() {
			<-start
			_, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: held[i].ID, UserID: u.ID, Answers: fullAnswers, ActiveMS: 1000})
			errs <- err
		}()
	}
	settlers := make(chan error, n)
	for range n {
		go func() {
			<-start
			_, err := f.db.SettleQueued(ctx)
			settlers <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if err := <-settlers; err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { settleAll(t, f.db) })
	}
	wg.Wait()
	if got := announced(t, f.db, f.project.ID); got[attune.EventFullOverlap] != 1 {
		t.Fatalf("announced %v, want full overlap once", got)
	}
}
