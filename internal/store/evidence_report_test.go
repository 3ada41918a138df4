package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// importLongItems adds n four-turn dialogues long-000… to the project, so
// that turn evidence can name turns 1 to 4.
func (f *fixture) importLongItems(t *testing.T, n int) {
	t.Helper()
	_, err := f.db.ImportItems(context.Background(), f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		var batch []store.ImportItem
		for i := range n {
			var msgs []attune.Message
			for k := range 4 {
				msgs = append(msgs, attune.Message{Role: "user", Content: fmt.Sprintf("worry %d of %d", k+1, i)},
					attune.Message{Role: "assistant", Content: fmt.Sprintf("reply %d", k+1)})
			}
			raw, _ := json.Marshal(msgs)
			batch = append(batch, store.ImportItem{Line: i + 1, SourceID: fmt.Sprintf("long-%03d", i), Kind: "conversation", Messages: raw,
				Meta: []byte(`{}`), Turns: 4, SHA256: fmt.Sprintf("%064x", 900000+i)})
		}
		return emit(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEvidenceFromEveryWriter: every writer's turns (a person's submit, a
// labels import, a judge run's answers) are on the answer sets, where the
// report's read of turn evidence finds them with the answers they go
// with, by item and rater (sets without turns not read, the rater filter
// holding), and where the dataset export reads each rating's turns.
func TestEvidenceFromEveryWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	f.importLongItems(t, 2)

	// A person's submit, on whichever item they are given.
	u := f.annotators[0]
	asg, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	answers := maps.Clone(fullAnswers)
	answers["CQ1"] = "NO"
	if _, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: asg.ID, UserID: u.ID, Answers: answers,
		Evidence: rubric.Evidence{"CQ1": {1}}, ActiveMS: 1000}); err != nil {
		t.Fatal(err)
	}
	// A labels import: Ann marks turns, Bo answers NO without any.
	if _, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value,evidence
long-000,Ann,human,CQ1,NO,2;4
long-000,Ann,human,CQ3,NO,3
long-000,Bo,human,CQ1,NO,
long-001,Ann,human,CQ1,YES,
`); err != nil {
		t.Fatal(err)
	}
	// A judge run's answers with turns.
	j, err := f.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "turn-judge", Provider: "openai", Model: "fake-judge"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	var labels []store.JudgeLabel
	for _, k := range slices.Sorted(maps.Keys(fullAnswers)) {
		l := store.JudgeLabel{Key: k, Value: fullAnswers[k], Method: "structured", PromptHash: "ph"}
		if k == "CQ1" {
			l.Value, l.Evidence = "NO", []int{2}
		}
		labels = append(labels, l)
	}
	long0 := f.itemID(t, "long-000")
	if _, _, err := f.db.WriteJudgeAnswers(ctx, run, long0, labels, 10); err != nil {
		t.Fatal(err)
	}

	// The judge's answer set holds its turns, copied from its labels.
	var judgeSet string
	if err := f.db.Pool().QueryRow(ctx, `SELECT coalesce((evidence -> 'CQ1')::text, 'none') FROM answer_sets WHERE item_id = $1 AND rater_id = $2`, long0, run.RaterID).Scan(&judgeSet); err != nil {
		t.Fatal(err)
	}
	if judgeSet != `[2]` {
		t.Errorf("the judge's answer set's evidence = %s, want CQ1 [2]", judgeSet)
	}

	raters, err := f.db.ListProjectRaters(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := map[string]int64{}
	for _, r := range raters {
		id[r.Name] = r.ID
	}
	got, err := f.db.ListEvidence(ctx, f.project.ID, store.AgreementFilter{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		item, rater int64
		evidence    string
		cq1         string
	}
	var list []seen
	for _, s := range got {
		b, _ := json.Marshal(s.Evidence)
		list = append(list, seen{s.ItemID, s.RaterID, string(b), s.Answers["CQ1"]})
	}
	want := []seen{
		{asg.ItemID, id[u.Email], `{"CQ1":[1]}`, "NO"},
		{long0, id["Ann"], `{"CQ1":[2,4],"CQ3":[3]}`, "NO"},
		{long0, run.RaterID, `{"CQ1":[2]}`, "NO"},
	}
	slices.SortFunc(want, func(a, b seen) int {
		if a.item != b.item {
			return int(a.item - b.item)
		}
		return int(a.rater - b.rater)
	})
	if !slices.Equal(list, want) {
		t.Fatalf("evidence read:\n got  %+v\n want %+v (raters %v)", list, want, id)
	}
	// Only the raters asked for.
	got, err = f.db.ListEvidence(ctx, f.project.ID, store.AgreementFilter{RaterIDs: []int64{run.RaterID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].RaterID != run.RaterID {
		t.Errorf("the judge alone: %+v", got)
	}

	// The dataset export gives each rating its set's turns.
	var out bytes.Buffer
	if _, err := export.WriteRecords(ctx, f.db, &out, f.project.ID, export.JSONL, export.RecordOptions{Which: export.WhichLabels}); err != nil {
		t.Fatal(err)
	}
	exported := map[string]string{}
	for _, line := range jsonLines(t, out.Bytes()) {
		for _, r := range line["ratings"].([]any) {
			r := r.(map[string]any)
			// Every rubric item is written, the unmarked ones as [].
			marked := map[string]any{}
			for k, v := range r["evidence"].(map[string]any) {
				if len(v.([]any)) > 0 {
					marked[k] = v
				}
			}
			b, _ := json.Marshal(marked)
			exported[fmt.Sprint(line["id"], " ", r["rater"])] = string(b)
		}
	}
	for key, want := range map[string]string{
		"long-000 Ann": `{"CQ1":[2,4],"CQ3":[3]}`, "long-000 turn-judge": `{"CQ1":[2]}`, "long-000 Bo": `{}`, "long-001 Ann": `{}`,
	} {
		if exported[key] != want {
			t.Errorf("exported turns of %s = %s, want %s (all: %v)", key, exported[key], want, exported)
		}
	}
}

// TestDraftKeepsTurns: a draft keeps the turns typed so far, unfinished
// ones too, and a later save replaces them (one without turns clears
// them).
func TestDraftKeepsTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	read := func() map[string]string {
		t.Helper()
		w, err := f.db.FindWorkspace(ctx, f.project.ID, a.ItemID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.Draft == nil {
			t.Fatal("no draft")
		}
		return w.Draft.Evidence
	}
	for _, turns := range []map[string]string{{"CQ1": "2, 5", "CQ3": "1,"}, {"CQ3": "3"}, nil} {
		if ok, err := f.db.SaveDraft(ctx, f.project.ID, a.ItemID, u.ID, store.Draft{Answers: map[string]string{"CQ1": "NO", "CQ3": "NO"},
			Evidence: turns, ActiveMS: 100}); err != nil || !ok {
			t.Fatalf("save draft = %v, %v", ok, err)
		}
		want := turns
		if want == nil {
			want = map[string]string{}
		}
		if got := read(); !maps.Equal(got, want) {
			t.Errorf("draft's turns = %v, want %v", got, want)
		}
	}
}
