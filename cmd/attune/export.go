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

const exportUsage = `attune export gold|labels|judge-calls|flags --project P [--format csv|jsonl] [--out FILE] [--with-raters]`

// runExport streams a dataset of a project to standard output or a file,
// and writes the export to the audit log. A file appears only whole: rows
// go to a temporary file beside it, renamed into place at the end.
func runExport(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: export takes gold, labels, judge-calls or flags:\n%s", errUsage, exportUsage)
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

	var w io.Writer = e.stdout
	var tmp *os.File
	out := get("out")
	if out != "" {
		tmp, err = os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
		w = tmp
	}
	rows, err := db.WriteExport(ctx, w, p.ID, d, f, withRaters)
	if tmp != nil {
		err = errors.Join(err, tmp.Close())
		if err == nil {
			err = os.Rename(tmp.Name(), out)
		}
	}
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
