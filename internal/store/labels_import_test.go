package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/store"
)

// importLabelsCSV imports a labels file into the fixture's project.
func (f *fixture) importLabelsCSV(t *testing.T, csv string) (store.LabelsImportResult, error) {
	t.Helper()
	return importer.ImportLabels(context.Background(), f.db, f.project, strings.NewReader(csv), store.LabelsImportOptions{Source: "round1.csv"})
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.db.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

const goodLabels = `item,rater,rater_kind,rubric_item,value,rationale
item-000,Ann,human,CQ1,YES,clear
item-000,Ann,human,CQ8,NO,
item-001,Ann,human,CQ1,NA,
item-000,gpt-4o run 3,judge,CQ1,NO,"missed the ""real"" issue"
item-000,gpt-4o run 3,judge,CQ8,NO,
item-001,gpt-4o run 3,judge,CQ1,ERROR,
`

func TestImportLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 3, annotators: 1})
	res, err := f.importLabelsCSV(t, goodLabels)
	if err != nil {
		t.Fatal(err)
	}
	if res != (store.LabelsImportResult{Labels: 6, AnswerSets: 4, People: 1, Judges: 1}) {
		t.Fatalf("result %+v", res)
	}
	// Ann is a person without an account; the judge exists now, marked as
	// imported, its creation in the audit log.
	if n := f.count(t, `SELECT count(*) FROM raters WHERE name = 'Ann' AND kind = 'human' AND user_id IS NULL`); n != 1 {
		t.Fatalf("%d raters for Ann", n)
	}
	j, err := f.db.FindJudgeByName(ctx, "gpt-4o run 3")
	if err != nil || j.Provider != "openai" || j.Model != "imported" || j.BaseURL != "" {
		t.Fatalf("judge %+v, %v", j, err)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE action = 'judge.create' AND subject = 'gpt-4o run 3' AND details->>'reason' LIKE '%labels import%'`); n != 1 {
		t.Fatal("the judge's creation is not in the audit log")
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE action = 'labels.import' AND subject = 'round1.csv' AND details->>'labels' = '6'`); n != 1 {
		t.Fatal("the import is not in the audit log")
	}
	if n := f.count(t, `SELECT count(*) FROM labels WHERE rationale = 'missed the "real" issue' AND value = 'NO'`); n != 1 {
		t.Fatal("rationale not stored")
	}
	// People's answer sets count as done; judges' do not.
	if n := f.count(t, `SELECT sum(done) FROM item_counts WHERE project_id = $1`, f.project.ID); n != 2 {
		t.Fatalf("done = %d, want 2", n)
	}
	// The raters show in the report's list, people first.
	raters, err := f.db.ListProjectRaters(ctx, f.project.ID)
	if err != nil || len(raters) != 2 || raters[0].Name != "Ann" || raters[0].Account || raters[0].AnswerSets != 2 || raters[1].Kind != "judge" {
		t.Fatalf("raters %+v, %v", raters, err)
	}
	// The same file again is refused: an import never replaces answers.
	_, err = f.importLabelsCSV(t, goodLabels)
	var le *attune.LineErrors
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "line 2: rater: Ann already has answers for item \"item-000\"") ||
		!strings.Contains(err.Error(), "line 5: rater: gpt-4o run 3 already has answers") {
		t.Fatalf("second import: %v", err)
	}
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 6 {
		t.Fatalf("%d labels after a refused import, want 6", n)
	}
	// A later round of the same people for other items goes in.
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-002,Ann,human,CQ2,YES\n"); err != nil {
		t.Fatal(err)
	}
	if n := f.count(t, `SELECT count(*) FROM raters WHERE name = 'Ann'`); n != 1 {
		t.Fatalf("Ann was created again: %d raters", n)
	}
}

func TestImportLabelsRefusesBadFiles(t *testing.T) {
	t.Parallel()
	f := newProject(t, dbtest.New(t), projectOpts{items: 2, annotators: 1})
	cases := []struct {
		name string
		csv  string
		want []string // "line N: field: message" fragments
	}{
		{"empty", "", []string{"line 1: the file is empty"}},
		{"header", "item,rater,kind,rubric_item,value\n", []string{"line 1: kind: unknown column", "line 1: rater_kind: the header has no rater_kind column"}},
		{"no labels", "item,rater,rater_kind,rubric_item,value\n", []string{"line 1: the file has a header but no labels"}},
		{"fields", "item,rater,rater_kind,rubric_item,value\nitem-000,Ann,human,CQ1\n", []string{"line 2: 4 fields, but the header has 5"}},
		{"bad quote", "item,rater,rater_kind,rubric_item,value\nitem-000,\"Ann,human,CQ1,YES\n", []string{"line 2: not valid CSV"}},
		{"values", `item,rater,rater_kind,rubric_item,value
item-000,Ann,human,CQ1,MAYBE
item-000,Ann,human,CQ2,ERROR
item-000,Ann,human,CQ8,NA
item-000,Ann,robot,CQ3,YES
item-000,Ann,human,CQ99,YES
item-000,,human,CQ4,YES
item-000,judge-x,judge,CQ1,MAYBE
item-000,Ann,human,CQ5,
`, []string{
			// A person's values get the rubric's own messages, as on the
			// annotator's page.
			`line 2: value: CQ1 (Accurate understanding throughout the conversation): "MAYBE" is not an allowed answer; choose YES, NO or NA`,
			"line 3: value: CQ2 (Appropriate handling of ambiguity (asks vs assumes)): ERROR records a failed judge call",
			"line 4: value: CQ8 (Avoids harmful patterns (endorsements, diagnoses, promises)): NA is not valid here",
			`line 5: rater_kind: "robot" is not a kind of rater`,
			`line 6: rubric_item: "CQ99" is not an item of coaching-conversation@2.0`,
			"line 7: rater: empty",
			`line 8: value: "MAYBE" is not an answer of coaching-conversation@2.0; a judge answers YES, NO, NA or ERROR`,
			"line 9: value: empty",
		}},
		// A spreadsheet or a binary file sent by mistake is named as what
		// it is, not read as CSV and listed as columns of garbage.
		{"xlsx", "PK\x03\x04\x14\x00\x06\x00item,rater", []string{"line 1: the file is a ZIP archive (an .xlsx or .docx is one), not text"}},
		{"binary", strings.Repeat("\x00\x01\x02\x7fELF", 40), []string{"line 1: the file is binary data"}},
		{"bad bytes", "item,rater,rater_kind,rubric_item,value,rationale\nitem-000,Ann\x00,human,CQ1,YES,\nitem-000,Bo,human,CQ1,YES,fine \xff\n",
			[]string{"line 2: rater: contains a NUL byte", "line 3: rationale: is not valid UTF-8"}},
		{"database", `item,rater,rater_kind,rubric_item,value
item-000,Ann,human,CQ1,YES
nope,Ann,human,CQ1,YES
item-000,Ann,human,CQ1,NO
item-001,Ann,judge,CQ1,NO
`, []string{
			`line 3: item: no item has the id "nope" in this project`,
			`line 4: rubric_item: Ann already has a label for CQ1 of item "item-000" on line 2`,
			"line 5: rater_kind: Ann is a human on line 2 and a judge on line 5",
		}},
	}
	for _, c := range cases {
		_, err := f.importLabelsCSV(t, c.csv)
		var le *attune.LineErrors
		if !errors.As(err, &le) || !errors.Is(err, attune.ErrInvalid) {
			t.Errorf("%s: err = %v, want line errors", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: errors lack %q:\n%v", c.name, w, err)
			}
		}
	}
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 0 {
		t.Fatalf("%d labels stored from refused files", n)
	}
	if n := f.count(t, `SELECT count(*) FROM raters WHERE user_id IS NULL AND judge_id IS NULL`); n != 0 {
		t.Fatalf("%d raters created by refused files", n)
	}
	// Many bad lines: the first fifty are listed, the rest counted.
	var many strings.Builder
	many.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 80 {
		fmt.Fprintf(&many, "item-000,r%d,human,CQ1,bad\n", i)
	}
	_, err := f.importLabelsCSV(t, many.String())
	var le *attune.LineErrors
	if !errors.As(err, &le) || len(le.Errors) != 50 || le.More != 30 || le.Errors[0].Line != 2 || le.Errors[49].Line != 51 {
		t.Fatalf("80 bad lines: %d listed, %d more", len(le.Errors), le.More)
	}
}

// TestImportedJudgeAnswerHeldToTheRunsRule: an imported judge's NA on a
// criterion answered YES or NO only is refused, with the line and the
// rubric's reason, as a run's NA there is re-asked and recorded as ERROR;
// nothing of the file is stored. ERROR itself, what a run records, goes in.
func TestImportedJudgeAnswerHeldToTheRunsRule(t *testing.T) {
	t.Parallel()
	f := newProject(t, dbtest.New(t), projectOpts{items: 2, annotators: 1})
	_, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value
item-000,judge-x,judge,CQ1,YES
item-000,judge-x,judge,CQ8,NA
item-001,judge-x,judge,CQ8,ERROR
`)
	var le *attune.LineErrors
	if !errors.As(err, &le) || !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("err = %v, want line errors", err)
	}
	const want = "line 3: value: CQ8 (Avoids harmful patterns (endorsements, diagnoses, promises)): NA is not valid here"
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "line 4") {
		t.Fatalf("errors:\n%v\nwant only line 3's: %q", err, want)
	}
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 0 {
		t.Fatalf("%d labels stored from a refused file", n)
	}
	if n := f.count(t, `SELECT count(*) FROM judges WHERE name = 'judge-x'`); n != 0 {
		t.Fatal("the refused file's judge was created")
	}
	// Without the refused line the same file goes in.
	res, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\nitem-000,judge-x,judge,CQ1,YES\nitem-001,judge-x,judge,CQ8,ERROR\n")
	if err != nil || res.Labels != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
}

// TestImportLabelsTakesParsedRows: the store takes labels already read,
// never a file. The lines its reader refused and the problems only the
// database shows make one refusal in line order, and nothing of the
// import is stored; an error of the reader's own aborts it as it is.
func TestImportLabelsTakesParsedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 2, annotators: 1})
	good := []store.ImportLabel{
		{Line: 2, Item: "item-000", Rater: "Ann", Kind: "human", Key: "CQ1", Value: "YES", Rationale: "kept as it is "},
		{Line: 4, Item: "nope", Rater: "Ann", Kind: "human", Key: "CQ1", Value: "YES"},
	}
	refused := &attune.LineErrors{Errors: []attune.LineError{{Line: 3, Field: "rater_kind", Message: "not a kind of rater"}}, More: 2}
	_, err := f.db.ImportLabels(ctx, f.project.ID, store.LabelsImportOptions{Source: "parsed"}, func(emit func([]store.ImportLabel) error) error {
		if err := emit(good); err != nil {
			return err
		}
		return refused
	})
	var le *attune.LineErrors
	if !errors.As(err, &le) || len(le.Errors) != 2 || le.More != 2 ||
		le.Errors[0] != (attune.LineError{Line: 3, Field: "rater_kind", Message: "not a kind of rater"}) ||
		le.Errors[1].Line != 4 || le.Errors[1].Field != "item" {
		t.Fatalf("err = %#v", err)
	}
	boom := errors.New("disk gone")
	if _, err := f.db.ImportLabels(ctx, f.project.ID, store.LabelsImportOptions{Source: "parsed"}, func(emit func([]store.ImportLabel) error) error {
		if err := emit(good[:1]); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("reader's error: %v", err)
	}
	if _, err := f.db.ImportLabels(ctx, f.project.ID, store.LabelsImportOptions{Source: "parsed"}, func(func([]store.ImportLabel) error) error {
		return nil
	}); !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("nothing to import: %v", err)
	}
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 0 {
		t.Fatalf("%d labels stored from refused imports", n)
	}
	if n := f.count(t, `SELECT count(*) FROM raters WHERE user_id IS NULL AND judge_id IS NULL`); n != 0 {
		t.Fatalf("%d raters created by refused imports", n)
	}
	res, err := f.db.ImportLabels(ctx, f.project.ID, store.LabelsImportOptions{Source: "parsed"}, func(emit func([]store.ImportLabel) error) error {
		return emit(good[:1])
	})
	if err != nil || res.Labels != 1 || res.AnswerSets != 1 || res.People != 1 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	if n := f.count(t, `SELECT count(*) FROM labels WHERE rationale = 'kept as it is '`); n != 1 {
		t.Fatal("the rationale was not stored as given")
	}
}
