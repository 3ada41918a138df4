package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestEstimateRubricItem reads CQ1 (YES/NO) for judge j1 on four items:
//
//	item-000 (v1): Ann YES, Bob NO → human 1/2; j1 YES → 1 (j2's NO is another judge)
//	item-001 (v1): Ann NA only → unlabelled; j1 NO → 0
//	item-002 (v2): Ann YES → 1; j1 YES → 1
//	item-003 (no system): j1 ERROR → no judge value, not read
func TestEstimateRubricItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 4, annotators: 1})
	for id, meta := range map[string]string{"item-000": `{"system":"v1"}`, "item-001": `{"system":"v1","arm":"x"}`, "item-002": `{"system":"v2"}`} {
		if _, err := f.db.Pool().Exec(ctx, `UPDATE items SET meta = $3::jsonb WHERE project_id = $1 AND source_id = $2`, f.project.ID, id, meta); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value
item-000,Ann,human,CQ1,YES
item-000,Bob,human,CQ1,NO
item-000,j1,judge,CQ1,YES
item-000,j2,judge,CQ1,NO
item-001,Ann,human,CQ1,NA
item-001,j1,judge,CQ1,NO
item-002,Ann,human,CQ1,YES
item-002,j1,judge,CQ1,YES
item-003,j1,judge,CQ1,ERROR
item-003,Ann,human,CQ1,YES
`); err != nil {
		t.Fatal(err)
	}
	rows, err := f.db.EstimateRubricItem(ctx, store.EstimateRead{ProjectID: f.project.ID, Judge: "j1", RubricItem: "CQ1", SystemKey: "system"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%q %v %v %v", r.System, r.Judge, r.Human, r.Labelled))
	}
	want := []string{`"v1" 1 0.5 true`, `"v1" 0 0 false`, `"v2" 1 1 true`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Another meta key: only item-001 names an arm.
	rows, err = f.db.EstimateRubricItem(ctx, store.EstimateRead{ProjectID: f.project.ID, Judge: "j1", RubricItem: "CQ1", SystemKey: "arm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].System != "" || rows[1].System != "x" {
		t.Errorf("rows by arm = %+v", rows)
	}

	// A rubric item nobody answered gives no rows, not an error.
	rows, err = f.db.EstimateRubricItem(ctx, store.EstimateRead{ProjectID: f.project.ID, Judge: "j1", RubricItem: "CQ9", SystemKey: "system"})
	if err != nil || len(rows) != 0 {
		t.Errorf("CQ9: %+v, %v; want no rows", rows, err)
	}

	if _, err := f.db.EstimateRubricItem(ctx, store.EstimateRead{ProjectID: f.project.ID, Judge: "Ann", RubricItem: "CQ1", SystemKey: "system"}); !errors.Is(err, attune.ErrNotFound) || !strings.Contains(err.Error(), `"Ann"`) {
		t.Errorf("a person as the judge: %v, want not found naming Ann", err)
	}
}
