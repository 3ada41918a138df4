package export

import (
	"io"

	"github.com/attune/attune/internal/attune"
)

// FlagColumns are the columns of the flags export, in order.
var FlagColumns = []Column{
	{"item_id", Text}, {"system", Text}, {"reason", Text}, {"note", Text}, {"annotator", Text}, {"flagged_at", Text},
	{"status", Text}, {"resolution", Text}, {"resolved_by", Text}, {"resolved_at", Text}, {"resolution_note", Text},
	{"in_pool", Bool},
}

// FlagWriter writes the flags export.
type FlagWriter struct {
	t     *Table
	cells []Cell
}

// NewFlagWriter starts a flags export on w.
func NewFlagWriter(w io.Writer, f Format) (*FlagWriter, error) {
	t, err := NewTable(w, f, FlagColumns)
	if err != nil {
		return nil, err
	}
	return &FlagWriter{t: t, cells: make([]Cell, len(FlagColumns))}, nil
}

// Write writes one flag. An open flag has empty resolution cells.
func (fw *FlagWriter) Write(f *attune.Flag) error {
	c := fw.cells
	c[0], c[1], c[2], c[3], c[4] = Cell{S: f.ItemSourceID}, textOrNull(f.ItemSystem), Cell{S: f.Reason}, textOrNull(f.Note), Cell{S: f.Annotator}
	c[5], c[6], c[7], c[8], c[9] = timeCell(f.FlaggedAt), Cell{S: string(f.Status())}, textOrNull(string(f.Resolution)), textOrNull(f.ResolvedBy), timeCell(f.ResolvedAt)
	c[10], c[11] = textOrNull(f.ResolutionNote), boolCell(f.ItemInPool)
	return fw.t.Write(c)
}

// Rows returns how many flags were written.
func (fw *FlagWriter) Rows() int { return fw.t.Rows() }

// Close writes out what is buffered; it does not close the underlying
// writer.
func (fw *FlagWriter) Close() error { return fw.t.Flush() }
