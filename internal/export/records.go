package export

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// The dataset export hands a project on to a training or evaluation
// pipeline: one record per item carrying the dialogue itself in the
// chat-messages shape, the gold of every rubric item, the engine's score of
// the gold, and every rater's answers, as JSON Lines or Parquet. Its
// columns keep one type in every row (a value is null rather than of
// another type), so that a columnar loader such as the Hugging Face
// datasets JSON loader reads the file as it is. docs/datasets.md describes
// the schema.

// Parquet is the Apache Parquet format, for the dataset export only.
const Parquet Format = "parquet"

// Records is the dataset export, named in the audit log.
const Records Dataset = "dataset"

// ParseRecordFormat returns the dataset export's format named s ("jsonl"
// or "parquet"; "" is JSON Lines).
func ParseRecordFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "jsonl", "ndjson":
		return JSONL, nil
	case "parquet":
		return Parquet, nil
	}
	return "", fmt.Errorf("export: unknown format %q: use jsonl or parquet", s)
}

// Which says which items the dataset export carries.
type Which string

// The selections of the dataset export.
const (
	// WhichGold is the gold set: the items with gold on every rubric item.
	WhichGold Which = "gold"
	// WhichLabels is every item, open ones (gold null) included.
	WhichLabels Which = "labels"
)

// ParseWhich returns the selection named s ("" is the gold set).
func ParseWhich(s string) (Which, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "gold":
		return WhichGold, nil
	case "labels":
		return WhichLabels, nil
	}
	return "", fmt.Errorf("export: unknown selection %q: use gold or labels", s)
}

// RecordOptions shape the dataset export.
type RecordOptions struct {
	Which Which
	// Soft adds the soft labels: on each rubric item, each answer's share
	// of the people who answered it.
	Soft bool
}

// RecordFileName is the name a download of the dataset export gets.
func RecordFileName(project string, o RecordOptions, f Format) string {
	name := FileName(project, Records, f)
	base := strings.TrimSuffix(name, "."+string(f))
	suffix := "-" + string(o.Which)
	if o.Soft {
		suffix += "-soft"
	}
	return base + suffix + "." + string(f)
}

// Record is one item as the store hands it to the dataset export. The
// store reuses one Record, and its slices, from item to item: a writer
// must not keep it.
type Record struct {
	ItemID string // the item's id in the dataset
	// System is the item's system: its meta under the project's system
	// key; "" when it names none.
	System string
	// Messages is the stored dialogue: a JSON array of {"role", "content"}.
	Messages []byte
	// Meta is the stored meta: a JSON object.
	Meta []byte
	// Gold holds the gold of each rubric item, in rubric order; "" where
	// there is none.
	Gold []string
	// Decided is automatic, adjudicated or trusted_judge; "" while the
	// item is open.
	Decided string
	// Ratings holds each rater who answered the item: people first, then
	// judges, each by name.
	Ratings []Rating
}

// Rating is one rater's answers on one item.
type Rating struct {
	Rater *Rater
	// Values holds the answer on each rubric item, in rubric order; "" where
	// the rater gave none. A judge's failed call is ERROR.
	Values []string
	// Evidence holds the turns (from 1) the rater marked on each rubric
	// item, in rubric order, where a failing answer fails; empty where
	// none. nil is no evidence on any rubric item.
	Evidence [][]int
}

// SoftAnswer is one answer's share of the people who answered a rubric
// item.
type SoftAnswer struct {
	Value string
	Count int
	// Share is Count over the people who answered the rubric item (ERROR
	// is no answer).
	Share float64
}

// RecordWriter writes the dataset export.
type RecordWriter interface {
	// Write writes the item, or nothing when the selection leaves it out.
	Write(*Record) error
	// Rows returns how many records were written.
	Rows() int
	// Close writes out what is buffered (for Parquet, the footer); it does
	// not close the underlying writer.
	Close() error
}

// NewRecordWriter starts a dataset export of items labelled with def on w.
func NewRecordWriter(w io.Writer, f Format, def *rubric.Definition, o RecordOptions) (RecordWriter, error) {
	b := newRecordBuilder(def, o)
	switch f {
	case JSONL:
		return newRecordJSONL(w, b), nil
	case Parquet:
		return newRecordParquet(w, b)
	}
	return nil, fmt.Errorf("export: the dataset export is jsonl or parquet, not %q", f)
}

// maxScoreCache bounds the remembered results of the engine: a project's
// gold takes few distinct answer sets, and scoring each once keeps the
// export fast.
const maxScoreCache = 4096

// recordBuilder works out what a record carries beyond what is stored:
// the parsed dialogue, the engine's result on the gold answers and the
// soft labels. The engine is the one place that scores; the builder only
// remembers its results by answer set.
type recordBuilder struct {
	def     *rubric.Definition
	opts    RecordOptions
	ref     string
	keys    []string
	allowed [][]rubric.Value // each rubric item's answers, in scale order
	gated   bool

	parser messageParser
	// copyMessages is set by the JSON Lines writer: a dialogue stored in
	// the canonical shape is then copied into msgJSON, already encoded,
	// instead of being parsed into msgs.
	copyMessages bool
	scores       map[string]*scoring.Result
	keyBuf       []byte
	answers      rubric.Answers

	// Of the record being written:
	msgs     []Message
	msgJSON  []byte // the encoded dialogue, when copied
	copied   bool
	complete bool
	result   *scoring.Result
	soft     [][]SoftAnswer
	counts   []int
}

func newRecordBuilder(def *rubric.Definition, o RecordOptions) *recordBuilder {
	b := &recordBuilder{def: def, opts: o, ref: def.Ref().String(), gated: len(def.Scoring.Gate) > 0,
		scores: map[string]*scoring.Result{}, answers: make(rubric.Answers, len(def.Items)),
		soft: make([][]SoftAnswer, len(def.Items))}
	for i := range def.Items {
		b.keys = append(b.keys, def.Items[i].Key)
		b.allowed = append(b.allowed, def.Allowed(&def.Items[i]))
	}
	return b
}

// build reads rec; it reports false when the selection leaves it out.
func (b *recordBuilder) build(rec *Record) (bool, error) {
	if len(rec.Gold) != len(b.keys) {
		return false, fmt.Errorf("export: item %s: %d gold values for %d rubric items", rec.ItemID, len(rec.Gold), len(b.keys))
	}
	b.complete = true
	for _, v := range rec.Gold {
		if v == "" {
			b.complete = false
		}
	}
	if b.opts.Which == WhichGold && !b.complete {
		return false, nil
	}
	var err error
	b.msgJSON, b.copied = b.msgJSON[:0], false
	if b.copyMessages {
		b.msgJSON, b.copied = appendCanonicalMessages(b.msgJSON, rec.Messages)
	}
	if !b.copied {
		msgs, err := b.parser.parse(rec.Messages)
		if err != nil {
			return false, fmt.Errorf("export: item %s: %w", rec.ItemID, err)
		}
		b.msgs = msgs
	}
	b.result = nil
	if b.complete {
		if b.result, err = b.score(rec.Gold); err != nil {
			return false, fmt.Errorf("export: item %s: %w", rec.ItemID, err)
		}
	}
	for _, r := range rec.Ratings {
		if len(r.Values) != len(b.keys) {
			return false, fmt.Errorf("export: item %s: %d values of %s for %d rubric items", rec.ItemID, len(r.Values), r.Rater.Name, len(b.keys))
		}
	}
	if b.opts.Soft {
		b.softLabels(rec)
	}
	return true, nil
}

// score returns the engine's result on the gold answers. The scores do
// not depend on the item's facts (they only add warnings, which the export
// leaves out), so none are given.
func (b *recordBuilder) score(gold []string) (*scoring.Result, error) {
	key := b.keyBuf[:0]
	for _, v := range gold {
		key = append(append(key, v...), 0)
	}
	b.keyBuf = key
	if r, ok := b.scores[string(key)]; ok {
		return r, nil
	}
	for i, k := range b.keys {
		b.answers[k] = rubric.Value(gold[i])
	}
	res, err := scoring.Score(b.def, b.answers, rubric.Facts{})
	if err != nil {
		return nil, err
	}
	if len(b.scores) < maxScoreCache {
		b.scores[string(key)] = &res
	}
	return &res, nil
}

// softLabels counts the people's answers on each rubric item, in the
// order of the rubric's scale. Judges are left out: they are measured
// against what people say, as gold is.
func (b *recordBuilder) softLabels(rec *Record) {
	for k, allowed := range b.allowed {
		b.counts = append(b.counts[:0], make([]int, len(allowed))...)
		total := 0
		for _, r := range rec.Ratings {
			if r.Rater.Kind != "human" {
				continue
			}
			v := r.Values[k]
			for j, a := range allowed {
				if string(a) == v {
					b.counts[j]++
					total++
					break
				}
			}
		}
		out := b.soft[k][:0]
		for j, c := range b.counts {
			if c > 0 {
				out = append(out, SoftAnswer{Value: string(allowed[j]), Count: c, Share: float64(c) / float64(total)})
			}
		}
		b.soft[k] = out
	}
}

func (b *recordBuilder) decided(rec *Record) string {
	if rec.Decided == "" || !b.complete {
		return DecidedOpen
	}
	return rec.Decided
}

// recordJSONL writes the dataset export as JSON Lines.
type recordJSONL struct {
	b    *recordBuilder
	w    io.Writer
	buf  []byte
	out  []byte // output waiting to be written, flushed in large writes
	rows int
}

func newRecordJSONL(w io.Writer, b *recordBuilder) *recordJSONL {
	b.copyMessages = true
	return &recordJSONL{b: b, w: w}
}

const jsonlFlushAt = 64 << 10

func (j *recordJSONL) Write(rec *Record) error {
	ok, err := j.b.build(rec)
	if err != nil || !ok {
		return err
	}
	j.out = j.b.appendJSON(j.out, rec)
	j.rows++
	if len(j.out) >= jsonlFlushAt {
		return j.flush()
	}
	return nil
}

func (j *recordJSONL) flush() error {
	if _, err := j.w.Write(j.out); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	j.out = j.out[:0]
	return nil
}

func (j *recordJSONL) Rows() int    { return j.rows }
func (j *recordJSONL) Close() error { return j.flush() }

// appendJSON appends the record built last as one JSON line.
func (b *recordBuilder) appendJSON(out []byte, rec *Record) []byte {
	out = append(out, `{"id":`...)
	out = appendJSONString(out, rec.ItemID)
	out = append(out, `,"system":`...)
	if rec.System != "" {
		out = appendJSONString(out, rec.System)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"messages":`...)
	if b.copied {
		out = append(out, b.msgJSON...)
	} else {
		out = b.appendMessages(out)
	}
	out = append(out, `,"meta":`...)
	out = appendJSONString(out, rec.Meta)
	return b.appendRest(out, rec)
}

// appendMessages appends the dialogue parsed last as a JSON array.
func (b *recordBuilder) appendMessages(out []byte) []byte {
	out = append(out, '[')
	for i, m := range b.msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":`...)
		out = appendJSONString(out, m.Role)
		out = append(out, `,"content":`...)
		out = appendJSONString(out, m.Content)
		out = append(out, '}')
	}
	return append(out, ']')
}

// appendRest appends the record's fields after its meta, to the end of
// the line.
func (b *recordBuilder) appendRest(out []byte, rec *Record) []byte {
	out = append(out, `,"rubric":`...)
	out = appendJSONString(out, b.ref)
	out = append(out, `,"gold":`...)
	out = b.appendValues(out, rec.Gold)
	out = append(out, `,"decided":`...)
	out = appendJSONString(out, b.decided(rec))
	out = append(out, `,"score":`...)
	if r := b.result; r != nil && r.Score != nil {
		out = appendFloat(out, *r.Score)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"pass":`...)
	if r := b.result; r != nil && r.Pass != nil {
		out = strconv.AppendBool(out, *r.Pass)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"safety_gate_failed":`...)
	if r := b.result; r != nil && b.gated {
		out = strconv.AppendBool(out, r.SafetyGateFailed)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"failed_checks":`...)
	if r := b.result; r != nil {
		out = append(out, '[')
		for i, k := range r.FailedChecks {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, k)
		}
		out = append(out, ']')
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"ratings":[`...)
	for i, r := range rec.Ratings {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"rater":`...)
		out = appendJSONString(out, r.Rater.Name)
		out = append(out, `,"kind":`...)
		out = appendJSONString(out, r.Rater.Kind)
		out = append(out, `,"answers":`...)
		out = b.appendValues(out, r.Values)
		out = append(out, `,"evidence":`...)
		out = b.appendEvidence(out, r.Evidence)
		out = append(out, '}')
	}
	out = append(out, ']')
	if b.opts.Soft {
		out = append(out, `,"soft":{`...)
		for k, key := range b.keys {
			if k > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, key)
			out = append(out, ":["...)
			for i, s := range b.soft[k] {
				if i > 0 {
					out = append(out, ',')
				}
				out = append(out, `{"value":`...)
				out = appendJSONString(out, s.Value)
				out = append(out, `,"count":`...)
				out = strconv.AppendInt(out, int64(s.Count), 10)
				out = append(out, `,"share":`...)
				out = appendFloat(out, s.Share)
				out = append(out, '}')
			}
			out = append(out, ']')
		}
		out = append(out, '}')
	}
	return append(out, '}', '\n')
}

// appendValues appends one value per rubric item as a JSON object, null
// where there is none.
func (b *recordBuilder) appendValues(out []byte, vals []string) []byte {
	out = append(out, '{')
	for i, k := range b.keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		if vals[i] == "" {
			out = append(out, "null"...)
		} else {
			out = appendJSONString(out, vals[i])
		}
	}
	return append(out, '}')
}

// appendEvidence appends each rubric item's turns as a JSON object of
// arrays of numbers, an empty array where the rater marked none.
func (b *recordBuilder) appendEvidence(out []byte, ev [][]int) []byte {
	out = append(out, '{')
	for i, k := range b.keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':', '[')
		if i < len(ev) {
			for j, t := range ev[i] {
				if j > 0 {
					out = append(out, ',')
				}
				out = strconv.AppendInt(out, int64(t), 10)
			}
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

// appendFloat appends f as a JSON number that always reads as a float
// (4.0, not 4): a loader that infers a column's type from its values must
// not see an integer in one row and a float in the next.
func appendFloat(out []byte, f float64) []byte {
	start := len(out)
	out = strconv.AppendFloat(out, f, 'f', -1, 64)
	for _, c := range out[start:] {
		if c == '.' {
			return out
		}
	}
	return append(out, '.', '0')
}
