package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// TestEstimateRubricItemsIsEveryKeyAtOnce reads CQ1, CQ2 and CQ9 for
// judge j1 at once and key by key, against the people and against the
// gold, and wants the same rows both ways. j1 is two raters (an imported
// judge's rater renamed j1 counts as j1), so its value is their mean:
//
//	item-000 (v1): CQ1 Ann YES, Bob NO, j1 YES and NO, gold YES; CQ2 Ann NA, j1 YES and ERROR
//	item-001 (v1): CQ1 j1 NA (no judge value); CQ2 Ann YES, j1 NO, gold NO
//	item-002 (v2): people and another judge only, which j1 skipped
//	item-003 (no system): CQ1 j1 YES and ERROR, Bob NA, gold NA; CQ2 the other judge only
//
// Nobody answered CQ9.
func TestEstimateRubricItemsIsEveryKeyAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 4, annotators: 1})
	for id, meta := range map[string]string{"item-000": `{"system":"v1"}`, "item-001": `{"system":"v1"}`, "item-002": `{"system":"v2"}`} {
		if _, err := f.db.Pool().Exec(ctx, `UPDATE items SET meta = $3::jsonb WHERE project_id = $1 AND source_id = $2`, f.project.ID, id, meta); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value
item-000,Ann,human,CQ1,YES
item-000,Bob,human,CQ1,NO
item-000,j1,judge,CQ1,YES
item-000,j1b,judge,CQ1,NO
item-000,Ann,human,CQ2,NA
item-000,j1,judge,CQ2,YES
item-000,j1b,judge,CQ2,ERROR
item-001,j1,judge,CQ1,NA
item-001,Ann,human,CQ2,YES
item-001,j1,judge,CQ2,NO
item-002,Ann,human,CQ1,YES
item-002,Ann,human,CQ2,NO
item-002,j2,judge,CQ1,NO
item-003,j1b,judge,CQ1,YES
item-003,j1,judge,CQ1,ERROR
item-003,Bob,human,CQ1,NA
item-003,j2,judge,CQ2,YES
`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE raters SET name = 'j1' WHERE kind = 'judge' AND name = 'j1b'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool().Exec(ctx, `
		INSERT INTO gold_labels (item_id, project_id, rubric_version_id, rubric_item_key, value, method)
		SELECT i.id, i.project_id, $2, g.key, g.value, 'automatic'
		FROM items i JOIN (VALUES ('item-000', 'CQ1', 'YES'), ('item-001', 'CQ2', 'NO'), ('item-003', 'CQ1', 'NA')) g (source, key, value) ON g.source = i.source_id
		WHERE i.project_id = $1`, f.project.ID, f.project.RubricVersionID); err != nil {
		t.Fatal(err)
	}
	show := func(rows []store.EstimateRow) string {
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%d %q %v %v %v", r.ItemID, r.System, r.Judge, r.Human, r.Labelled))
		}
		return strings.Join(out, "\n")
	}
	id0, id1, id3 := f.itemID(t, "item-000"), f.itemID(t, "item-001"), f.itemID(t, "item-003")
	keys := []string{"CQ1", "CQ2", "CQ9"}
	for _, c := range []struct {
		gold bool
		want map[string][]string
	}{
		{false, map[string][]string{
			"CQ1": {fmt.Sprintf(`%d "v1" 0.5 0.5 true`, id0), fmt.Sprintf(`%d "" 1 0 false`, id3)},
			"CQ2": {fmt.Sprintf(`%d "v1" 1 0 false`, id0), fmt.Sprintf(`%d "v1" 0 1 true`, id1)},
		}},
		{true, map[string][]string{
			"CQ1": {fmt.Sprintf(`%d "v1" 0.5 1 true`, id0), fmt.Sprintf(`%d "" 1 0 false`, id3)},
			"CQ2": {fmt.Sprintf(`%d "v1" 1 0 false`, id0), fmt.Sprintf(`%d "v1" 0 0 true`, id1)},
		}},
	} {
		q := store.EstimateRead{ProjectID: f.project.ID, Judge: "j1", SystemKey: "system", Gold: c.gold}
		all, err := f.db.EstimateRubricItems(ctx, q, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(keys) {
			t.Errorf("gold %v: %d keys read, want %d", c.gold, len(all), len(keys))
		}
		for _, k := range keys {
			one := q
			one.RubricItem = k
			alone, err := f.db.EstimateRubricItem(ctx, one)
			if err != nil {
				t.Fatal(err)
			}
			rows, ok := all[k]
			if !ok || rows == nil || show(rows) != show(alone) {
				t.Errorf("gold %v, %s at once (present %v):\n%s\nalone:\n%s", c.gold, k, ok, show(rows), show(alone))
			}
			if want := strings.Join(c.want[k], "\n"); show(rows) != want {
				t.Errorf("gold %v, %s:\n%s\nwant:\n%s", c.gold, k, show(rows), want)
			}
		}
	}

	if _, err := f.db.EstimateRubricItems(ctx, store.EstimateRead{ProjectID: f.project.ID, Judge: "Ann", SystemKey: "system"}, keys); !errors.Is(err, attune.ErrNotFound) || !strings.Contains(err.Error(), `"Ann"`) {
		t.Errorf("a person as the judge: %v, want not found naming Ann", err)
	}
}

// TestParseAnswers: the estimates' own reading of an answer set's JSON
// gives what encoding/json gives, on the objects PostgreSQL and the
// submit write, on escapes it leaves to encoding/json, and refuses what
// is not an object of strings.
func TestParseAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		bad      bool
	}{
		{name: "empty", in: `{}`},
		{name: "as json_object_agg writes it", in: `{ "CQ1" : "YES", "CQ2" : "NO", "safety" : "4" }`},
		{name: "compact", in: `{"CQ1":"YES","CQ2":"NA"}`},
		{name: "escapes", in: `{"CQ\"1":"Y\u0045S","CQ2":"a\\b"}`},
		{name: "spaces around", in: " \n{\t\"a\" :\r\"b\" } "},
		{name: "not strings", in: `{"CQ1":5}`, bad: true},
		{name: "not an object", in: `["YES"]`, bad: true},
		{name: "cut short", in: `{"CQ1":"YES"`, bad: true},
		{name: "trailing", in: `{"CQ1":"YES"} x`, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := store.ParseAnswers([]byte(c.in))
			if c.bad {
				if err == nil {
					t.Fatalf("%s: read as %v, want an error", c.in, got)
				}
				return
			}
			var want map[string]string
			if err := json.Unmarshal([]byte(c.in), &want); err != nil {
				t.Fatal(err)
			}
			if err != nil || !maps.Equal(got, want) {
				t.Fatalf("%s: %v, %v; want %v", c.in, got, err, want)
			}
		})
	}
}
