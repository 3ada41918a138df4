package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"

	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/failmap"
)

func failuresFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("judge", "", "the judge: a rater id or a judge's name (required)")
	fs.String("rubric-item", "", "the rubric item to map, by key (required)")
	systemKeyFlag(fs)
	fs.String("format", "text", "text or json")
}

// runFailures is `attune failures`: the failure map of a judge on one
// rubric item, as the project's failures page shows it.
func runFailures(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("failures", flag.ContinueOnError)
	failuresFlags(fs)
	get, err := readCommand(fs, e, args)
	if err != nil {
		return err
	}
	if get("project") == "" {
		return fmt.Errorf("%w: --project is required: attune failures --project P --judge J --rubric-item K", errUsage)
	}
	format, err := formatOf(get, "text", "json")
	if err != nil {
		return err
	}
	if err := checkSystemKeyFlag(fs); err != nil {
		return err
	}
	q := evaluation.FailureQuery{Judge: get("judge"), RubricItem: get("rubric-item"), SystemKey: get("system-key")}
	if err := evaluation.CheckFailures(q); err != nil {
		return flagErrors(err, estimateFlagOf)
	}
	db, p, err := openProject(ctx, e, get("project"))
	if err != nil {
		return err
	}
	defer db.Close()
	q.ProjectID, q.SystemKey = p.ID, p.SystemKeyOr(q.SystemKey)
	m, err := evaluation.Failures(ctx, db, q)
	if err != nil {
		return flagErrors(err, estimateFlagOf)
	}
	w := bufio.NewWriter(e.stdout)
	if format == "json" {
		return writeIndentedJSON(w, m)
	}
	writeFailuresText(w, m)
	return w.Flush()
}

// writeFailuresText writes one line per band, grouped by dimension.
func writeFailuresText(w *bufio.Writer, m failmap.Map) {
	if len(m.Bands) == 0 {
		fmt.Fprintln(w, "no item has both this judge's answer and a person's on this rubric item")
		return
	}
	dim := ""
	for _, b := range m.Bands {
		if b.Dimension != dim {
			dim = b.Dimension
			fmt.Fprintf(w, "by %s\n", dim)
		}
		agreed := "—"
		if b.Share != nil {
			agreed = fmt.Sprintf("%.0f%% [%.0f, %.0f]", 100**b.Share, 100**b.Low, 100**b.High)
		}
		split := "—"
		if b.JudgeShare != nil {
			split = fmt.Sprintf("judge %.0f%%, people %.0f%%", 100**b.JudgeShare, 100**b.PeopleShare)
		}
		fmt.Fprintf(w, "  %-22s %5d items  agreed %d: judge matched %s  split %d: %s  one person %d: matched %d\n",
			b.Band, b.Items, b.Agreed, agreed, b.Split, split, b.Single, b.SingleMatched)
	}
	l := m.Length
	if !l.Defined {
		fmt.Fprintf(w, "length: not shown: %s\n", l.Reason)
		return
	}
	fmt.Fprintf(w, "length: judge slope %+.3f per %s, people %+.3f, difference %+.3f [%+.3f, %+.3f] over %d items\n",
		*l.Judge, l.Unit, *l.People, *l.Difference, *l.Low, *l.High, l.Items)
	if l.Verdict != "" {
		fmt.Fprintf(w, "  %s\n", l.Verdict)
	}
}
