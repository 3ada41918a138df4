package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/attune/attune/internal/agreement"
)

func agreementFlags(fs *flag.FlagSet) {
	fs.String("level", "", "Krippendorff's level: nominal, ordinal, interval or ratio (default ordinal when every value is a number, else nominal)")
	fs.String("weights", "", "weights of Cohen's kappa and Gwet's AC2: none, linear, quadratic, ordinal, radical or ratio (default quadratic when every value is a number, else none)")
	fs.String("categories", "", "the scale, in order, comma-separated, e.g. 1,2,3,4,5 (default: the distinct values of the file, sorted)")
}

// runAgreement is `attune agreement`: the agreement statistics of a
// long-form CSV of ratings, as one JSON object. It needs no database.
func runAgreement(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("agreement", flag.ContinueOnError)
	agreementFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	// Flags may also follow the file.
	rest := fs.Args()
	if len(rest) > 0 {
		if err := parseFlags(fs, e, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: agreement reads one FILE, got also %q", errUsage, fs.Args())
		}
	}
	if len(rest) == 0 {
		return fmt.Errorf("%w: attune agreement [--level L] [--weights W] [--categories C] FILE.csv (- for standard input)", errUsage)
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	var opts agreement.Options
	if c := get("categories"); c != "" {
		s, err := agreement.ParseScale(c)
		if err != nil {
			return fmt.Errorf("%w: --categories: %v", errUsage, err)
		}
		opts.Scale = s
	}
	level, err := agreement.ParseLevel(get("level"))
	if err != nil {
		return fmt.Errorf("%w: --level: %v", errUsage, err)
	}
	weights, err := agreement.ParseWeighting(get("weights"))
	if err != nil {
		return fmt.Errorf("%w: --weights: %v", errUsage, err)
	}

	name := rest[0]
	in := e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, err := agreement.ReadLongCSV(bufio.NewReaderSize(in, 256<<10))
	if err != nil {
		var le *agreement.LineError
		if errors.As(err, &le) {
			return fmt.Errorf("%s: %w", name, err)
		}
		return err
	}
	// Numbers call for an ordinal level and quadratic weights, words for
	// nominal and none, unless the flags say otherwise.
	numeric := allNumbers(r.Values())
	if opts.Scale != nil {
		numeric = opts.Scale.Numeric()
	}
	opts.Level, opts.Weights = level, weights
	if get("level") == "" && numeric {
		opts.Level = agreement.Ordinal
	}
	if get("weights") == "" && numeric {
		opts.Weights = agreement.QuadraticWeights
	}
	s, err := agreement.Summarize(r, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return writeJSON(e, s)
}

// allNumbers reports whether every value is a number, as the scale
// inferred from them sees it (and there is one).
func allNumbers(values []string) bool {
	s, err := agreement.InferScale(values)
	return err == nil && len(values) > 0 && s.Numeric()
}
