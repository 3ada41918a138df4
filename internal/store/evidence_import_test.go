package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
)

// TestImportLabelsEvidence: a labels file's evidence column stores each
// failing answer's turns with its label; a file with one bad line of
// evidence (a turn past the dialogue's one turn, turns on a passing
// answer, a turn that is no number) is refused naming each line, and
// nothing of it is stored.
func TestImportLabelsEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 3, annotators: 1})
	bad := `item,rater,rater_kind,rubric_item,value,evidence
item-000,Ann,human,CQ8,NO,1
item-001,Ann,human,CQ8,NO,3
item-001,Ann,human,CQ1,YES,1
item-002,Ann,human,CQ8,NO,one
item-000,gpt-4o,judge,CQ8,YES,1
`
	_, err := f.importLabelsCSV(t, bad)
	var le *attune.LineErrors
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want line errors", err)
	}
	want := map[int]string{3: "turn 3 does not exist", 4: "goes only with NO", 5: `"one" is not a turn number`, 6: "goes only with NO"}
	for _, e := range le.Errors {
		if e.Field != "evidence" || !strings.Contains(e.Message, want[e.Line]) || want[e.Line] == "" {
			t.Errorf("line %d %s: %s", e.Line, e.Field, e.Message)
		}
		delete(want, e.Line)
	}
	if len(want) > 0 {
		t.Errorf("lines not named: %v (errors %+v)", want, le.Errors)
	}
	if n := f.count(t, `SELECT count(*) FROM labels WHERE project_id = $1`, f.project.ID); n != 0 {
		t.Fatalf("%d labels stored from a refused file", n)
	}

	good := `item,rater,rater_kind,rubric_item,value,evidence
item-000,Ann,human,CQ8,NO,1
item-000,Ann,human,CQ1,YES,
item-000,gpt-4o,judge,CQ8,NO, 1 
`
	if _, err := f.importLabelsCSV(t, good); err != nil {
		t.Fatal(err)
	}
	rows, err := f.db.Pool().Query(ctx, `SELECT r.name, l.rubric_item_key, l.evidence FROM labels l JOIN raters r ON r.id = l.rater_id
		WHERE l.project_id = $1 ORDER BY r.name, l.rubric_item_key`, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name, key string
		var turns []int
		if err := rows.Scan(&name, &key, &turns); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(name, " ", key, " ", turns))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Ann CQ1 []", "Ann CQ8 [1]", "gpt-4o CQ8 [1]"}; !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}
