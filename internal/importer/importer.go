// Package importer brings files into projects — dataset files of items and
// labels files made elsewhere: it reads and checks them with package
// dataset and stores them with the store's all-or-nothing imports, which
// take parsed, checked rows and never see the file. The pages, the API and
// the command line all import through it.
package importer

import (
	"context"
	"errors"
	"io"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Options control one import.
type Options struct {
	ActorID *int64
	Source  string         // the file's name, for the audit log
	Format  dataset.Format // "" detects it
	Update  bool           // replace changed items that have no labels yet
}

// Import reads a dataset file and stores its items in the project, all or
// nothing. A file with problems returns *attune.LineErrors naming each
// line and field, and stores nothing.
func Import(ctx context.Context, db *store.DB, p *attune.Project, r io.Reader, opts Options) (store.ImportResult, error) {
	ref, err := rubric.ParseRef(p.RubricRef)
	if err != nil {
		return store.ImportResult{}, err
	}
	def, _, err := db.FindRubric(ctx, ref)
	if err != nil {
		return store.ImportResult{}, err
	}
	res, err := db.ImportItems(ctx, p.ID, store.ImportOptions{ActorID: opts.ActorID, Source: opts.Source, Update: opts.Update},
		func(emit func([]store.ImportItem) error) error {
			batch := make([]store.ImportItem, 0, dataset.DefaultBatchSize)
			bufSize := 0
			_, err := dataset.Read(r, dataset.Options{Format: opts.Format, Unit: def.Unit}, func(items []dataset.Item) error {
				// The messages of a whole batch share one buffer: the store
				// may still be copying the last batch, so each gets its own.
				buf := make([]byte, 0, bufSize+bufSize/8)
				batch = batch[:0]
				for _, it := range items {
					start := len(buf)
					buf = dataset.AppendMessagesJSON(buf, it.Messages)
					batch = append(batch, store.ImportItem{Line: it.Line, SourceID: it.SourceID, Kind: string(it.Kind),
						Messages: buf[start:len(buf):len(buf)], Meta: it.Meta, Turns: it.Turns, SHA256: it.SHA256})
				}
				bufSize = len(buf)
				return emit(batch)
			})
			return lineErrors(err)
		})
	return res, err
}

// lineErrors turns the reader's problems into the shared kind the pages,
// the API and the command line show.
func lineErrors(err error) error {
	var de *dataset.Errors
	if !errors.As(err, &de) {
		return err
	}
	out := &attune.LineErrors{More: de.Cut}
	for _, le := range de.List {
		out.Errors = append(out.Errors, attune.LineError{Line: le.Line, Field: le.Field, Message: le.Message})
	}
	return out
}

// ImportLabels reads a labels file (dataset.ReadLabels) and stores its
// labels in the project, all or nothing, in the store's one transaction:
// the lines are checked as they are read, and what needs the whole file
// or the project is checked by the store. A file with problems returns
// *attune.LineErrors naming each line and field, and stores nothing.
func ImportLabels(ctx context.Context, db *store.DB, p *attune.Project, r io.Reader, opts store.LabelsImportOptions) (store.LabelsImportResult, error) {
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return store.LabelsImportResult{}, err
	}
	return db.ImportLabels(ctx, p.ID, opts, func(emit func([]store.ImportLabel) error) error {
		var batch []store.ImportLabel
		err := dataset.ReadLabels(r, def, func(labels []dataset.Label) error {
			batch = batch[:0]
			for _, l := range labels {
				batch = append(batch, store.ImportLabel(l))
			}
			return emit(batch)
		})
		return lineErrors(err)
	})
}
