package rubric

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes the definition as plain text for people: everything an
// annotator reads (title, purpose, scale, each item with its definition,
// what it checks for, every level description, boundary guidance,
// examples, failure examples, category and weight, conditions, NA
// validity), the scoring settings, the edge rules, worked assessments and
// closing sections. Judge prompts are left out. It returns the first write
// error.
func (d *Definition) WriteText(w io.Writer) error {
	t := &textWriter{w: w}
	t.line(0, d.Title)
	t.line(0, fmt.Sprintf("%s · %s rubric · labels %s", d.Ref(), d.Kind, d.Unit.Describe()))
	t.block(0, "Purpose", d.Purpose)
	t.block(0, "Scale", d.Scale)
	t.block(0, "Scope", d.Scope)
	for _, n := range d.Notes {
		t.block(0, n.Title, n.Text)
	}
	t.gap()
	t.answers(d)

	if d.Kind == Criteria {
		for i, c := range d.Categories {
			items := d.CategoryItems(c.Key)
			t.gap()
			noun := "criteria"
			if len(items) == 1 {
				noun = "criterion"
			}
			head := fmt.Sprintf("Category %d: %s (%d %s) — weight %s", i+1, c.Label, len(items), noun, num(c.Weight))
			if c.WeightNote != "" {
				head += " · " + c.WeightNote
			}
			t.line(0, head)
			t.text(2, c.Question)
			for _, n := range c.Notes {
				t.text(2, n)
			}
			for _, it := range items {
				t.gap()
				t.item(2, d, it)
			}
		}
	} else {
		for i := range d.Items {
			t.gap()
			t.item(0, d, &d.Items[i])
		}
	}

	t.gap()
	t.scoring(d)
	if len(d.Rules) > 0 {
		t.gap()
		t.line(0, "Edge rules (checked on every answer set; a warning to confirm)")
		for _, r := range d.Rules {
			t.text(2, "- "+r.Source)
			t.text(4, fmt.Sprintf("Warns on %s when %s: %s", r.Item, clauses(r.When), r.Warning))
		}
	}
	for _, ex := range d.Examples {
		t.gap()
		t.assessment(d, ex)
	}
	for _, s := range d.Sections {
		t.gap()
		t.block(0, s.Title, s.Text)
	}
	return t.err
}

func (t *textWriter) answers(d *Definition) {
	var plain []string
	described := false
	for _, a := range d.Answers {
		plain = append(plain, string(a.Value))
		described = described || a.Meaning != "" || a.Points != nil
	}
	if !described {
		t.line(0, "Answers: "+strings.Join(plain, ", "))
		return
	}
	t.line(0, "Answers")
	for _, a := range d.Answers {
		s := "- " + string(a.Value)
		if a.Meaning != "" {
			s += " — " + a.Meaning
		}
		if a.Points != nil {
			s += " (counts " + decimal(*a.Points) + ")"
		}
		t.text(2, s)
	}
	if d.Kind == Criteria {
		t.text(2, "- ERROR — a failed judge call (counts 0.0; never given by a person)")
	}
}

func (t *textWriter) item(in int, d *Definition, it *Item) {
	t.line(in, it.Key+" — "+it.Label)
	in += 2
	if it.Category != "" {
		if c := d.category(it.Category); c != nil {
			share := c.Weight / float64(len(d.CategoryItems(c.Key)))
			t.text(in, fmt.Sprintf("Category: %s (weight %s; this item %s of the final score)", c.Label, num(c.Weight), strconv.FormatFloat(share, 'g', 4, 64)))
		}
	}
	t.block(in, "Definition", it.Definition)
	t.block(in, "Checks for", it.ChecksFor)
	if len(it.Steps) > 0 {
		t.line(in, "Evaluation steps:")
		for i, s := range it.Steps {
			t.hang(in+2, fmt.Sprintf("%d. ", i+1), s)
		}
	}
	t.text(in, "Answers: "+orList(d.Allowed(it)))
	switch {
	case d.NAInvalid(it):
		s := "NA: not valid"
		if it.NANote != "" {
			s += " — " + it.NANote
		}
		t.text(in, s+" (NA counts as a failure)")
	case it.NANote != "":
		t.text(in, "NA: "+it.NANote)
	}
	if c := it.Conditions; c != nil {
		var when []string
		if c.MinTurns > 0 {
			when = append(when, fmt.Sprintf("from %d turns", c.MinTurns))
		}
		if c.CrisisSignals {
			when = append(when, "only when crisis signals are present")
		}
		s := "Applies (conditional): " + strings.Join(when, ", ") + "; otherwise NA"
		if c.NAException != "" {
			s += "; NA also if " + c.NAException
		}
		t.text(in, s)
	}
	for _, g := range d.Scoring.Gate {
		if g == it.Key {
			t.text(in, "Safety gate: a failure here rejects the conversation whatever its score")
		}
	}
	if len(it.Levels) > 0 {
		t.line(in, "Levels:")
		for _, l := range it.Levels {
			s := string(l.Value)
			if l.Label != "" {
				s += " " + l.Label
			}
			t.text(in+2, s+": "+l.Description)
		}
	}
	if len(it.Boundary) > 0 {
		t.line(in, "Boundary guidance:")
		for _, g := range it.Boundary {
			if g.Title != "" {
				t.text(in+2, "- "+g.Title+": "+g.Text)
			} else {
				t.text(in+2, "- "+g.Text)
			}
		}
	}
	if len(it.Examples) > 0 {
		t.line(in, "Examples:")
		for _, e := range it.Examples {
			t.line(in+2, e.Title())
			t.text(in+4, `User: "`+e.User+`"`)
			t.text(in+4, `Response: "`+e.Response+`"`)
			t.block(in+4, "Why", e.Why)
		}
	}
	if len(it.Failures) > 0 {
		t.line(in, "Failure examples:")
		for _, f := range it.Failures {
			t.text(in+2, "- "+it.Key+" FAIL: "+f)
		}
	}
}

func (t *textWriter) scoring(d *Definition) {
	s := d.Scoring
	t.line(0, "Scoring")
	switch d.Kind {
	case Criteria:
		var ws []string
		for _, c := range d.Categories {
			ws = append(ws, c.Key+" "+num(c.Weight))
		}
		t.text(2, "Category weights, summed in this order: "+strings.Join(ws, ", "))
		t.text(2, "Category score: the mean of its items' points")
		t.text(2, fmt.Sprintf("Final score: the weighted sum of the category scores, rounded to %d decimals", s.Round))
		t.text(2, fmt.Sprintf("Pass: the unrounded final score ≥ %s and no safety gate failure", num(s.PassThreshold)))
		if len(s.Gate) > 0 {
			t.text(2, "Safety gate items: "+strings.Join(s.Gate, ", "))
		}
		var invalid []string
		for i := range d.Items {
			if d.NAInvalid(&d.Items[i]) {
				invalid = append(invalid, d.Items[i].Key)
			}
		}
		if len(invalid) > 0 {
			t.text(2, "NA invalid (counts as a failure) on: "+strings.Join(invalid, ", "))
		}
	default:
		t.text(2, "Score: the value of "+s.ScoreItem+", as given (a judgement, never computed)")
		if len(s.Mean) > 0 {
			t.text(2, "Dimension mean (reported, never the score): the mean of "+strings.Join(s.Mean, ", "))
		}
	}
	for _, n := range s.Notes {
		t.text(2, "- "+n)
	}
}

func (t *textWriter) assessment(d *Definition, ex Assessment) {
	if ex.Title != "" {
		t.line(0, ex.Title)
	}
	t.line(2, fmt.Sprintf("Conversation (%d turns):", len(ex.Turns)))
	for i, turn := range ex.Turns {
		t.line(4, fmt.Sprintf("Turn %d:", i+1))
		t.hang(6, "User: ", turn.User)
		t.hang(6, "Assistant: ", turn.Assistant)
	}
	t.line(2, "Assessment:")
	for _, a := range ex.Answers {
		s := a.Item + " " + string(a.Answer)
		if a.Why != "" {
			s += " — " + a.Why
		}
		t.text(4, s)
	}
	verdict := "FAIL"
	if ex.Pass {
		verdict = "PASS"
	}
	t.line(2, "Score: "+decimal(ex.Score)+" → "+verdict)
}

func clauses(cs []Clause) string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Fact == "crisis_signals":
			out = append(out, "crisis signals are present")
		case c.Fact != "":
			out = append(out, fmt.Sprintf("%s %s %s", c.Fact, opText[c.Op], c.Value))
		default:
			out = append(out, fmt.Sprintf("%s %s %s", c.Item, opText[c.Op], c.Value))
		}
	}
	return strings.Join(out, " and ")
}

var opText = map[string]string{"eq": "=", "ne": "≠", "lt": "<", "le": "≤", "gt": ">", "ge": "≥"}

func (d *Definition) category(key string) *Category {
	for i := range d.Categories {
		if d.Categories[i].Key == key {
			return &d.Categories[i]
		}
	}
	return nil
}

// num writes a weight or threshold with two decimals, as rubrics write
// them (0.20, 0.80), or in full when two decimals would not be exact.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	if y, _ := strconv.ParseFloat(s, 64); y == x {
		return s
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// decimal writes x with at least one decimal: 1.0, 0.5.
func decimal(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// textWriter writes indented lines and keeps the first error.
type textWriter struct {
	w   io.Writer
	err error
	// blank is whether the last line written was empty.
	blank bool
}

func (t *textWriter) line(indent int, s string) {
	if t.err != nil {
		return
	}
	if s == "" {
		_, t.err = io.WriteString(t.w, "\n")
	} else {
		_, t.err = io.WriteString(t.w, strings.Repeat(" ", indent)+s+"\n")
	}
	t.blank = s == ""
}

// text writes s, which may span lines, each line indented.
func (t *textWriter) text(indent int, s string) {
	if s == "" {
		return
	}
	for _, l := range strings.Split(s, "\n") {
		t.line(indent, l)
	}
}

// hang writes prefix and s, indenting the lines after the first of s to
// sit under its first line.
func (t *textWriter) hang(indent int, prefix, s string) {
	lines := strings.Split(s, "\n")
	t.line(indent, prefix+lines[0])
	for _, l := range lines[1:] {
		t.line(indent+len([]rune(prefix)), l)
	}
}

// block writes "Title: text" on one line, or the title and then the text
// indented when the text spans lines.
func (t *textWriter) block(indent int, title, s string) {
	switch {
	case s == "":
	case title == "":
		t.text(indent, s)
	case !strings.Contains(s, "\n"):
		t.line(indent, title+": "+s)
	default:
		t.line(indent, title+":")
		t.text(indent+2, s)
	}
}

// gap writes one empty line, never two.
func (t *textWriter) gap() {
	if !t.blank {
		t.line(0, "")
	}
}
