package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/calibration"
)

// explainFlag collects --explain KEY=TEXT, one per rubric item.
type explainFlag map[string]string

func (f explainFlag) String() string { return "" }

func (f explainFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q is not RUBRIC_ITEM=TEXT", s)
	}
	f[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}

func calibrationFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("item", "", "add, remove: the item's id in the dataset")
	fs.Var(explainFlag{}, "explain", "add: RUBRIC_ITEM=TEXT, what a person who missed that rubric item should read (repeatable)")
	fs.String("qualify", "", "settings: calibration items a person must pass before real items (0: none)")
	fs.String("every", "", "settings: after qualifying, one calibration item in this many (0: none)")
	fs.String("pass", "", "settings: percentage of rubric items an answer set must match to pass (1–100)")
}

const calibrationUsage = `attune calibration add --project P --item ID [--explain RUBRIC_ITEM=TEXT]...
attune calibration list --project P
attune calibration remove --project P --item ID
attune calibration settings --project P [--qualify N] [--every N] [--pass PERCENT]`

// runCalibration manages a project's calibration set and rules.
func runCalibration(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: calibration takes add, list, remove or settings:\n%s", errUsage, calibrationUsage)
	}
	verb := args[0]
	switch verb {
	case "add", "list", "remove", "settings":
	default:
		return fmt.Errorf("%w: unknown calibration command %q:\n%s", errUsage, verb, calibrationUsage)
	}
	fs := flag.NewFlagSet("calibration "+verb, flag.ContinueOnError)
	explanations := explainFlag{}
	calibrationFlags(fs)
	fs.Lookup("explain").Value = explanations
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if get("project") == "" {
		return fmt.Errorf("%w: calibration %s needs --project:\n%s", errUsage, verb, calibrationUsage)
	}
	if (verb == "add" || verb == "remove") && get("item") == "" {
		return fmt.Errorf("%w: calibration %s needs --item:\n%s", errUsage, verb, calibrationUsage)
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
	switch verb {
	case "add":
		def, err := db.FindRubricByID(ctx, p.RubricVersionID)
		if err != nil {
			return err
		}
		if err := calibration.CheckExplanations(def, explanations); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if _, err := db.AddCalibration(ctx, nil, p.ID, get("item"), explanations); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "item %q is in the calibration set of %q\n", get("item"), p.Name)
	case "remove":
		if err := db.RemoveCalibration(ctx, nil, p.ID, get("item")); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "item %q left the calibration set of %q\n", get("item"), p.Name)
	case "list":
		items, err := db.ListCalibration(ctx, p.ID)
		if err != nil {
			return err
		}
		for _, it := range items {
			keys := make([]string, 0, len(it.Gold))
			for k := range it.Gold {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			gold := make([]string, len(keys))
			for i, k := range keys {
				gold[i] = k + "=" + it.Gold[k]
			}
			fmt.Fprintf(e.stdout, "%s\tgold %s\tanswered %d, passed %d\texplained %d\n", it.SourceID, strings.Join(gold, " "),
				it.Answered, it.Passed, len(it.Explanations))
		}
		fmt.Fprintf(e.stdout, "%d calibration %s\n", len(items), map[bool]string{true: "item", false: "items"}[len(items) == 1])
	case "settings":
		pol, err := db.CalibrationPolicy(ctx, p.ID)
		if err != nil {
			return err
		}
		for name, dst := range map[string]*int{"qualify": &pol.Qualify, "every": &pol.Every, "pass": &pol.PassPercent} {
			if s := get(name); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil {
					return fmt.Errorf("%w: --%s must be a whole number", errUsage, name)
				}
				*dst = n
			}
		}
		if err := db.SetCalibrationPolicy(ctx, nil, p.ID, pol); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%q: qualify %d, every %d, pass %d%%\n", p.Name, pol.Qualify, pol.Every, pol.PassPercent)
	}
	return nil
}
