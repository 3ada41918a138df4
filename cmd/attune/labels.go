package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/store"
)

func labelsFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.Bool("confirm-warnings", false, "store people's answer sets the rubric warns about, as an annotator who confirms them")
}

const labelsUsage = `attune labels import --project NAME [--confirm-warnings] FILE.csv
  FILE.csv has the header ` + dataset.LabelsHeader + ` (rationale and
  evidence optional); rater_kind is human or judge; evidence is the turns
  where a failing answer fails, joined by ; (2;5). A person's answer set the rubric warns
  about is refused unless --confirm-warnings confirms the warnings.`

// runLabels is `attune labels import`: labels made elsewhere brought into a
// project, all or nothing.
func runLabels(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "import" {
		return fmt.Errorf("%w: labels takes import:\n%s", errUsage, labelsUsage)
	}
	fs := flag.NewFlagSet("labels import", flag.ContinueOnError)
	labelsFlags(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 {
		if err := parseFlags(fs, e, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: labels import takes one FILE, got also %q", errUsage, fs.Args())
		}
	}
	name := fs.Lookup("project").Value.String()
	if len(rest) == 0 || name == "" {
		return fmt.Errorf("%w:\n%s", errUsage, labelsUsage)
	}
	path := rest[0]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, name)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := importer.ImportLabels(ctx, db, p, f, store.LabelsImportOptions{Source: path,
		ConfirmWarnings: fs.Lookup("confirm-warnings").Value.String() == "true"})
	if err != nil {
		var le *attune.LineErrors
		if errors.As(err, &le) {
			fmt.Fprintln(e.stderr, le.Error())
			return fmt.Errorf("%s: nothing was imported; fix the lines above and import again", path)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "imported %s into %q: %d labels in %d answer sets; created %d people and %d judges (%s)\n",
		path, p.Name, res.Labels, res.AnswerSets, res.People, res.Judges, time.Since(start).Round(time.Millisecond))
	return nil
}
