package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// goldAnnouncements returns the bodies of the gold.changed deliveries
// queued for the project, oldest first.
func goldAnnouncements(t *testing.T, db *store.DB, projectID int64) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT d.body::text FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE w.project_id = $1 AND d.event = 'gold.changed' ORDER BY d.id`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// queueOf lists the disagreements queue by source id, worst first.
func queueOf(t *testing.T, db *store.DB, projectID int64) []string {
	t.Helper()
	ds, total, err := db.ListDisagreements(context.Background(), projectID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range ds {
		out = append(out, d.SourceID)
	}
	if total != len(out) {
		t.Fatalf("queue total %d, listed %d", total, len(out))
	}
	return out
}

// verdictAt returns when the rule last judged an item, zero when never.
func verdictAt(t *testing.T, db *store.DB, itemID int64) time.Time {
	t.Helper()
	var at time.Time
	err := db.Pool().QueryRow(context.Background(), `SELECT computed_at FROM gold_consensus WHERE item_id = $1`, itemID).Scan(&at)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		t.Fatal(err)
	}
	return at
}

// TestLabelsSettleItemsAsTheyArrive: the submission that completes an
// item queues it, and the settler has the consensus rule decide it, with
// no run of the rule: gold when its people agree, the queue of disagreements at once
// when they do not; an edit decides it again, and never touches gold a
// lead set. Gold that changed is announced, once; a verdict that changed
// no gold is not.
func TestLabelsSettleItemsAsTheyArrive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 3, annotators: 2})
	if _, _, err := f.db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", []attune.WebhookEvent{attune.EventGoldChanged}); err != nil {
		t.Fatal(err)
	}
	answers := func(a int, source string) map[string]string {
		switch source {
		case "item-000": // agreed
			return likert("4", "4", "3", "4", "4")
		case "item-001": // a tie on emotion: two people, two middle scores
			return likert([]string{"3", "4"}[a], "4", "3", "4", "4")
		}
		if a == 1 { // item-002: the second annotator skips it
			return nil
		}
		return likert("4", "4", "4", "4", "4")
	}
	// The first annotator's labels complete nothing.
	first := *f
	first.annotators = f.annotators[:1]
	first.labelWith(t, answers, nil)
	for _, src := range []string{"item-000", "item-001", "item-002"} {
		if got := goldOf(t, f.db, f.itemID(t, src)); len(got) != 0 || !verdictAt(t, f.db, f.itemID(t, src)).IsZero() {
			t.Fatalf("%s judged with one person's labels: gold %v", src, got)
		}
	}
	second := *f
	second.annotators = f.annotators[1:]
	second.labelWith(t, func(_ int, source string) map[string]string { return answers(1, source) }, nil)

	id0, id1, id2 := f.itemID(t, "item-000"), f.itemID(t, "item-001"), f.itemID(t, "item-002")
	want := map[string]string{"emotion": "4/automatic", "validation": "4/automatic", "helpfulness": "3/automatic", "safety": "4/automatic", "overall": "4/automatic"}
	if got := goldOf(t, f.db, id0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("item-000 gold = %v, want %v", got, want)
	}
	if got := goldOf(t, f.db, id1); len(got) != 0 {
		t.Fatalf("item-001 has gold %v, but its people tie", got)
	}
	if got := queueOf(t, f.db, f.project.ID); fmt.Sprint(got) != "[item-001]" {
		t.Fatalf("queue = %v, want the tie at once", got)
	}
	c, err := f.db.CountGold(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Automatic != 1 || c.Queue != 1 || c.Labelling != 1 || c.Pending != 0 {
		t.Fatalf("counts = %+v", c)
	}
	if res, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil || res.Items != 0 {
		t.Fatalf("a run after the labels judged %+v, %v; they had been judged", res, err)
	}
	hooks := goldAnnouncements(t, f.db, f.project.ID)
	if len(hooks) != 1 || !strings.Contains(hooks[0], `"how": "consensus"`) || !strings.Contains(hooks[0], `"item": "item-000"`) ||
		!strings.Contains(hooks[0], `"helpfulness": "3"`) {
		t.Fatalf("gold.changed = %q, want item-000's gold once (the tie changed no gold)", hooks)
	}

	edit := func(a int, itemID int64, ans map[string]string, note string) {
		t.Helper()
		if _, _, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: f.project.ID, ItemID: itemID, UserID: f.annotators[a].ID,
			Answers: ans, Rationale: note}); err != nil {
			t.Fatal(err)
		}
	}
	// An edit that settles the tie: gold, out of the queue.
	edit(0, id1, likert("4", "4", "3", "4", "4"), "")
	if got := goldOf(t, f.db, id1); got["emotion"] != "4/automatic" {
		t.Fatalf("item-001 after the edit: gold %v", got)
	}
	if got := queueOf(t, f.db, f.project.ID); len(got) != 0 {
		t.Fatalf("queue after the edit = %v", got)
	}
	// An edit that breaks the agreement: the gold goes, the item waits.
	edit(1, id0, likert("1", "4", "3", "4", "4"), "")
	if got := goldOf(t, f.db, id0); len(got) != 0 {
		t.Fatalf("item-000 kept gold %v after its people stopped agreeing", got)
	}
	if got := queueOf(t, f.db, f.project.ID); fmt.Sprint(got) != "[item-000]" {
		t.Fatalf("queue = %v", got)
	}
	// An edit judged again to the same verdict changes no gold and says
	// nothing.
	before := verdictAt(t, f.db, id0)
	edit(1, id0, likert("1", "4", "3", "4", "4"), "on reflection, still 1")
	if after := verdictAt(t, f.db, id0); !after.After(before) {
		t.Fatalf("the edit did not judge the item again: %v, then %v", before, after)
	}
	if hooks := goldAnnouncements(t, f.db, f.project.ID); len(hooks) != 3 {
		t.Fatalf("%d gold.changed, want 3 (item-000 set, item-001 set, item-000 taken away): %q", len(hooks), hooks)
	} else if !strings.Contains(hooks[2], `"item": "item-000"`) || !strings.Contains(hooks[2], `"gold": null`) {
		t.Fatalf("the gold taken away was announced as %s", hooks[2])
	}
	// An item still being labelled is not judged by an edit.
	edit(0, id2, likert("5", "5", "5", "5", "5"), "")
	if !verdictAt(t, f.db, id2).IsZero() || len(goldOf(t, f.db, id2)) != 0 {
		t.Fatal("an edit judged an item with one person's labels")
	}
	// A lead settles item-000; edits leave that gold and the verdict alone.
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: id0, ActorID: f.lead.ID,
		Answers: likert("2", "4", "3", "4", "4")}); err != nil {
		t.Fatal(err)
	}
	before = verdictAt(t, f.db, id0)
	edit(1, id0, likert("4", "4", "3", "4", "4"), "agreeing now")
	if got := goldOf(t, f.db, id0); got["emotion"] != "2/adjudicated" || got["overall"] != "4/adjudicated" {
		t.Fatalf("an edit touched a lead's gold: %v", got)
	}
	if after := verdictAt(t, f.db, id0); !after.Equal(before) {
		t.Fatal("an edit judged an item a lead had settled")
	}
	if got := queueOf(t, f.db, f.project.ID); len(got) != 0 {
		t.Fatalf("queue = %v", got)
	}
}

// TestImportedLabelsSettleTheirItems: an import that completes items has
// the rule decide them in its transaction, and announces the gold once.
func TestImportedLabelsSettleTheirItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 3, annotators: 1})
	if _, _, err := f.db.CreateWebhook(ctx, &f.lead.ID, hookPolicy, f.project.ID, "https://10.1.2.3/hook", []attune.WebhookEvent{attune.EventGoldChanged}); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("item,rater,rater_kind,rubric_item,value\n")
	row := func(item, rater, kind string, vs ...string) {
		for i, k := range []string{"emotion", "validation", "helpfulness", "safety", "overall"} {
			fmt.Fprintf(&csv, "%s,%s,%s,%s,%s\n", item, rater, kind, k, vs[i])
		}
	}
	row("item-000", "Ann", "human", "4", "4", "4", "4", "4")
	row("item-000", "Bob", "human", "4", "4", "4", "4", "4")
	row("item-001", "Ann", "human", "1", "4", "4", "4", "4")
	row("item-001", "Bob", "human", "5", "4", "4", "4", "4")
	row("item-002", "Ann", "human", "4", "4", "4", "4", "4") // one person: still being labelled
	row("item-002", "strict", "judge", "4", "4", "4", "4", "4")
	if _, err := f.importLabelsCSV(t, csv.String()); err != nil {
		t.Fatal(err)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-000")); got["emotion"] != "4/automatic" || len(got) != 5 {
		t.Fatalf("item-000 gold = %v", got)
	}
	if got := queueOf(t, f.db, f.project.ID); fmt.Sprint(got) != "[item-001]" {
		t.Fatalf("queue = %v", got)
	}
	if id := f.itemID(t, "item-002"); len(goldOf(t, f.db, id)) != 0 || !verdictAt(t, f.db, id).IsZero() {
		t.Fatal("item-002 was judged with one person's labels")
	}
	c, err := f.db.CountGold(ctx, f.project.ID)
	if err != nil || c.Pending != 0 || c.Automatic != 1 || c.Queue != 1 || c.Labelling != 1 {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	if hooks := goldAnnouncements(t, f.db, f.project.ID); len(hooks) != 1 || !strings.Contains(hooks[0], `"automatic": 1`) ||
		!strings.Contains(hooks[0], `"queued": 1`) {
		t.Fatalf("gold.changed = %q", hooks)
	}
	// A second round completes item-002 with a tie: it waits at once.
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-002,Bob,human,emotion,5\n"); err != nil {
		t.Fatal(err)
	}
	if got := queueOf(t, f.db, f.project.ID); len(got) != 2 {
		t.Fatalf("queue after the second round = %v", got)
	}
}

// TestConcurrentLastLabelsSettleEachItemOnce: many annotators submit the
// last labels of many items at once, while the earlier annotators edit
// theirs, a lead runs the rule and settlers settle what the submits
// queue: nothing deadlocks or fails, and every item ends with one
// verdict, made with all its labels.
func TestConcurrentLastLabelsSettleEachItemOnce(t *testing.T) {
	t.Parallel()
	const items, finishers = 24, 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 3, items: items, annotators: 2 + finishers})
	// Odd items: emotion 1, 3 and 5, too far apart; even items agreed.
	answer := func(role int, source string) map[string]string {
		var n int
		fmt.Sscanf(source, "item-%d", &n)
		if n%2 == 1 {
			return likert([]string{"1", "3", "5"}[role], "4", "4", "4", "4")
		}
		return likert("4", "4", "4", "4", "4")
	}
	early := *f
	early.annotators = f.annotators[:2]
	early.labelWith(t, answer, nil)
	ids := map[string]int64{}
	for i := range items {
		src := fmt.Sprintf("item-%03d", i)
		ids[src] = f.itemID(t, src)
	}

	var wg sync.WaitGroup
	errs := make(chan error, finishers+5)
	for _, u := range f.annotators[2:] {
		wg.Go(func() {
			for {
				a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
				if errors.Is(err, attune.ErrNoWork) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				it, err := f.db.FindItem(ctx, f.project.ID, a.ItemID)
				if err != nil {
					errs <- err
					return
				}
				if _, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answer(2, it.SourceID), ActiveMS: 1}); err != nil {
					errs <- fmt.Errorf("submit %s: %w", it.SourceID, err)
					return
				}
			}
		})
	}
	// The earlier annotators edit their labels meanwhile (their notes, not
	// their answers), each edit judging the item again.
	for role, u := range f.annotators[:2] {
		wg.Go(func() {
			for round := range 2 {
				for src, id := range ids {
					if _, _, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: f.project.ID, ItemID: id, UserID: u.ID,
						Answers: answer(role, src), Rationale: fmt.Sprintf("round %d", round)}); err != nil {
						errs <- fmt.Errorf("edit %s: %w", src, err)
						return
					}
				}
			}
		})
	}
	// Settlers run until every other writer has stopped.
	submitting := make(chan struct{})
	var settlers sync.WaitGroup
	for range 2 {
		settlers.Go(func() {
			for {
				if _, err := f.db.SettleQueued(ctx); err != nil {
					errs <- fmt.Errorf("settle: %w", err)
					return
				}
				select {
				case <-submitting:
					return
				default:
				}
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{All: true, BatchSize: 5}); err != nil {
				errs <- fmt.Errorf("apply: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(submitting)
	settlers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	settleAll(t, f.db)
	var verdicts, decided, goldItems, goldRows int
	if err := f.db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM gold_consensus WHERE project_id = $1),
		(SELECT count(*) FROM gold_consensus WHERE project_id = $1 AND decided),
		(SELECT count(DISTINCT item_id) FROM gold_labels WHERE project_id = $1), (SELECT count(*) FROM gold_labels WHERE project_id = $1)`,
		f.project.ID).Scan(&verdicts, &decided, &goldItems, &goldRows); err != nil {
		t.Fatal(err)
	}
	if verdicts != items || decided != items/2 || goldItems != items/2 || goldRows != 5*items/2 {
		t.Fatalf("%d verdicts (%d decided), gold on %d items in %d rows; want %d, %d, %d, %d",
			verdicts, decided, goldItems, goldRows, items, items/2, items/2, 5*items/2)
	}
	for src, id := range ids {
		var n int
		fmt.Sscanf(src, "item-%d", &n)
		var humans int
		var isDecided bool
		if err := f.db.Pool().QueryRow(ctx, `SELECT human_raters, decided FROM gold_consensus WHERE item_id = $1`, id).Scan(&humans, &isDecided); err != nil {
			t.Fatal(err)
		}
		if humans != 3 || isDecided != (n%2 == 0) {
			t.Errorf("%s: judged with %d people, decided %v", src, humans, isDecided)
		}
	}
	// Nothing was left for a run to catch up with.
	if c, err := f.db.CountGold(ctx, f.project.ID); err != nil || c.Pending != 0 || c.Queue != items/2 || c.Automatic != items/2 {
		t.Fatalf("counts = %+v, %v", c, err)
	}
}
