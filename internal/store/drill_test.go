package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// The drill-down keeps the items of one confusion cell, of a pair's
// disagreement, of a judge against the people or the gold, or of one
// boundary, a bounded page at a time.
func TestDrillItemsCellFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", items: 5, annotators: 1})
	// emotion:   item-000   item-001   item-002   item-003
	// Ann        1          4          5          2
	// Bo         3          4          5          3
	// j (judge)  3          2          5          ERROR
	// gold       3          4
	res, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value,rationale
item-000,Ann,human,emotion,1,ignores the fear
item-000,Bo,human,emotion,3,
item-000,j,judge,emotion,3,generic
item-001,Ann,human,emotion,4,
item-001,Bo,human,emotion,4,
item-001,j,judge,emotion,2,
item-002,Ann,human,emotion,5,
item-002,Bo,human,emotion,5,
item-002,j,judge,emotion,5,
item-003,Ann,human,emotion,2,
item-003,Bo,human,emotion,3,
item-003,j,judge,emotion,ERROR,
item-004,Ann,human,validation,1,
item-004,Bo,human,validation,5,
`)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Labels != 14 {
		t.Fatalf("imported %+v", res)
	}
	if _, err := f.db.Pool().Exec(ctx, `INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		SELECT id, $2, 'emotion', CASE source_id WHEN 'item-000' THEN '3' ELSE '4' END, 'automatic'
		FROM items WHERE project_id = $1 AND source_id IN ('item-000', 'item-001')`, f.project.ID, f.project.RubricVersionID); err != nil {
		t.Fatal(err)
	}
	raters, err := f.db.ListProjectRaters(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := map[string]int64{}
	for _, r := range raters {
		id[r.Name] = r.ID
	}
	list := func(flt store.DrillFilter) ([]string, bool, []store.DrillItem) {
		t.Helper()
		items, more, err := f.db.DrillItems(ctx, f.project.ID, flt)
		if err != nil {
			t.Fatalf("%+v: %v", flt, err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.SourceID)
		}
		return out, more, items
	}
	for _, tc := range []struct {
		name string
		flt  store.DrillFilter
		want []string
	}{
		{"judge against the people", store.DrillFilter{Key: "emotion", A: id["j"]}, []string{"item-000", "item-001"}},
		{"judge 2, people 4", store.DrillFilter{Key: "emotion", A: id["j"], ValueA: "2", ValueB: "4"}, []string{"item-001"}},
		{"judge said 3, differing", store.DrillFilter{Key: "emotion", A: id["j"], ValueA: "3"}, []string{"item-000"}},
		{"the diagonal: both said 3", store.DrillFilter{Key: "emotion", A: id["j"], ValueA: "3", ValueB: "3"}, []string{"item-000"}},
		{"the diagonal: both said 5", store.DrillFilter{Key: "emotion", A: id["j"], B: id["Ann"], ValueA: "5", ValueB: "5"}, []string{"item-002"}},
		{"an empty cell", store.DrillFilter{Key: "emotion", A: id["j"], ValueA: "1", ValueB: "5"}, nil},
		{"judge against the gold", store.DrillFilter{Key: "emotion", A: id["j"], Gold: true}, []string{"item-001"}},
		{"a person against the gold", store.DrillFilter{Key: "emotion", A: id["Ann"], Gold: true}, []string{"item-000"}},
		{"two people", store.DrillFilter{Key: "emotion", A: id["Ann"], B: id["Bo"]}, []string{"item-000", "item-003"}},
		{"two people, one cell", store.DrillFilter{Key: "emotion", A: id["Bo"], B: id["Ann"], ValueA: "3", ValueB: "2"}, []string{"item-003"}},
		{"people among themselves", store.DrillFilter{Key: "emotion"}, []string{"item-000", "item-003"}},
		{"people across 1|2", store.DrillFilter{Key: "emotion", Boundary: 1}, []string{"item-000"}},
		{"people across 2|3", store.DrillFilter{Key: "emotion", Boundary: 2}, []string{"item-000", "item-003"}},
		{"people across 4|5", store.DrillFilter{Key: "emotion", Boundary: 4}, nil},
		{"judge across 3|4", store.DrillFilter{Key: "emotion", A: id["j"], Boundary: 3}, []string{"item-001"}},
		{"judge across 2|3", store.DrillFilter{Key: "emotion", A: id["j"], Boundary: 2}, []string{"item-000", "item-001"}},
		{"ERROR is never compared", store.DrillFilter{Key: "emotion", A: id["j"], B: id["Bo"], ValueA: "ERROR", ValueB: "3"}, nil},
		{"another rubric item", store.DrillFilter{Key: "validation"}, []string{"item-004"}},
	} {
		if got, _, _ := list(tc.flt); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// Pages by item id.
	first, more, items := list(store.DrillFilter{Key: "emotion", Limit: 1})
	if !slices.Equal(first, []string{"item-000"}) || !more {
		t.Fatalf("first page %v, more %v", first, more)
	}
	next, more, _ := list(store.DrillFilter{Key: "emotion", Limit: 1, After: items[0].ItemID})
	if !slices.Equal(next, []string{"item-003"}) || more {
		t.Fatalf("second page %v, more %v", next, more)
	}

	// Each item comes with its dialogue, every label and the gold value.
	it := items[0]
	if len(it.Messages) == 0 || it.Gold != "3" || it.GoldMethod != "automatic" || len(it.Labels) != 3 {
		t.Fatalf("item-000: %+v", it)
	}
	l := it.Labels
	if l[0].Name != "Ann" || l[0].Value != "1" || l[0].Rationale != "ignores the fear" || !l[0].Imported || l[0].Kind != "human" ||
		l[1].Name != "Bo" || l[2].Name != "j" || l[2].Kind != "judge" || l[2].Value != "3" || l[2].Rationale != "generic" {
		t.Fatalf("item-000 labels: %+v", l)
	}

	// Another project's labels never show.
	g, err := f.db.CreateProject(ctx, nil, store.NewProject{Name: "other", RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if items, _, err := f.db.DrillItems(ctx, g.ID, store.DrillFilter{Key: "emotion", A: id["j"]}); err != nil || len(items) != 0 {
		t.Fatalf("other project: %v %v", items, err)
	}
}
