package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

func reportFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("format", "json", "json or csv")
	fs.String("annotators", "", "keep only these annotators, by name, comma-separated (default: every one)")
	fs.String("judges", "", "keep only these judges, by name, comma-separated (default: every one)")
	fs.String("from", "", "keep labels made on or after this day, YYYY-MM-DD (UTC)")
	fs.String("to", "", "keep labels made on or before this day, YYYY-MM-DD (UTC)")
	fs.Bool("na-missing", false, "treat NA as a missing label instead of an answer of its own")
	fs.Int("replicates", report.DefaultBootstrap.Replicates, "bootstrap replicates of each interval (0: no intervals)")
	fs.String("epsilon", "", "alt-test ε by who the annotators are: 0.2 experts, 0.15 trained, 0.1 a crowd (default: the project's setting)")
	fs.String("alt-scoring", "", "alt-test scoring: accuracy or neg_rmse (default: neg_rmse on 1-5 items, accuracy on the others)")
	fs.Int("alt-min-items", agreement.DefaultAltMinItems, "alt-test: the least items an annotator shares with another annotator and the judge to be tested (below 30, an exact test replaces the t-test)")
	fs.Bool("alt-unusual-epsilon", false, "alt-test: accept an --epsilon outside 0.05 to 0.3; the report marks it unusual")
	fs.Bool("alt-allow-few", false, "alt-test: give a verdict on one or two tested annotators (default: cannot tell below 3), said beside it")
	fs.String("judge", "", "add the prediction-powered estimates of every rubric item per system for this judge (a rater id or a judge's name)")
	fs.String("level", "", "Krippendorff's level: nominal, ordinal, interval or ratio (default: ordinal on 1-5 items, nominal on the others)")
}

// runReport is `attune report`: a project's agreement report as JSON or
// CSV on standard output.
func runReport(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	reportFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if get("project") == "" {
		return fmt.Errorf("%w: attune report --project NAME [--format json|csv]", errUsage)
	}
	format := get("format")
	if format != "json" && format != "csv" {
		return fmt.Errorf("%w: --format must be json or csv", errUsage)
	}
	opts := report.Options{NAMissing: get("na-missing") == "true", Bootstrap: report.DefaultBootstrap,
		Level: get("level"), Alt: report.AltOptions{Scoring: get("alt-scoring"), AllowFewHumans: get("alt-allow-few") == "true"},
		EstimateJudge: get("judge")}
	opts.Bootstrap.Replicates, _ = strconv.Atoi(get("replicates"))
	if opts.Bootstrap.Replicates < 0 {
		return fmt.Errorf("%w: --replicates must be 0 or more", errUsage)
	}
	if v := get("epsilon"); v != "" {
		e, err := strconv.ParseFloat(v, 64)
		if err != nil {
			e = math.NaN()
		}
		opts.Alt.AllowUnusualEpsilon = get("alt-unusual-epsilon") == "true"
		if msg := agreement.AltEpsilonProblem(e, opts.Alt.AllowUnusualEpsilon); msg != "" {
			return fmt.Errorf("%w: --epsilon: %s (--alt-unusual-epsilon)", errUsage, msg)
		}
		opts.Alt.Epsilon = e
	}
	opts.Alt.MinItems, _ = strconv.Atoi(get("alt-min-items"))
	if opts.Alt.MinItems < 2 {
		return fmt.Errorf("%w: --alt-min-items must be 2 or more", errUsage)
	}
	if s := opts.Alt.Scoring; s != "" && s != "accuracy" && s != "neg_rmse" {
		return fmt.Errorf("%w: --alt-scoring must be accuracy or neg_rmse", errUsage)
	}
	if _, err := agreement.ParseLevel(opts.Level); err != nil {
		return fmt.Errorf("%w: --level must be nominal, ordinal, interval or ratio", errUsage)
	}
	var err error
	if opts.From, err = day(get("from"), 0); err != nil {
		return fmt.Errorf("%w: --from: %v", errUsage, err)
	}
	if opts.To, err = day(get("to"), 1); err != nil {
		return fmt.Errorf("%w: --to: %v", errUsage, err)
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
	if get("epsilon") == "" {
		// The project's ε is the lead's own setting: an unusual one is
		// used, and marked.
		opts.Alt.Epsilon, opts.Alt.AllowUnusualEpsilon = p.Epsilon, true
	}
	raters, err := db.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return err
	}
	if opts.Annotators, err = ratersNamed(raters, "human", get("annotators")); err != nil {
		return err
	}
	if opts.Judges, err = ratersNamed(raters, "judge", get("judges")); err != nil {
		return err
	}
	r, err := report.Build(ctx, db, p, opts)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	if format == "csv" {
		if err := r.WriteCSV(w); err != nil {
			return err
		}
	} else {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return w.Flush()
}

// day parses a YYYY-MM-DD day as midnight UTC, plus the given number of
// days (1 makes an inclusive last day an exclusive bound). "" is the zero
// time.
func day(s string, plus int) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a day written YYYY-MM-DD", s)
	}
	return t.AddDate(0, 0, plus), nil
}

// ratersNamed returns the ids of the project's raters of the kind named in
// a comma-separated list; "" is nil (every one).
func ratersNamed(raters []store.ProjectRater, kind, list string) ([]int64, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	ids := []int64{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, r := range raters {
			if r.Kind == kind && r.Name == name {
				ids = append(ids, r.ID)
				found = true
			}
		}
		if !found {
			var names []string
			for _, r := range raters {
				if r.Kind == kind {
					names = append(names, r.Name)
				}
			}
			slices.Sort(names)
			what := "annotator"
			if kind == "judge" {
				what = "judge"
			}
			return nil, fmt.Errorf("no %s named %q has answers in this project; those who do: %s", what, name, strings.Join(names, ", "))
		}
	}
	return ids, nil
}
