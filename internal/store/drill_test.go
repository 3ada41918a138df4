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
		page, err := f.db.DrillItems(ctx, f.project.ID, flt)
		if err != nil {
			t.Fatalf("%+v: %v", flt, err)
		}
		var out []string
		for _, it := range page.Items {
			out = append(out, it.SourceID)
		}
		return out, page.Next > 0, page.Items
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
		// The people's median: 1 (the lower of 1 and 3), 4, 5; the judge's
		// ERROR on item-003 is never compared.
		{"judge against the people's median", store.DrillFilter{Key: "emotion", A: id["j"], Consensus: true, Median: true}, []string{"item-000", "item-001"}},
		{"judge against the median, one cell", store.DrillFilter{Key: "emotion", A: id["j"], Consensus: true, Median: true, ValueA: "3", ValueB: "1"}, []string{"item-000"}},
		// The answer most gave: none on item-000, where 1 and 3 tie.
		{"judge against the people's majority", store.DrillFilter{Key: "emotion", A: id["j"], Consensus: true}, []string{"item-001"}},
		// Ann's others are Bo alone: no consensus of two.
		{"a person against the others' consensus", store.DrillFilter{Key: "emotion", A: id["Ann"], Consensus: true, Median: true}, nil},
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
	if page, err := f.db.DrillItems(ctx, g.ID, store.DrillFilter{Key: "emotion", A: id["j"]}); err != nil || len(page.Items) != 0 || page.Next != 0 {
		t.Fatalf("other project: %+v %v", page, err)
	}
}

// NA left out, the experiment's frozen items, the people's majority on a
// nominal item and the bounded window a page looks through.
func TestDrillItemsScopeAndWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 6, annotators: 1})
	// CQ1:   item-000 item-001 item-002 item-003 item-004 item-005
	// Ann    YES      NA       YES      NO       YES      YES
	// Bo     YES      NA       NO       NO       NA       NO
	// Cy     NO       YES      NO       ·        YES      ·
	// j      YES      YES      YES      YES      NA       NO
	// gold   YES      NA       ·        NO       YES      ·
	// The frozen items have gold and two people: 000, 001, 003, 004.
	table := map[string][]string{
		"Ann": {"YES", "NA", "YES", "NO", "YES", "YES"},
		"Bo":  {"YES", "NA", "NO", "NO", "NA", "NO"},
		"Cy":  {"NO", "YES", "NO", "", "YES", ""},
		"j":   {"YES", "YES", "YES", "YES", "NA", "NO"},
	}
	var csv strings.Builder
	csv.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for _, name := range []string{"Ann", "Bo", "Cy", "j"} {
		kind := "human"
		if name == "j" {
			kind = "judge"
		}
		for i, v := range table[name] {
			if v != "" {
				fmt.Fprintf(&csv, "item-%03d,%s,%s,CQ1,%s,\n", i, name, kind, v)
			}
		}
	}
	if _, err := f.importLabelsCSV(t, csv.String()); err != nil {
		t.Fatalf("import: %v", err)
	}
	if _, err := f.db.Pool().Exec(ctx, `INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		SELECT id, $2, 'CQ1', CASE source_id WHEN 'item-000' THEN 'YES' WHEN 'item-001' THEN 'NA' WHEN 'item-003' THEN 'NO' ELSE 'YES' END, 'automatic'
		FROM items WHERE project_id = $1 AND source_id IN ('item-000', 'item-001', 'item-003', 'item-004')`, f.project.ID, f.project.RubricVersionID); err != nil {
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
	j := id["j"]
	list := func(flt store.DrillFilter) (sources []string, ids []int64, next int64) {
		t.Helper()
		page, err := f.db.DrillItems(ctx, f.project.ID, flt)
		if err != nil {
			t.Fatalf("%+v: %v", flt, err)
		}
		for _, it := range page.Items {
			sources = append(sources, it.SourceID)
			ids = append(ids, it.ItemID)
		}
		return sources, ids, page.Next
	}
	items := func(ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, fmt.Sprintf("item-%03d", n))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		flt  store.DrillFilter
		want []string
	}{
		{"judge against the people", store.DrillFilter{Key: "CQ1", A: j}, items(0, 1, 2, 3, 4, 5)},
		{"NA missing", store.DrillFilter{Key: "CQ1", A: j, NAMissing: true}, items(0, 2, 3, 5)},
		{"the frozen items", store.DrillFilter{Key: "CQ1", A: j, Frozen: true}, items(0, 1, 3, 4)},
		{"against the gold", store.DrillFilter{Key: "CQ1", A: j, Gold: true}, items(1, 3, 4)},
		{"against the gold, NA missing", store.DrillFilter{Key: "CQ1", A: j, Gold: true, NAMissing: true}, items(3)},
		// The answer most people gave: NA on 001 (NA is an answer), none
		// on 005 where YES and NO tie.
		{"the people's majority", store.DrillFilter{Key: "CQ1", A: j, Consensus: true}, items(1, 2, 3, 4)},
		{"the majority, NA missing", store.DrillFilter{Key: "CQ1", A: j, Consensus: true, NAMissing: true}, items(2, 3)},
		{"the majority on the frozen items", store.DrillFilter{Key: "CQ1", A: j, Consensus: true, Frozen: true}, items(1, 3, 4)},
		{"the majority, one cell", store.DrillFilter{Key: "CQ1", A: j, Consensus: true, ValueA: "YES", ValueB: "NA"}, items(1)},
		{"two people, frozen", store.DrillFilter{Key: "CQ1", A: id["Ann"], B: id["Cy"], Frozen: true}, items(0, 1)},
	} {
		if got, _, next := list(tc.flt); !slices.Equal(got, tc.want) || next != 0 {
			t.Errorf("%s: %v (next %d), want %v", tc.name, got, next, tc.want)
		}
	}

	// A page looks through Scan items: three windows of two, the last
	// saying nothing follows.
	var all []string
	var after int64
	for page := 1; ; page++ {
		got, ids, next := list(store.DrillFilter{Key: "CQ1", A: j, Scan: 2, After: after})
		all = append(all, got...)
		if len(got) != 2 {
			t.Fatalf("page %d: %v", page, got)
		}
		if next == 0 {
			if page != 3 {
				t.Fatalf("the list ended on page %d, want 3", page)
			}
			break
		}
		if next != ids[1] {
			t.Fatalf("page %d goes on after %d, want %d", page, next, ids[1])
		}
		after = next
	}
	if want := items(0, 1, 2, 3, 4, 5); !slices.Equal(all, want) {
		t.Fatalf("the pages list %v, want %v", all, want)
	}
	// Within a page, windows grow: with Scan 4 the first looks at one item
	// (000, no match), the next at three (001 to 003).
	got, ids, next := list(store.DrillFilter{Key: "CQ1", A: j, Gold: true, Scan: 4})
	if !slices.Equal(got, items(1, 3)) || next != ids[1] {
		t.Fatalf("growing windows: %v, next %d", got, next)
	}
	if got, _, next = list(store.DrillFilter{Key: "CQ1", A: j, Gold: true, Scan: 4, After: next}); !slices.Equal(got, items(4)) || next != 0 {
		t.Fatalf("growing windows, the last page: %v, next %d", got, next)
	}
	// A window without a match still leads on: 001 and 002 hold none of
	// the gold's differences from the judge on 003.
	_, zero, _ := list(store.DrillFilter{Key: "CQ1", A: j, Scan: 1})
	got, _, next = list(store.DrillFilter{Key: "CQ1", A: j, Gold: true, Scan: 1, After: zero[0]})
	if len(got) != 1 || got[0] != "item-001" || next == 0 {
		t.Fatalf("after item-000: %v, next %d", got, next)
	}
	got, _, next = list(store.DrillFilter{Key: "CQ1", A: j, Gold: true, Scan: 1, After: next})
	if len(got) != 0 || next == 0 {
		t.Fatalf("item-002 alone: %v, next %d", got, next)
	}
	if got, _, _ = list(store.DrillFilter{Key: "CQ1", A: j, Gold: true, Scan: 1, After: next}); !slices.Equal(got, items(3)) {
		t.Fatalf("item-003 alone: %v", got)
	}
}
