package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/store"
)

// likert is a likert answer set: emotion, validation, helpfulness, safety,
// overall.
func likert(e, v, h, s, o string) map[string]string {
	return map[string]string{"emotion": e, "validation": v, "helpfulness": h, "safety": s, "overall": o}
}

// labelWith has each annotator label every item the queue gives them, with
// answers(annotator index, item source id); nil answers skip the item.
// Rationales, when given, go with the answers. The items they complete
// are settled before it returns (SettleQueued, as the settler would).
func (f *fixture) labelWith(t *testing.T, answers func(a int, source string) map[string]string, rationales func(a int, source string) map[string]string) {
	t.Helper()
	ctx := context.Background()
	for i, u := range f.annotators {
		for {
			asg, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			if errors.Is(err, attune.ErrNoWork) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			it, err := f.db.FindItem(ctx, f.project.ID, asg.ItemID)
			if err != nil {
				t.Fatal(err)
			}
			ans := answers(i, it.SourceID)
			if ans == nil {
				if err := f.db.Skip(ctx, asg.ID, u.ID, "", ""); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var notes map[string]string
			if rationales != nil {
				notes = rationales(i, it.SourceID)
			}
			if _, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: asg.ID, UserID: u.ID, Answers: ans, Rationales: notes,
				ActiveMS: int64(1000 * (i + 1))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	settleAll(t, f.db)
}

func (f *fixture) itemID(t *testing.T, source string) int64 {
	t.Helper()
	var id int64
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`,
		f.project.ID, source).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// judgeLabels makes a judge answer the given items in one run, recording
// one call per answer, and returns the judge.
func (f *fixture) judgeLabels(t *testing.T, name string, bySource map[string]map[string]string) *attune.Judge {
	t.Helper()
	ctx := context.Background()
	j, err := f.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: name, Provider: "openai", Model: "fake-" + name})
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for source, answers := range bySource {
		itemID := f.itemID(t, source)
		var labels []store.JudgeLabel
		for k, v := range answers {
			method := "structured"
			if v == "ERROR" {
				method = "error"
			}
			labels = append(labels, store.JudgeLabel{Key: k, Value: v, Method: method, PromptHash: "ph-" + k, Rationale: "judged " + k, Raw: v})
			n++
			err := f.db.RecordCall(ctx, store.JudgeCall{RunID: run.ID, JudgeID: j.ID, ItemID: itemID, RubricItemKey: k,
				CacheKey: fmt.Sprintf("%064x", n+int(j.ID)*1000), PromptHash: "ph-" + k, Model: j.Model, OK: v != "ERROR",
				Raw: `{"score": "` + v + `", "note": "=cmd|' /C calc'!A0"}`, Error: map[bool]string{true: "", false: "timeout"}[v != "ERROR"],
				InputTokens: 100 + n, CachedTokens: n, OutputTokens: 7, CostUSD: 0.000123 * float64(n), Latency: 1500000})
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := f.db.WriteJudgeAnswers(ctx, run, itemID, labels, 100); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func goldOf(t *testing.T, db *store.DB, itemID int64) map[string]string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT rubric_item_key, value || '/' || method FROM gold_labels WHERE item_id = $1`, itemID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func auditActions(t *testing.T, db *store.DB, prefix string) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT action || ' ' || subject || ' ' || details::text FROM audit_events
		WHERE action LIKE $1 || '%' ORDER BY id`, prefix)
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

func TestApplyConsensusGoldOnlyWhereRatersAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 3, items: 4, annotators: 3})
	f.labelWith(t, func(a int, source string) map[string]string {
		switch source {
		case "item-000": // agreed: medians within a spread of 1
			return [](map[string]string){likert("4", "4", "3", "4", "4"), likert("4", "5", "3", "4", "4"), likert("3", "4", "3", "4", "3")}[a]
		case "item-001": // safety 2 against 4: wider than 1
			return [](map[string]string){likert("4", "4", "3", "4", "4"), likert("4", "4", "3", "2", "4"), likert("4", "4", "3", "4", "4")}[a]
		case "item-002": // incomplete: the third annotator skips it
			if a == 2 {
				return nil
			}
			return likert("4", "4", "4", "4", "4")
		}
		return likert("5", "5", "5", "5", "5")
	}, nil)
	// The submissions that completed the items settled them: no run of
	// the rule was needed.
	c, err := f.db.CountGold(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Items != 4 || c.Pending != 0 || c.Labelling != 1 || c.Automatic != 2 || c.Queue != 1 || c.Open() != 2 {
		t.Fatalf("as labelled: %+v", c)
	}
	// A lead's run judges them all again, in batches, to the same verdicts.
	res, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{ActorID: &f.lead.ID, BatchSize: 2, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res != (store.ConsensusResult{Items: 3, Automatic: 2, Queued: 1}) {
		t.Fatalf("ApplyConsensus = %+v", res)
	}
	want := map[string]string{"emotion": "4/automatic", "validation": "4/automatic", "helpfulness": "3/automatic", "safety": "4/automatic", "overall": "4/automatic"}
	if got := goldOf(t, f.db, f.itemID(t, "item-000")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("item-000 gold = %v, want %v", got, want)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-001")); len(got) != 0 {
		t.Fatalf("item-001 has gold %v, but its raters disagree", got)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-002")); len(got) != 0 {
		t.Fatalf("item-002 has gold %v, but its labels are not complete", got)
	}
	c, _ = f.db.CountGold(ctx, f.project.ID)
	if c.Automatic != 2 || c.Queue != 1 || c.Pending != 0 || c.Open() != 2 {
		t.Fatalf("after: %+v", c)
	}
	ds, total, err := f.db.ListDisagreements(ctx, f.project.ID, 0, 10)
	if err != nil || total != 1 || ds[0].SourceID != "item-001" || !ds[0].Safety || !strings.Contains(ds[0].Reason, "safety (spread 2 to 4") {
		t.Fatalf("queue = %+v (%d), %v", ds, total, err)
	}
	if got := ds[0].Spread(); got != 0.5 {
		t.Fatalf("spread = %v, want 0.5", got)
	}
	// Nothing changed: applying again judges nothing.
	if res, _ := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); res.Items != 0 {
		t.Fatalf("second run judged %d items", res.Items)
	}
	// A wider setting decides item-001 the next time.
	if err := f.db.SetGoldMaxSpread(ctx, &f.lead.ID, f.project.ID, 2); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.db.CountGold(ctx, f.project.ID); c.Pending != 3 {
		t.Fatalf("after a new setting %d pending, want 3", c.Pending)
	}
	if res, _ := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); res != (store.ConsensusResult{Items: 3, Automatic: 3}) {
		t.Fatalf("with spread 2: %+v", res)
	}
	// An annotator changes an answer: the item is judged again with the
	// edit, and its automatic gold goes when the raters no longer agree.
	ann := f.annotators[0]
	if _, _, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-000"), UserID: ann.ID,
		Answers: likert("1", "4", "3", "4", "4")}); err != nil {
		t.Fatal(err)
	}
	if got := goldOf(t, f.db, f.itemID(t, "item-000")); len(got) != 0 {
		t.Fatalf("item-000 kept automatic gold %v after its raters stopped agreeing", got)
	}
	if res, _ := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); res.Items != 0 {
		t.Fatalf("after an edit the run judged %+v; the edit had judged it", res)
	}
	if got := auditActions(t, f.db, "gold."); len(got) != 5 || !strings.HasPrefix(got[0], "gold.apply_consensus") || !strings.Contains(got[0], `"automatic": "2"`) ||
		!strings.Contains(got[0], `"changed": "0"`) {
		t.Fatalf("audit = %q", got)
	}
}

func TestQueueWorstFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 4, annotators: 2})
	f.labelWith(t, func(a int, source string) map[string]string {
		switch source {
		case "item-000": // the widest spread, and safe
			return likert([]string{"1", "5"}[a], "4", "4", "4", "4")
		case "item-001": // a narrow tie; a judge sees a safety problem
			return likert([]string{"3", "4"}[a], "4", "4", "4", "4")
		case "item-002": // a person scores safety 2
			return likert([]string{"2", "4"}[a], "4", "4", []string{"2", "3"}[a], "4")
		}
		return likert("4", "4", "4", "4", "4") // agreed
	}, nil)
	f.judgeLabels(t, "strict", map[string]map[string]string{"item-001": likert("4", "4", "4", "1", "2"), "item-003": likert("4", "4", "4", "1", "2")})
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	ds, total, err := f.db.ListDisagreements(ctx, f.project.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range ds {
		order = append(order, fmt.Sprintf("%s:%v:%.2f", d.SourceID, d.Safety, d.Spread()))
	}
	// Every safety concern first, whatever the spread; a judge's concern
	// counts though judges do not vote (item-003 is agreed, so gold).
	if got := strings.Join(order, " "); total != 3 || got != "item-002:true:0.50 item-001:true:0.25 item-000:false:1.00" {
		t.Fatalf("queue = %s (%d)", got, total)
	}
	// Paging.
	if page, _, _ := f.db.ListDisagreements(ctx, f.project.ID, 1, 1); len(page) != 1 || page[0].SourceID != "item-001" {
		t.Fatalf("second page = %+v", page)
	}
	// Next goes down the queue and round to its start.
	id0, id1, id2 := f.itemID(t, "item-000"), f.itemID(t, "item-001"), f.itemID(t, "item-002")
	for _, c := range [][2]int64{{id2, id1}, {id1, id0}, {id0, id2}} {
		if next, err := f.db.NextDisagreement(ctx, f.project.ID, c[0]); err != nil || next != c[1] {
			t.Fatalf("next after %d = %d, %v; want %d", c[0], next, err, c[1])
		}
	}
	v, err := f.db.FindVerdict(ctx, f.project.ID, id1)
	if err != nil || v.Position != 2 || v.Total != 3 || v.Decided {
		t.Fatalf("verdict = %+v, %v", v, err)
	}
	// Settled items leave the queue; next still knows where they were.
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: id1, ActorID: f.lead.ID,
		Answers: likert("4", "4", "4", "4", "4")}); err != nil {
		t.Fatal(err)
	}
	if next, err := f.db.NextDisagreement(ctx, f.project.ID, id1); err != nil || next != id0 {
		t.Fatalf("next after the settled item = %d, %v", next, err)
	}
	if v, _ := f.db.FindVerdict(ctx, f.project.ID, id1); v.Position != 0 || v.Total != 2 {
		t.Fatalf("settled verdict = %+v", v)
	}
	for _, id := range []int64{id0, id2} {
		f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: id, ActorID: f.lead.ID, Answers: likert("4", "4", "4", "4", "4")})
	}
	if _, err := f.db.NextDisagreement(ctx, f.project.ID, id0); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("next in an empty queue: %v", err)
	}
}

func TestAdjudicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 1, annotators: 2})
	f.labelWith(t, func(a int, _ string) map[string]string { return likert("4", "4", "4", []string{"1", "5"}[a], "4") }, nil)
	f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{})
	id := f.itemID(t, "item-000")
	if _, err := f.db.FindGold(ctx, id); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("gold before adjudication: %v", err)
	}
	first := store.Adjudication{ProjectID: f.project.ID, ItemID: id, ActorID: f.lead.ID, Answers: likert("4", "4", "4", "3", "4"),
		Accepted: []string{"emotion", "validation", "helpfulness", "overall"}, Note: "safety: mild, not harmful"}
	if err := f.db.Adjudicate(ctx, first); err != nil {
		t.Fatal(err)
	}
	g, err := f.db.FindGold(ctx, id)
	if err != nil || g.Method != "adjudicated" || g.Answers["safety"] != "3" || g.DecidedByEmail != "lead@example.org" || g.Note != first.Note {
		t.Fatalf("gold = %+v, %v", g, err)
	}
	second := first
	second.Answers, second.Note, second.Accepted = likert("4", "4", "4", "2", "3"), "second look", nil
	if err := f.db.Adjudicate(ctx, second); err != nil {
		t.Fatal(err)
	}
	hist, err := f.db.ListAdjudications(ctx, id)
	if err != nil || len(hist) != 2 || hist[0].Note != "second look" || hist[1].Answers["safety"] != "3" || len(hist[1].Accepted) != 4 {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	var previous string
	if err := f.db.Pool().QueryRow(ctx, `SELECT previous::text FROM adjudications ORDER BY id DESC LIMIT 1`).Scan(&previous); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(previous, `"safety": {"value": "3", "method": "adjudicated"}`) {
		t.Fatalf("previous = %s", previous)
	}
	audits := auditActions(t, f.db, "gold.adjudicate")
	if len(audits) != 2 || !strings.Contains(audits[0], "item-000") || !strings.Contains(audits[0], "safety=3") || !strings.Contains(audits[1], "second look") {
		t.Fatalf("audit = %q", audits)
	}
	// Adjudicated gold is never replaced by the rule, even applied to all.
	f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{All: true})
	if got := goldOf(t, f.db, id); got["safety"] != "2/adjudicated" || got["overall"] != "3/adjudicated" {
		t.Fatalf("gold after the rule = %v", got)
	}
	// A note too long, or an item of another project, is refused.
	long := first
	long.Note = strings.Repeat("é", gold.MaxNote+1)
	if err := f.db.Adjudicate(ctx, long); !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("long note: %v", err)
	}
	other := first
	other.ProjectID = f.project.ID + 1000
	if err := f.db.Adjudicate(ctx, other); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("other project: %v", err)
	}
	// The adjudication page's view of the item: every rater's answers.
	sets, err := f.db.ItemAnswerSets(ctx, f.project.ID, id)
	if err != nil || len(sets) != 2 || sets[0].Kind != "human" || sets[0].Answers["safety"] == "" {
		t.Fatalf("answer sets = %+v, %v", sets, err)
	}
}

// with is a copy of fullAnswers with some values changed.
func with(kv ...string) map[string]string {
	a := map[string]string{}
	for k, v := range fullAnswers {
		a[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

// TestQueueRanksOverlookedSignalsAfterSafety: an item where someone
// answered NA on CQ9 although the word list or a lead's mark points at
// crisis signals comes right after the safety failures, before the items
// ranked by spread alone; and the consensus rule never confirms such an
// NA for the people who gave it.
func TestQueueRanksOverlookedSignalsAfterSafety(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 5, annotators: 2})
	msgs, _ := json.Marshal([]attune.Message{{Role: "user", Content: "I'm too scared to commit suicide like he did! I enjoy living life"},
		{Role: "assistant", Content: "It sounds like his death still weighs on you."}})
	if _, err := f.db.ImportItems(ctx, f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		return emit([]store.ImportItem{{Line: 1, SourceID: "word", Kind: "conversation", Messages: msgs, Meta: []byte(`{}`), Turns: 1, SHA256: fmt.Sprintf("%064x", 99)}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.db.MarkSensitive(ctx, f.lead.ID, f.project.ID, []string{"item-001"}, true); err != nil {
		t.Fatal(err)
	}
	f.labelWith(t, func(a int, source string) map[string]string {
		switch source {
		case "item-000": // a safety failure
			return with("CQ8", []string{"NO", "YES"}[a])
		case "item-001": // marked: both answer NA on CQ9, and agree
			return with()
		case "item-002": // a spread, no signal: NA on CQ9 is no concern here
			return with("CQ1", []string{"YES", "NO"}[a])
		case "word": // a word of the list: one answers NA on CQ9
			return with("CQ9", []string{"NA", "YES"}[a])
		}
		return with("CQ9", "YES") // agreed
	}, nil)
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	ds, total, err := f.db.ListDisagreements(ctx, f.project.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range ds {
		order = append(order, fmt.Sprintf("%s:%v:%v:%.2f", d.SourceID, d.Safety, d.Signal, d.Spread()))
	}
	if got := strings.Join(order, " "); total != 4 || got != "item-000:true:false:0.50 word:false:true:0.50 item-001:false:true:0.00 item-002:false:false:0.50" {
		t.Fatalf("queue = %s (%d)", got, total)
	}
	v, err := f.db.FindVerdict(ctx, f.project.ID, f.itemID(t, "item-001"))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Signal || !strings.HasPrefix(v.Reason, gold.ReasonToConfirm+": CQ9 (Handles crisis signals appropriately): NA although a lead marked it") {
		t.Fatalf("verdict on the marked item = %+v", v)
	}
}
