package dataset

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// LabelsHeader is the header a labels file carries (rationale and evidence
// may be left out, and the columns may come in any order).
const LabelsHeader = "item,rater,rater_kind,rubric_item,value,rationale,evidence"

// labelsColumns are the columns of a labels file; rationale and evidence
// are optional.
var labelsColumns = []string{"item", "rater", "rater_kind", "rubric_item", "value", "rationale", "evidence"}

// MaxLabelErrors bounds the problems ReadLabels lists before it only
// counts them.
const MaxLabelErrors = 50

// labelsBatch is how many labels emit receives at most per call.
const labelsBatch = 2000

// Label is one line of a labels file, checked on its own: the fields
// trimmed (the rationale kept as it is), Kind human or judge, Key an item
// of the rubric, Value not empty and, for a judge, an answer of the rubric
// or ERROR. What needs the whole file or the project (a repeated label, an
// unknown item, a person's answer set as the rubric validates it) is the
// store's to check.
type Label struct {
	Line      int // the line the record starts on, counting from 1
	Item      string
	Rater     string
	Kind      string // human or judge
	Key       string
	Value     string
	Rationale string
	// Evidence is the turns (from 1) the line names where a failing
	// answer fails, in order; a number that is not a whole number is
	// refused here, the rest of the rule (rubric.Definition.ValidateEvidence)
	// needs the item and is the store's.
	Evidence []int
}

// ReadLabels reads a labels file — CSV in long form with the header
// LabelsHeader, one rater's answer on one rubric item of def per record —
// checks each line on its own and hands the good lines to emit in file
// order, in batches. emit must not keep the batch slice; an error from it
// stops the read and is returned as it is.
//
// It goes on past a bad line, so that one refusal names every problem, and
// keeps handing on the good lines after it (the caller checks those
// further and discards everything when ReadLabels returns an error). A
// file with problems returns *Errors: the first MaxLabelErrors by line and
// a count of the rest. A file that is not text, is empty, has a header
// without labels or a header naming an unknown, missing or repeated column
// is such a problem on line 1. An error reading r is returned as it is.
func ReadLabels(r io.Reader, def *rubric.Definition, emit func([]Label) error) error {
	problems := &labelProblems{}
	rows, err := readLabels(r, def, problems, emit)
	if err != nil {
		return err
	}
	if rows == 0 && !problems.any() {
		problems.add(1, "", "the file has a header but no labels")
	}
	if problems.any() {
		return problems.err()
	}
	return nil
}

// readLabels does ReadLabels' work and returns how many records it read,
// bad ones included.
func readLabels(r io.Reader, def *rubric.Definition, problems *labelProblems, emit func([]Label) error) (int, error) {
	br := bufio.NewReader(r)
	if start, _ := br.Peek(NotTextPeek); NotText(start) != "" {
		problems.add(1, "", "the file is %s, not text: labels are a CSV file whose first line is the header %s", NotText(start), LabelsHeader)
		return 0, nil
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		problems.add(1, "", "the file is empty; the first line must be the header %s", LabelsHeader)
		return 0, nil
	}
	if err != nil {
		return 0, csvLabelsProblem(err, problems)
	}
	header = slices.Clone(header) // the reader reuses its record
	col := map[string]int{}
	for i, h := range header {
		if p := attune.TextProblem(h); p != "" {
			problems.add(1, fmt.Sprintf("column %d", i+1), "the header %s", p)
			continue
		}
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		switch {
		case !slices.Contains(labelsColumns, h):
			problems.add(1, h, "unknown column; the header is %s", LabelsHeader)
		case col[h] != 0:
			problems.add(1, h, "the column is named twice")
		}
		col[h] = i + 1 // 0 means absent
	}
	for _, c := range labelsColumns[:5] {
		if col[c] == 0 {
			problems.add(1, c, "the header has no %s column; it must be %s", c, LabelsHeader)
		}
	}
	if problems.any() {
		return 0, nil
	}
	field := func(rec []string, name string) string {
		if i := col[name]; i > 0 && i <= len(rec) {
			return rec[i-1]
		}
		return ""
	}
	keys := make([]string, len(def.Items))
	for i, it := range def.Items {
		keys[i] = it.Key
	}
	batch := make([]Label, 0, labelsBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := emit(batch)
		batch = batch[:0]
		return err
	}
	n := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if err := csvLabelsProblem(err, problems); err != nil {
				return n, err
			}
			return n, flush()
		}
		line, _ := cr.FieldPos(0)
		n++
		if len(rec) != len(header) {
			problems.add(line, "", "%d fields, but the header has %d", len(rec), len(header))
			continue
		}
		textOK := true
		for _, c := range labelsColumns {
			if p := attune.TextProblem(field(rec, c)); p != "" {
				problems.add(line, c, "%s", p)
				textOK = false
			}
		}
		if !textOK {
			continue
		}
		item, rater := strings.TrimSpace(field(rec, "item")), strings.TrimSpace(field(rec, "rater"))
		kind, key := strings.TrimSpace(field(rec, "rater_kind")), strings.TrimSpace(field(rec, "rubric_item"))
		v := rubric.Value(strings.TrimSpace(field(rec, "value")))
		ok := true
		bad := func(f, format string, args ...any) {
			problems.add(line, f, format, args...)
			ok = false
		}
		if item == "" {
			bad("item", "empty; give the item's id in the dataset")
		}
		if rater == "" {
			bad("rater", "empty; give the rater's name")
		}
		if kind != "human" && kind != "judge" {
			bad("rater_kind", "%q is not a kind of rater; use human or judge", kind)
		}
		_, known := def.Item(key)
		if !known {
			bad("rubric_item", "%q is not an item of %s; its items are %s", key, def.Ref(), strings.Join(keys, ", "))
		}
		switch {
		case v == "":
			bad("value", "empty; an answer set may leave a rubric item out, but then it has no line for it")
		case !known || (kind != "human" && kind != "judge"):
		case kind == "judge" && !judgeMayAnswer(def, v):
			bad("value", "%q is not an answer of %s; a judge answers %s or ERROR", v, def.Ref(), answersList(def))
			// A person's values are judged with their whole answer set, by
			// the rubric's own validation, as an annotator's are; a
			// judge's answers of the scale with the item's facts, by the
			// rule a run's are held to. Both need the item, so the store
			// checks them.
		}
		turns, problem := ParseTurns(field(rec, "evidence"))
		if problem != "" {
			bad("evidence", "%s", problem)
		}
		if !ok {
			continue
		}
		batch = append(batch, Label{Line: line, Item: item, Rater: rater, Kind: kind, Key: key, Value: string(v),
			Rationale: field(rec, "rationale"), Evidence: turns})
		if len(batch) == labelsBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

// TurnsSeparator joins the turns of one answer's evidence in a CSV cell,
// in a labels file and in the exports: "2;5".
const TurnsSeparator = ";"

// ParseTurns reads a CSV cell of turn evidence: whole numbers joined by
// TurnsSeparator, spaces around them ignored; empty is no evidence. The
// turns come back sorted, repeats kept, so that the rule on evidence can
// name a turn given twice. problem names what is wrong, or is empty.
func ParseTurns(cell string) (turns []int, problem string) {
	cell = strings.TrimSpace(cell)
	if cell == "" {
		return nil, ""
	}
	for _, part := range strings.Split(cell, TurnsSeparator) {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a turn number; give the turns where the answer fails as whole numbers joined by %s, such as 2;5", part, TurnsSeparator)
		}
		turns = append(turns, n)
	}
	slices.Sort(turns)
	return turns, ""
}

// FormatTurns writes turn evidence as a CSV cell, the form ParseTurns
// reads: "2;5", empty for none.
func FormatTurns(turns []int) string {
	var b strings.Builder
	for i, t := range turns {
		if i > 0 {
			b.WriteString(TurnsSeparator)
		}
		b.WriteString(strconv.Itoa(t))
	}
	return b.String()
}

// csvLabelsProblem records a malformed CSV record as the file's problem;
// the reader cannot go on after one. Any other error is returned.
func csvLabelsProblem(err error, problems *labelProblems) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		problems.add(pe.StartLine, "", "not valid CSV: %v", pe.Err)
		return nil
	}
	return err
}

// judgeMayAnswer reports whether a judge's label may hold v: any answer of
// the rubric, or ERROR (what a judge run records).
func judgeMayAnswer(def *rubric.Definition, v rubric.Value) bool {
	if v == rubric.Error {
		return true
	}
	for _, a := range def.Answers {
		if a.Value == v {
			return true
		}
	}
	return false
}

func answersList(def *rubric.Definition) string {
	vs := make([]string, len(def.Answers))
	for i, a := range def.Answers {
		vs[i] = string(a.Value)
	}
	return strings.Join(vs, ", ")
}

// labelProblems collects a labels file's problems, keeping the first ones
// by line.
type labelProblems struct {
	list []LineError
	more int
}

func (p *labelProblems) add(line int, field, format string, args ...any) {
	p.list = append(p.list, LineError{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
	// Keep the earliest lines: sort and cut now and then, so that a file
	// of many bad lines costs little memory.
	if len(p.list) >= 4*MaxLabelErrors {
		p.trim()
	}
}

func (p *labelProblems) trim() {
	slices.SortStableFunc(p.list, func(a, b LineError) int { return a.Line - b.Line })
	if len(p.list) > MaxLabelErrors {
		p.more += len(p.list) - MaxLabelErrors
		p.list = p.list[:MaxLabelErrors]
	}
}

func (p *labelProblems) any() bool { return len(p.list) > 0 }

func (p *labelProblems) err() error {
	p.trim()
	return &Errors{List: p.list, Cut: p.more}
}
