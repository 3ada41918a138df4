package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

func exportFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("format", "csv", "csv or jsonl")
	fs.String("out", "", "file to write; standard output when empty")
	fs.Bool("with-raters", false, "gold: add one column per rater and rubric item")
}

const exportUsage = `attune export gold|labels|judge-calls|flags --project P [--format csv|jsonl] [--out FILE] [--with-raters]
attune export dataset --project P [--format jsonl|parquet] [--which gold|labels] [--soft] [--out FILE]`

func datasetFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("format", "jsonl", "jsonl or parquet")
	fs.String("which", "gold", "gold (items with gold on every rubric item) or labels (every item)")
	fs.Bool("soft", false, "add each answer's share of the people on every rubric item")
	fs.String("out", "", "file to write; standard output when empty")
}

// runExport streams a dataset of a project to standard output or a file,
// and writes the export to the audit log. A file appears only whole: rows
// go to a temporary file beside it, renamed into place at the end.
func runExport(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: export takes gold, labels, judge-calls or flags, or dataset:\n%s", errUsage, exportUsage)
	}
	if args[0] == string(export.Records) {
		return runExportRecords(ctx, e, args[1:])
	}
	d, err := export.ParseDataset(args[0])
	if err != nil {
		return fmt.Errorf("%w: %v:\n%s", errUsage, err, exportUsage)
	}
	fs := flag.NewFlagSet("export "+args[0], flag.ContinueOnError)
	exportFlags(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if get("project") == "" {
		return fmt.Errorf("%w: export needs --project:\n%s", errUsage, exportUsage)
	}
	f, err := export.ParseFormat(get("format"))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	withRaters := get("with-raters") == "true"
	if withRaters && d != export.Gold {
		return fmt.Errorf("%w: --with-raters is for the gold set only", errUsage)
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, get("project"))
	if err != nil {
		return err
	}

	out := get("out")
	rows, err := writeWhole(e, out, func(w io.Writer) (int, error) { return export.Write(ctx, db, w, p.ID, d, f, withRaters) })
	ev := store.ExportEvent{ProjectID: p.ID, Dataset: d, Format: f, Rows: rows, WithRaters: withRaters, Via: "cli"}
	if err != nil {
		ev.Err = err.Error()
	}
	// The audit log has the export even when the command was interrupted.
	if aerr := db.RecordExport(context.WithoutCancel(ctx), ev); aerr != nil {
		err = errors.Join(err, aerr)
	}
	if err != nil {
		return fmt.Errorf("export %s of %q: %w", d, p.Name, err)
	}
	if out != "" {
		fmt.Fprintf(e.stderr, "wrote %d rows (the header not counted) to %s\n", rows, out)
	}
	return nil
}

// writeWhole runs write on standard output, or on a temporary file beside
// out renamed into place once write succeeded, so that a file appears only
// whole.
func writeWhole(e env, out string, write func(io.Writer) (int, error)) (int, error) {
	if out == "" {
		return write(e.stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	rows, err := write(tmp)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	return rows, err
}

// runExportRecords writes the dataset export: one record per item with its
// dialogue, gold, the engine's score and every rater's answers, as JSON
// Lines or Parquet (docs/datasets.md).
func runExportRecords(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("export dataset", flag.ContinueOnError)
	datasetFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if get("project") == "" {
		return fmt.Errorf("%w: export dataset needs --project:\n%s", errUsage, exportUsage)
	}
	f, err := export.ParseRecordFormat(get("format"))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	which, err := export.ParseWhich(get("which"))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	o := export.RecordOptions{Which: which, Soft: get("soft") == "true"}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, get("project"))
	if err != nil {
		return err
	}
	out := get("out")
	rows, err := writeWhole(e, out, func(w io.Writer) (int, error) { return export.WriteRecords(ctx, db, w, p.ID, f, o) })
	ev := store.ExportEvent{ProjectID: p.ID, Dataset: export.Records, Format: f, Rows: rows, Which: o.Which, Soft: o.Soft, Via: "cli"}
	if err != nil {
		ev.Err = err.Error()
	}
	// The audit log has the export even when the command was interrupted.
	if aerr := db.RecordExport(context.WithoutCancel(ctx), ev); aerr != nil {
		err = errors.Join(err, aerr)
	}
	if err != nil {
		return fmt.Errorf("export dataset of %q: %w", p.Name, err)
	}
	if out != "" {
		fmt.Fprintf(e.stderr, "wrote %d records to %s\n", rows, out)
	}
	return nil
}
