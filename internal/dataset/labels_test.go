package dataset_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

func readLabels(t *testing.T, file string) ([]dataset.Label, error) {
	t.Helper()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	var got []dataset.Label
	err = dataset.ReadLabels(strings.NewReader(file), def, func(batch []dataset.Label) error {
		got = append(got, batch...)
		return nil
	})
	return got, err
}

// TestReadLabels: a labels file's columns come in any order, rationale is
// optional, fields are trimmed but the rationale is kept as written, and
// each label carries the line its record starts on.
func TestReadLabels(t *testing.T) {
	got, err := readLabels(t, "\ufeffRater_Kind, value ,item,rater,rubric_item,rationale\n"+
		"human,YES,item-000,Ann,CQ1,\" two\nlines \"\n"+
		" judge , ERROR ,item-001, judge-x ,CQ8,\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []dataset.Label{
		{Line: 2, Item: "item-000", Rater: "Ann", Kind: "human", Key: "CQ1", Value: "YES", Rationale: " two\nlines "},
		{Line: 4, Item: "item-001", Rater: "judge-x", Kind: "judge", Key: "CQ8", Value: "ERROR"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("labels = %+v\nwant %+v", got, want)
	}
}

// TestReadLabelsRefusesBadLines: a bad line is named with its field, and
// the good lines after it are still handed on, for the store to check
// further before it refuses the whole file.
func TestReadLabelsRefusesBadLines(t *testing.T) {
	got, err := readLabels(t, "item,rater,rater_kind,rubric_item,value\n"+
		"item-000,Ann,robot,CQ1,YES\n"+
		"item-000,judge-x,judge,CQ1,MAYBE\n"+
		"item-000,Ann,human,CQ2,NA\n")
	var de *dataset.Errors
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want *dataset.Errors", err)
	}
	want := []dataset.LineError{
		{Line: 2, Field: "rater_kind", Message: `"robot" is not a kind of rater; use human or judge`},
		{Line: 3, Field: "value", Message: `"MAYBE" is not an answer of coaching-conversation@2.0; a judge answers YES, NO, NA or ERROR`},
	}
	if !reflect.DeepEqual(de.List, want) || de.Cut != 0 {
		t.Fatalf("errors = %+v (cut %d)\nwant %+v", de.List, de.Cut, want)
	}
	if len(got) != 1 || got[0].Line != 4 {
		t.Fatalf("good lines handed on = %+v, want line 4", got)
	}

	// The file as a whole: nothing but a header, a header missing a
	// column, a spreadsheet.
	for file, msg := range map[string]string{
		"item,rater,rater_kind,rubric_item,value\n": "line 1: the file has a header but no labels",
		"item,rater,rubric_item,value\n":            "line 1: rater_kind: the header has no rater_kind column",
		"PK\x03\x04\x14\x00\x06\x00item,rater":      "line 1: the file is a ZIP archive",
	} {
		if _, err := readLabels(t, file); err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("%q: err = %v, want %q", file, err, msg)
		}
	}

	// Many bad lines: the first fifty by line, the rest counted.
	var many strings.Builder
	many.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 300 {
		fmt.Fprintf(&many, "item-000,r%d,human,CQ99,YES\n", i)
	}
	_, err = readLabels(t, many.String())
	if !errors.As(err, &de) || len(de.List) != dataset.MaxLabelErrors || de.Cut != 250 || de.List[0].Line != 2 || de.List[49].Line != 51 {
		t.Fatalf("300 bad lines: %v", err)
	}
}
