package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// answerCopiesBehind counts the answer sets whose copy of their answers
// (migration 00038, read by the dataset export) differs from their labels.
func answerCopiesBehind(t *testing.T, db *store.DB) int {
	t.Helper()
	if err := db.WriteQueuedLabels(context.Background()); err != nil {
		t.Fatal(err)
	}
	return countRows(t, db, `
		SELECT count(*) FROM answer_sets s
		WHERE s.answers::jsonb IS DISTINCT FROM
		      (SELECT coalesce(jsonb_object_agg(l.rubric_item_key, l.value), '{}') FROM labels l WHERE l.answer_set_id = s.id)`)
}

// countRows runs a count query.
func countRows(t *testing.T, db *store.DB, sql string) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAnswerSetsKeepACopyOfTheirLabels writes labels by every path that
// writes them (a submission, an edit that drops an answer and changes
// another, a judge's answers, a labels import, and plain SQL) and checks
// after each that every answer set's copy says what its labels say.
func TestAnswerSetsKeepACopyOfTheirLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 4, annotators: 2})
	check := func(step string) {
		t.Helper()
		if n := answerCopiesBehind(t, f.db); n != 0 {
			t.Fatalf("after %s: %d answer sets' copies differ from their labels", step, n)
		}
	}
	ann := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, ann)
	if n := f.count(t, `SELECT count(*) FROM answer_sets WHERE answers::text <> '{}'`); n != 1 {
		t.Fatalf("%d answer sets with answers after one submission", n)
	}
	check("a submission")
	// The submission wrote the set's copy with the set: the row is the
	// first version on the table's first page, not rewritten by the
	// labels' trigger.
	if n := f.count(t, `SELECT count(*) FROM answer_sets WHERE ctid = '(0,1)'`); n != 1 {
		t.Fatal("the submission wrote its answer set twice")
	}

	edited := changed(fullAnswers, "CQ1", "NO")
	delete(edited, "CQ2")
	if _, _, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: f.project.ID, ItemID: a.ItemID, UserID: ann.ID, Answers: edited}); err != nil {
		t.Fatal(err)
	}
	var cq1, cq2 string
	if err := f.db.Pool().QueryRow(ctx, `SELECT coalesce(answers->>'CQ1', 'nothing'), coalesce(answers->>'CQ2', 'nothing') FROM answer_sets WHERE item_id = $1 AND rater_id = (SELECT id FROM raters WHERE user_id = $2)`,
		a.ItemID, ann.ID).Scan(&cq1, &cq2); err != nil {
		t.Fatal(err)
	}
	if cq1 != "NO" || cq2 != "nothing" {
		t.Fatalf("after the edit the copy says CQ1 %s, CQ2 %s; want NO and nothing", cq1, cq2)
	}
	check("an edit")

	f.judgeLabels(t, "a-judge", map[string]map[string]string{"item-001": fullAnswers, "item-002": changed(fullAnswers, "CQ8", "ERROR")})
	check("a judge's answers")

	if _, err := f.importLabelsCSV(t, goodLabels); err != nil {
		t.Fatal(err)
	}
	check("a labels import")

	// Plain SQL too: the copy is the database's to keep.
	if _, err := f.db.Pool().Exec(ctx, `UPDATE labels SET value = 'NA' WHERE rubric_item_key = 'CQ8'`); err != nil {
		t.Fatal(err)
	}
	check("an update in SQL")
	if _, err := f.db.Pool().Exec(ctx, `DELETE FROM labels WHERE rubric_item_key = 'CQ1'`); err != nil {
		t.Fatal(err)
	}
	check("a delete in SQL")
	if n := f.count(t, `SELECT count(*) FROM answer_sets WHERE answers->>'CQ1' IS NOT NULL`); n != 0 {
		t.Fatalf("%d copies still hold a deleted answer", n)
	}
	if _, err := f.db.Pool().Exec(ctx, `TRUNCATE labels CASCADE`); err != nil {
		t.Fatal(err)
	}
	check("a truncation")
}

// TestAnswerCopiesUnderConcurrentEdits: two transactions editing the same
// answer set, each a different answer, leave a copy holding both.
func TestAnswerCopiesUnderConcurrentEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 1, annotators: 1})
	ann := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, ann)
	if err := f.db.WriteQueuedLabels(ctx); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(fullAnswers))
	for k := range fullAnswers {
		keys = append(keys, k)
	}
	for round := range 20 {
		var wg sync.WaitGroup
		for _, k := range keys {
			wg.Go(func() {
				value := []string{"YES", "NO"}[round%2]
				if _, err := f.db.Pool().Exec(ctx, `UPDATE labels SET value = $1 WHERE item_id = $2 AND rubric_item_key = $3 AND value <> 'NA'`,
					value, a.ItemID, k); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := answerCopiesBehind(t, f.db); n != 0 {
			t.Fatalf("round %d: the copy lost an edit made beside another", round)
		}
	}
}

// goldCopiesBehind counts the items whose copy of their gold (migration
// 00039) differs from their gold labels, or that have one without gold or
// gold without one.
func goldCopiesBehind(t *testing.T, db *store.DB) int {
	t.Helper()
	return countRows(t, db, `
		SELECT count(*)
		FROM (SELECT item_id, jsonb_object_agg(rubric_item_key, value) AS gold, bool_or(method = 'adjudicated') AS adjudicated
		      FROM gold_labels GROUP BY item_id) l
		FULL JOIN item_gold c ON c.item_id = l.item_id
		WHERE l.item_id IS NULL OR c.item_id IS NULL
		   OR l.gold IS DISTINCT FROM c.gold::jsonb OR l.adjudicated IS DISTINCT FROM c.adjudicated`)
}

// TestItemsKeepACopyOfTheirGold writes gold by every path that writes it
// (the consensus rule, a lead's adjudication, one that leaves rubric items
// out, and plain SQL) and checks after each that every item's copy says
// what its gold says.
func TestItemsKeepACopyOfTheirGold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 2})
	check := func(step string, items int) {
		t.Helper()
		if n := goldCopiesBehind(t, f.db); n != 0 {
			t.Fatalf("after %s: %d items' copies differ from their gold", step, n)
		}
		if n := f.count(t, `SELECT count(*) FROM item_gold WHERE project_id = $1`, f.project.ID); n != items {
			t.Fatalf("after %s: %d items with a copy of their gold, want %d", step, n, items)
		}
	}
	answers := map[string][]map[string]string{
		"item-000": {fullAnswers, fullAnswers},
		"item-001": {fullAnswers, changed(fullAnswers, "CQ3", "NO")},
		"item-002": {fullAnswers, changed(fullAnswers, "CQ1", "NO")},
	}
	f.labelWith(t, func(a int, source string) map[string]string { return answers[source][a] }, nil)
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	check("the consensus rule", f.count(t, `SELECT count(DISTINCT item_id) FROM gold_labels`))
	if n := f.count(t, `SELECT count(*) FROM item_gold WHERE adjudicated`); n != 0 {
		t.Fatalf("%d items' automatic gold copied as a lead's", n)
	}

	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-001"), ActorID: f.lead.ID,
		Answers: fullAnswers}); err != nil {
		t.Fatal(err)
	}
	check("an adjudication", f.count(t, `SELECT count(DISTINCT item_id) FROM gold_labels`))
	if n := f.count(t, `SELECT count(*) FROM item_gold WHERE adjudicated AND gold->>'CQ3' = 'YES'`); n != 1 {
		t.Fatal("the lead's gold is not in the copy")
	}
	fewer := changed(fullAnswers, "CQ1", "NO")
	delete(fewer, "CQ8")
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-002"), ActorID: f.lead.ID,
		Answers: fewer}); err != nil {
		t.Fatal(err)
	}
	check("an adjudication of fewer rubric items", 3)

	if _, err := f.db.Pool().Exec(ctx, `UPDATE gold_labels SET value = 'NO' WHERE rubric_item_key = 'CQ4'`); err != nil {
		t.Fatal(err)
	}
	check("an update in SQL", 3)
	if _, err := f.db.Pool().Exec(ctx, `DELETE FROM gold_labels WHERE item_id = $1`, f.itemID(t, "item-000")); err != nil {
		t.Fatal(err)
	}
	check("a delete in SQL", 2)
	// An item deleted takes its gold and its copy with it.
	if _, err := f.db.Pool().Exec(ctx, `DELETE FROM items WHERE id = $1`, f.itemID(t, "item-001")); err != nil {
		t.Fatal(err)
	}
	check("an item's deletion", 1)
	if _, err := f.db.Pool().Exec(ctx, `TRUNCATE gold_labels CASCADE`); err != nil {
		t.Fatal(err)
	}
	check("a truncation", 0)
}

// TestGoldCopiesUnderConcurrentEdits: transactions editing the gold of
// one item side by side, each a different rubric item, leave a copy
// holding every edit.
func TestGoldCopiesUnderConcurrentEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 1, annotators: 1})
	item := f.itemID(t, "item-000")
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: item, ActorID: f.lead.ID, Answers: fullAnswers}); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		var wg sync.WaitGroup
		for k := range fullAnswers {
			wg.Go(func() {
				value := []string{"NO", "YES"}[round%2]
				if _, err := f.db.Pool().Exec(ctx, `UPDATE gold_labels SET value = $1 WHERE item_id = $2 AND rubric_item_key = $3 AND value <> 'NA'`,
					value, item, k); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := goldCopiesBehind(t, f.db); n != 0 {
			t.Fatalf("round %d: the copy lost an edit made beside another", round)
		}
	}
}
