package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// streamed collects a stream as "item rater key=value,…" lines.
func streamed(t *testing.T, db *store.DB, projectID int64, filter store.AgreementFilter) []string {
	t.Helper()
	var out []string
	var lastItem int64
	err := db.StreamAnswerSets(context.Background(), projectID, filter, func(a *store.AnswerSetLabels) error {
		if a.ItemID < lastItem {
			return fmt.Errorf("item %d after item %d: not in item order", a.ItemID, lastItem)
		}
		lastItem = a.ItemID
		var kv []string
		for _, l := range a.Labels {
			kv = append(kv, l.Key+"="+l.Value)
		}
		slices.Sort(kv)
		out = append(out, fmt.Sprintf("%d %d %s", a.ItemID, a.RaterID, strings.Join(kv, ",")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStreamAnswerSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 3, annotators: 2, overlap: 2})
	// Two annotators label everything through the workspace's path...
	for _, u := range f.annotators {
		for {
			a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			if err != nil {
				break
			}
			f.submit(t, a, u)
		}
	}
	// ...and a judge's labels come in from elsewhere, for one item.
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-001,j1,judge,CQ1,NO\nitem-001,j1,judge,CQ9,ERROR\n"); err != nil {
		t.Fatal(err)
	}
	raters, err := f.db.ListProjectRaters(ctx, f.project.ID)
	if err != nil || len(raters) != 3 || !raters[0].Account || raters[0].AnswerSets != 3 || raters[2].Name != "j1" || raters[2].AnswerSets != 1 {
		t.Fatalf("raters %+v, %v", raters, err)
	}
	all := streamed(t, f.db, f.project.ID, store.AgreementFilter{})
	if len(all) != 7 {
		t.Fatalf("%d answer sets streamed, want 7:\n%s", len(all), strings.Join(all, "\n"))
	}
	var full []string
	for k, v := range fullAnswers {
		full = append(full, k+"="+v)
	}
	slices.Sort(full)
	judge := 0
	for _, line := range all {
		switch {
		case strings.HasSuffix(line, " "+strings.Join(full, ",")):
		case strings.HasSuffix(line, " CQ1=NO,CQ9=ERROR") && strings.Contains(line, fmt.Sprintf(" %d ", raters[2].ID)):
			judge++
		default:
			t.Errorf("unexpected answer set %q", line)
		}
	}
	if judge != 1 {
		t.Fatalf("the judge's answer set streamed %d times", judge)
	}
	// Filters: raters, and the time labels were made.
	only := streamed(t, f.db, f.project.ID, store.AgreementFilter{RaterIDs: []int64{raters[2].ID}})
	if len(only) != 1 {
		t.Fatalf("judge only: %v", only)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE labels SET created_at = '2020-06-01' WHERE rater_id = $1`, raters[0].ID); err != nil {
		t.Fatal(err)
	}
	recent := streamed(t, f.db, f.project.ID, store.AgreementFilter{From: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)})
	old := streamed(t, f.db, f.project.ID, store.AgreementFilter{To: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)})
	if len(recent) != 4 || len(old) != 3 {
		t.Fatalf("recent %d, old %d answer sets; want 4 and 3", len(recent), len(old))
	}
	// Another project's labels never show.
	p2, err := f.db.CreateProject(ctx, nil, store.NewProject{Name: "other", RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := streamed(t, f.db, p2.ID, store.AgreementFilter{}); len(got) != 0 {
		t.Fatalf("a project without labels streamed %v", got)
	}
}
