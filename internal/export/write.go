package export

import (
	"context"
	"fmt"
	"io"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// Source is what an export reads: a project, its rubric, and its rows one
// at a time. The store satisfies it; each Export method reads its rows with
// one query and hands them to emit as PostgreSQL sends them, reusing one
// value, so emit must not keep what it is given. An error from emit stops
// the read and is returned as it is. Each returns how many rows it emitted.
type Source interface {
	FindProjectByID(ctx context.Context, id int64) (*attune.Project, error)
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	// ExportLabels emits every label of the project in long form: by item,
	// people before judges, each rater's labels in rubric order.
	ExportLabels(ctx context.Context, projectID int64, emit func(*Label) error) (int, error)
	// ExportJudgeCalls emits every call judges made for the project's
	// runs, in the order they were made.
	ExportJudgeCalls(ctx context.Context, projectID int64, emit func(*JudgeCall) error) (int, error)
	// ExportFlags emits every flag of the project, oldest first.
	ExportFlags(ctx context.Context, projectID int64, emit func(*attune.Flag) error) (int, error)
	// ExportGold emits the project's items in id order, each with its
	// gold and its people's answers. With raters it first calls begin with
	// every rater who answered in the project (people first, then judges,
	// by name) and fills each item's Ratings; otherwise begin gets nil.
	ExportGold(ctx context.Context, projectID int64, withRaters bool, begin func([]Rater) error, emit func(*GoldItem) error) (int, error)
	// ExportRecords emits one Record per item in import order, with its
	// answers on the rubric items keys; with WhichGold only items with
	// some gold.
	ExportRecords(ctx context.Context, projectID int64, keys []string, which Which, emit func(*Record) error) (int, error)
}

// Write writes dataset d of the project (the gold set, labels, judge calls
// or flags) to w in format f, streaming from src, and returns how many rows
// it wrote. withRaters adds every rater's answers to the gold set. The
// pages, the API and the command line all export through it. A failure
// part-way leaves w holding the rows written so far; the caller decides
// what an incomplete file means (the web cuts the connection, the command
// line removes the file).
func Write(ctx context.Context, src Source, w io.Writer, projectID int64, d Dataset, f Format, withRaters bool) (int, error) {
	switch d {
	case Labels:
		lw, err := NewLabelWriter(w, f)
		if err != nil {
			return 0, err
		}
		if _, err := src.ExportLabels(ctx, projectID, lw.Write); err != nil {
			return lw.Rows(), err
		}
		return lw.Rows(), lw.Close()
	case JudgeCalls:
		jw, err := NewJudgeCallWriter(w, f)
		if err != nil {
			return 0, err
		}
		if _, err := src.ExportJudgeCalls(ctx, projectID, jw.Write); err != nil {
			return jw.Rows(), err
		}
		return jw.Rows(), jw.Close()
	case Flags:
		fw, err := NewFlagWriter(w, f)
		if err != nil {
			return 0, err
		}
		if _, err := src.ExportFlags(ctx, projectID, fw.Write); err != nil {
			return fw.Rows(), err
		}
		return fw.Rows(), fw.Close()
	case Gold:
		def, err := projectRubric(ctx, src, projectID)
		if err != nil {
			return 0, err
		}
		var gw *GoldWriter
		_, err = src.ExportGold(ctx, projectID, withRaters, func(raters []Rater) error {
			gw, err = NewGoldWriter(w, f, def, raters)
			return err
		}, func(it *GoldItem) error { return gw.Write(it) })
		if gw == nil {
			return 0, err
		}
		if err != nil {
			return gw.Rows(), err
		}
		return gw.Rows(), gw.Close()
	}
	return 0, fmt.Errorf("export: unknown export %q", d)
}

// WriteRecords writes the project's dataset export to w in format f (JSON
// Lines or Parquet), streaming from src, and returns how many records it
// wrote. The pages, the API and the command line all export through it. A
// failure part-way leaves w holding what was written so far.
func WriteRecords(ctx context.Context, src Source, w io.Writer, projectID int64, f Format, o RecordOptions) (int, error) {
	def, err := projectRubric(ctx, src, projectID)
	if err != nil {
		return 0, err
	}
	rw, err := NewRecordWriter(w, f, def, o)
	if err != nil {
		return 0, err
	}
	keys := make([]string, len(def.Items))
	for i, it := range def.Items {
		keys[i] = it.Key
	}
	if err := pipeRecords(ctx, func(ctx context.Context, emit func(*Record) error) error {
		_, err := src.ExportRecords(ctx, projectID, keys, o.Which, emit)
		return err
	}, rw.Write); err != nil {
		return rw.Rows(), err
	}
	return rw.Rows(), rw.Close()
}

// projectRubric returns the rubric the project labels with.
func projectRubric(ctx context.Context, src Source, projectID int64) (*rubric.Definition, error) {
	p, err := src.FindProjectByID(ctx, projectID)
	if err != nil {
		return nil, err
	}
	return src.FindRubricByID(ctx, p.RubricVersionID)
}

// recordBatch is a run of records copied out of the source's stream, with
// the bytes and strings they point into.
type recordBatch struct {
	records []Record
	bytes   []byte
	values  []string
	ratings []Rating
	turns   []int   // the turn evidence's numbers
	lists   [][]int // the turn evidence's lists, one per rubric item
}

// batchRecords is how many records travel from reader to writer at once:
// enough that handing a batch over costs nothing beside encoding it.
const batchRecords = 256

// add copies rec into the batch. Its slices are carved from the batch's
// arenas; an arena that must grow leaves the earlier records pointing
// into the old one, which stays alive through them.
func (b *recordBatch) add(rec *Record) {
	start := len(b.bytes)
	b.bytes = append(b.bytes, rec.Messages...)
	b.bytes = append(b.bytes, rec.Meta...)
	messages := b.bytes[start : start+len(rec.Messages) : start+len(rec.Messages)]
	meta := b.bytes[start+len(rec.Messages) : len(b.bytes) : len(b.bytes)]
	strs := func(v []string) []string {
		at := len(b.values)
		b.values = append(b.values, v...)
		return b.values[at:len(b.values):len(b.values)]
	}
	at := len(b.ratings)
	for _, r := range rec.Ratings {
		b.ratings = append(b.ratings, Rating{Rater: r.Rater, Values: strs(r.Values), Evidence: b.evidence(r.Evidence)})
	}
	b.records = append(b.records, Record{
		ItemID:   rec.ItemID,
		System:   rec.System,
		Messages: messages,
		Meta:     meta,
		Gold:     strs(rec.Gold),
		Decided:  rec.Decided,
		Ratings:  b.ratings[at:len(b.ratings):len(b.ratings)],
	})
}

// evidence copies a rating's turn evidence into the batch's arenas; nil
// when it names no turn, as most ratings do.
func (b *recordBatch) evidence(ev [][]int) [][]int {
	marked := false
	for _, ts := range ev {
		marked = marked || len(ts) > 0
	}
	if !marked {
		return nil
	}
	at := len(b.lists)
	for _, ts := range ev {
		start := len(b.turns)
		b.turns = append(b.turns, ts...)
		b.lists = append(b.lists, b.turns[start:len(b.turns):len(b.turns)])
	}
	return b.lists[at:len(b.lists):len(b.lists)]
}

func (b *recordBatch) reset() {
	clear(b.records) // let go of the old arenas' records
	clear(b.lists)
	b.records, b.bytes, b.values, b.ratings = b.records[:0], b.bytes[:0], b.values[:0], b.ratings[:0]
	b.turns, b.lists = b.turns[:0], b.lists[:0]
}

// pipeRecords runs read, which hands records to its emit, on one goroutine
// and write on another, batch by batch through a short queue. The
// database's streams then keep flowing while the records before are
// encoded, which on a machine of few cores is most of an export's wall
// time; memory stays a few batches, whatever the export's size. The
// first error of either side stops both and is returned.
func pipeRecords(ctx context.Context, read func(context.Context, func(*Record) error) error, write func(*Record) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const depth = 3
	free := make(chan *recordBatch, depth)
	full := make(chan *recordBatch, depth)
	for range depth {
		free <- &recordBatch{}
	}
	writeErr := make(chan error, 1)
	go func() {
		var err error
		for b := range full {
			for i := 0; err == nil && i < len(b.records); i++ {
				err = write(&b.records[i])
			}
			if err != nil {
				cancel() // the reader stops at its next batch or row
				for range full {
				}
				break
			}
			b.reset()
			free <- b
		}
		writeErr <- err
	}()
	batch := <-free
	readErr := read(ctx, func(rec *Record) error {
		batch.add(rec)
		if len(batch.records) < batchRecords {
			return nil
		}
		full <- batch
		select {
		case batch = <-free:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if readErr == nil && len(batch.records) > 0 {
		full <- batch
	}
	close(full)
	if err := <-writeErr; err != nil {
		return err
	}
	return readErr
}
