package export

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// TimeLayout is how times are written: RFC 3339 in UTC, to the microsecond
// PostgreSQL keeps.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

func timeCell(t time.Time) Cell {
	if t.IsZero() {
		return Cell{Null: true}
	}
	return Cell{S: t.UTC().Format(TimeLayout)}
}

func intCell(n int64) Cell { return Cell{S: strconv.FormatInt(n, 10)} }

func boolCell(b bool) Cell { return Cell{S: strconv.FormatBool(b)} }

func textOrNull(s string) Cell {
	if s == "" {
		return Cell{Null: true}
	}
	return Cell{S: s}
}

// Label is one raw label: one rater's answer on one rubric item of one
// item, as the labels export writes it.
type Label struct {
	ItemID string // the item's id in the dataset
	System string // the item's system: its meta under the project's system key; "" when it names none
	// Rater is a person's email (or name, for a rater brought in without
	// an account) or a judge's name.
	Rater      string
	RaterKind  string // human or judge
	RubricItem string
	Value      string // as stored: 1–5, YES, NO, NA, or ERROR for a failed judge call
	Rationale  string
	ActiveMS   int64 // time the rater spent on the whole item, in milliseconds
	CreatedAt  time.Time
	Method     string // how a judge reached the value; "" for people
	// Evidence is the turns (from 1) the rater marked where a failing
	// answer fails, in order; none on other answers.
	Evidence []int
}

// LabelColumns are the columns of the labels export, in order.
var LabelColumns = []Column{
	{"item_id", Text}, {"system", Text}, {"rater", Text}, {"rater_kind", Text}, {"rubric_item", Text}, {"value", Text},
	{"rationale", Text}, {"active_ms", Number}, {"created_at", Text}, {"method", Text}, {"evidence", Numbers},
}

// numberCells appends each number of ns to out as text, for a Numbers cell.
func numberCells(out []string, ns []int) []string {
	for _, n := range ns {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

// LabelWriter writes the labels export.
type LabelWriter struct {
	t     *Table
	cells []Cell
}

// NewLabelWriter starts a labels export on w.
func NewLabelWriter(w io.Writer, f Format) (*LabelWriter, error) {
	t, err := NewTable(w, f, LabelColumns)
	if err != nil {
		return nil, err
	}
	return &LabelWriter{t: t, cells: make([]Cell, len(LabelColumns))}, nil
}

// Write writes one label.
func (lw *LabelWriter) Write(l *Label) error {
	c := lw.cells
	c[0], c[1], c[2], c[3], c[4] = Cell{S: l.ItemID}, textOrNull(l.System), Cell{S: l.Rater}, Cell{S: l.RaterKind}, Cell{S: l.RubricItem}
	c[5], c[6], c[7], c[8], c[9] = Cell{S: l.Value}, Cell{S: l.Rationale}, intCell(l.ActiveMS), timeCell(l.CreatedAt), textOrNull(l.Method)
	c[10] = Cell{L: numberCells(c[10].L[:0], l.Evidence)}
	return lw.t.Write(c)
}

// Rows returns how many labels were written.
func (lw *LabelWriter) Rows() int { return lw.t.Rows() }

// Close writes out what is buffered; it does not close the underlying
// writer.
func (lw *LabelWriter) Close() error { return lw.t.Flush() }

// JudgeCall is one call a judge made to its model, as the judge-calls
// export writes it.
type JudgeCall struct {
	RunID        int64
	Judge        string
	Model        string
	ItemID       string // the item's id in the dataset
	System       string // the item's system, as in Label
	RubricItem   string
	Sample       int
	Reask        bool
	PromptHash   string
	InputTokens  int64
	CachedTokens int64
	OutputTokens int64
	CostUSD      string // a decimal number, exactly as stored
	LatencyMS    int64
	OK           bool
	Error        string
	Raw          string // the model's text as it came back
	CreatedAt    time.Time
}

// JudgeCallColumns are the columns of the judge-calls export, in order.
var JudgeCallColumns = []Column{
	{"run_id", Number}, {"judge", Text}, {"model", Text}, {"item_id", Text}, {"system", Text}, {"rubric_item", Text},
	{"sample", Number}, {"reask", Bool}, {"prompt_hash", Text}, {"input_tokens", Number}, {"cached_tokens", Number},
	{"output_tokens", Number}, {"cost_usd", Number}, {"latency_ms", Number}, {"ok", Bool}, {"error", Text},
	{"raw", Text}, {"created_at", Text},
}

// JudgeCallWriter writes the judge-calls export.
type JudgeCallWriter struct {
	t     *Table
	cells []Cell
}

// NewJudgeCallWriter starts a judge-calls export on w.
func NewJudgeCallWriter(w io.Writer, f Format) (*JudgeCallWriter, error) {
	t, err := NewTable(w, f, JudgeCallColumns)
	if err != nil {
		return nil, err
	}
	return &JudgeCallWriter{t: t, cells: make([]Cell, len(JudgeCallColumns))}, nil
}

// Write writes one call.
func (jw *JudgeCallWriter) Write(c *JudgeCall) error {
	x := jw.cells
	x[0], x[1], x[2], x[3], x[4] = intCell(c.RunID), Cell{S: c.Judge}, Cell{S: c.Model}, Cell{S: c.ItemID}, textOrNull(c.System)
	x[5], x[6], x[7], x[8], x[9] = Cell{S: c.RubricItem}, intCell(int64(c.Sample)), boolCell(c.Reask), Cell{S: c.PromptHash}, intCell(c.InputTokens)
	cost := Cell{S: c.CostUSD}
	if !plainNumber(c.CostUSD) {
		cost = Cell{Null: true}
	}
	x[10], x[11], x[12], x[13], x[14] = intCell(c.CachedTokens), intCell(c.OutputTokens), cost, intCell(c.LatencyMS), boolCell(c.OK)
	x[15], x[16], x[17] = textOrNull(c.Error), Cell{S: c.Raw}, timeCell(c.CreatedAt)
	return jw.t.Write(x)
}

// Rows returns how many calls were written.
func (jw *JudgeCallWriter) Rows() int { return jw.t.Rows() }

// Close writes out what is buffered; it does not close the underlying
// writer.
func (jw *JudgeCallWriter) Close() error { return jw.t.Flush() }

// The ways an item's gold was decided, as the gold export writes them.
const (
	DecidedAutomatic   = "automatic"
	DecidedAdjudicated = "adjudicated"
	// DecidedTrustedJudge is gold that the answers of the judge trust
	// routing keeps decided, no person having labelled the item.
	DecidedTrustedJudge = "trusted_judge"
	DecidedOpen         = "open"
	// DecidedByRule is the decided_by of automatic gold, DecidedByJudge
	// that of a trusted judge's (its note names the judge).
	DecidedByRule  = "rule"
	DecidedByJudge = "judge"
)

// GoldItem is one item of the gold set.
type GoldItem struct {
	ItemID string // the item's id in the dataset
	System string // the item's system, as in Label
	// Gold holds the gold value of every rubric item; empty while the item
	// is open.
	Gold map[string]string
	// Method is automatic, adjudicated or trusted_judge; "" while the
	// item is open.
	Method string
	// DecidedBy is the adjudicator's email; "" for automatic gold.
	DecidedBy string
	DecidedAt time.Time
	// Note is the adjudicator's note, or for automatic gold the rule's
	// reason on each rubric item.
	Note        string
	HumanRaters int
	// Human holds the people's answers on each rubric item, as stored
	// (ERROR included), in no particular order; the item's agreement is
	// computed from them (see Agreement).
	Human map[string][]string
	// Ratings holds each rater's values (rater id → rubric item → value),
	// read only when the writer has raters.
	Ratings map[int64]map[string]string
}

// Rater is one rater of the project, for the gold export's optional
// columns of every rater's answers.
type Rater struct {
	ID   int64
	Kind string // human or judge
	Name string // a person's email (or name), a judge's name
}

// GoldColumns returns the columns of the gold export for a rubric, with
// one column per rater and rubric item after the others when raters are
// given, named KIND:RATER:KEY.
func GoldColumns(def *rubric.Definition, raters []Rater) []Column {
	cols := []Column{{"item_id", Text}, {"system", Text}, {"rubric", Text}}
	for _, it := range def.Items {
		cols = append(cols, Column{"gold_" + it.Key, Text})
	}
	cols = append(cols,
		Column{"score", Number}, Column{"pass", Bool}, Column{"safety_gate_failed", Bool}, Column{"failed_checks", List},
		Column{"decided", Text}, Column{"decided_by", Text}, Column{"decided_at", Text}, Column{"note", Text},
		Column{"human_raters", Number}, Column{"agreement", Number})
	for _, r := range raters {
		for _, it := range def.Items {
			cols = append(cols, Column{r.Kind + ":" + r.Name + ":" + it.Key, Text})
		}
	}
	return cols
}

// GoldWriter writes the gold export. It scores each item's gold with the
// engine, as any answer set is scored.
type GoldWriter struct {
	def    *rubric.Definition
	ref    string
	raters []Rater
	t      *Table
	cells  []Cell
	gated  bool
}

// NewGoldWriter starts a gold export of items labelled with def on w. With
// raters, every row also carries each rater's answers.
func NewGoldWriter(w io.Writer, f Format, def *rubric.Definition, raters []Rater) (*GoldWriter, error) {
	cols := GoldColumns(def, raters)
	t, err := NewTable(w, f, cols)
	if err != nil {
		return nil, err
	}
	return &GoldWriter{def: def, ref: def.Ref().String(), raters: raters, t: t, cells: make([]Cell, len(cols)),
		gated: len(def.Scoring.Gate) > 0}, nil
}

// Write writes one item. Its score, pass, safety gate and failed checks
// are the engine's on the gold answers; they are empty while some rubric
// item has no gold. Pass is empty for rubrics without a pass rule, and the
// safety gate for rubrics without a gate.
func (g *GoldWriter) Write(it *GoldItem) error {
	c := g.cells[:0]
	c = append(c, Cell{S: it.ItemID}, textOrNull(it.System), Cell{S: g.ref})
	complete := len(it.Gold) > 0
	answers := make(rubric.Answers, len(g.def.Items))
	for _, ri := range g.def.Items {
		v, ok := it.Gold[ri.Key]
		if !ok {
			complete = false
		}
		answers[ri.Key] = rubric.Value(v)
		c = append(c, textOrNull(v))
	}
	null := Cell{Null: true}
	if complete {
		// The scores do not depend on the item's facts (they only add
		// warnings, which the export leaves out), so none are given.
		res, err := scoring.Score(g.def, answers, rubric.Facts{})
		if err != nil {
			return err
		}
		score, pass, gate := null, null, null
		if res.Score != nil {
			score = Cell{S: strconv.FormatFloat(*res.Score, 'f', -1, 64)}
		}
		if res.Pass != nil {
			pass = boolCell(*res.Pass)
		}
		if g.gated {
			gate = boolCell(res.SafetyGateFailed)
		}
		c = append(c, score, pass, gate, Cell{L: res.FailedChecks})
	} else {
		c = append(c, null, null, null, null)
	}
	decided, by := it.Method, it.DecidedBy
	switch {
	case decided == "":
		decided = DecidedOpen
	case decided == DecidedAutomatic && by == "":
		by = DecidedByRule
	case decided == DecidedTrustedJudge && by == "":
		by = DecidedByJudge
	}
	agreement := null
	if a, ok, err := Agreement(it.Human); err != nil {
		return fmt.Errorf("export: item %s: %w", it.ItemID, err)
	} else if ok {
		agreement = Cell{S: strconv.FormatFloat(a, 'f', 4, 64)}
	}
	c = append(c, Cell{S: decided}, textOrNull(by), timeCell(it.DecidedAt), textOrNull(it.Note),
		intCell(int64(it.HumanRaters)), agreement)
	for _, r := range g.raters {
		vals := it.Ratings[r.ID]
		for _, ri := range g.def.Items {
			c = append(c, textOrNull(vals[ri.Key]))
		}
	}
	g.cells = c
	return g.t.Write(c)
}

// Rows returns how many items were written.
func (g *GoldWriter) Rows() int { return g.t.Rows() }

// Close writes out what is buffered; it does not close the underlying
// writer.
func (g *GoldWriter) Close() error { return g.t.Flush() }

// Agreement returns an item's agreement among people, as the gold export
// writes it: percent agreement as agreement.PercentAgreement computes it,
// with the item's rubric items as its units — the share of agreeing pairs
// among the answers on each rubric item, averaged over the rubric items
// with two answers or more. ERROR is no answer. ok is false when no rubric
// item has two answers. human maps each rubric item to its answers.
func Agreement(human map[string][]string) (value float64, ok bool, err error) {
	keys := make([]string, 0, len(human))
	var values []string
	for k, vs := range human {
		keys = append(keys, k)
		for _, v := range vs {
			if rubric.Value(v) != rubric.Error {
				values = append(values, v)
			}
		}
	}
	if len(values) == 0 {
		return 0, false, nil
	}
	// The rubric items in one order, so that the mean is summed alike on
	// every export.
	slices.Sort(keys)
	scale, err := agreement.InferScale(values)
	if err != nil {
		return 0, false, err
	}
	list := make([]agreement.Unit, 0, len(keys))
	for _, k := range keys {
		counts := make([]int, scale.Len())
		for _, v := range human[k] {
			if i, ok := scale.Index(v); ok {
				counts[i]++
			}
		}
		list = append(list, agreement.Unit{Counts: counts, Weight: 1})
	}
	units, err := agreement.NewUnits(scale, list)
	if err != nil {
		return 0, false, err
	}
	pa := agreement.PercentAgreement(units)
	return pa.Value, pa.Defined, nil
}
