package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/attune/attune/internal/agreement"
)

func agreementFlags(fs *flag.FlagSet) {
	fs.String("level", "", "Krippendorff's level: nominal, ordinal, interval or ratio (default ordinal when every value is a number, else nominal)")
	fs.String("weights", "", "weights of Cohen's kappa and Gwet's AC2: none, linear, quadratic, ordinal, radical or ratio (default quadratic when every value is a number, else none)")
	fs.String("categories", "", "the scale, in order, comma-separated, e.g. 1,2,3,4,5 (default: the distinct values of the file, sorted)")
	fs.String("judge", "", "also run the alternative annotator test of this rater against every other rater of the file")
	fs.Float64("epsilon", agreement.AltEpsilonTrained, "alt-test ε by who the other raters are: 0.2 experts, 0.15 trained, 0.1 a crowd")
	fs.String("alt-scoring", "", "alt-test scoring: accuracy or neg_rmse (default: neg_rmse when every value is a number, else accuracy)")
	fs.Int("alt-min-items", agreement.DefaultAltMinItems, "alt-test: the least items a rater shares with another rater and the judge to be tested (below 30, an exact test replaces the t-test)")
	fs.Bool("alt-unusual-epsilon", false, "alt-test: accept an --epsilon outside 0.05 to 0.3; the result marks it unusual")
	fs.Bool("alt-allow-few", false, "alt-test: give a verdict on one or two tested raters (default: cannot tell below 3), said beside it")
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
		return fmt.Errorf("%w: attune agreement [--level L] [--weights W] [--categories C] [--judge NAME [--epsilon E [--alt-unusual-epsilon]] [--alt-scoring S] [--alt-min-items N] [--alt-allow-few]] FILE.csv (- for standard input)", errUsage)
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
	judge := get("judge")
	var alt agreement.AltOptions
	var scoring *agreement.AltScoring
	if judge != "" {
		alt.Epsilon, _ = strconv.ParseFloat(get("epsilon"), 64)
		alt.MinItems, _ = strconv.Atoi(get("alt-min-items"))
		alt.AllowUnusualEpsilon, alt.AllowFewHumans = get("alt-unusual-epsilon") == "true", get("alt-allow-few") == "true"
		if err := checkEpsilonFlag(alt.Epsilon, alt.AllowUnusualEpsilon); err != nil {
			return err
		}
		if alt.MinItems < 2 {
			return fmt.Errorf("%w: --alt-min-items must be 2 or more", errUsage)
		}
		if v := get("alt-scoring"); v != "" {
			sc, err := agreement.ParseAltScoring(v)
			if err != nil {
				return fmt.Errorf("%w: --alt-scoring must be accuracy or neg_rmse", errUsage)
			}
			scoring = &sc
		}
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
	if judge == "" {
		return writeJSON(e, s)
	}
	// The alt-test on the summary's scale, the judge against the rest.
	sc := agreement.DefaultAltScoring(s.Scale)
	if scoring != nil {
		sc = *scoring
	}
	res, err := agreement.AltTest(r, s.Scale, judge, sc, alt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// The summary's object with alt_test as one more member: Summary
	// encodes itself, so the two are joined as JSON.
	sum, err := json.Marshal(s)
	if err != nil {
		return err
	}
	at, err := json.Marshal(res)
	if err != nil {
		return err
	}
	joined := append(append(append(sum[:len(sum)-1:len(sum)-1], `,"alt_test":`...), at...), '}')
	return writeJSON(e, json.RawMessage(joined))
}

// allNumbers reports whether every value is a number, as the scale
// inferred from them sees it (and there is one).
func allNumbers(values []string) bool {
	s, err := agreement.InferScale(values)
	return err == nil && len(values) > 0 && s.Numeric()
}

// checkEpsilonFlag refuses an --epsilon the alt-test does not take, naming
// --alt-unusual-epsilon only where that flag would let it through.
func checkEpsilonFlag(e float64, allowUnusual bool) error {
	msg := agreement.AltEpsilonProblem(e, allowUnusual)
	if msg == "" {
		return nil
	}
	if agreement.AltEpsilonProblem(e, true) == "" {
		return fmt.Errorf("%w: --epsilon: %s with --alt-unusual-epsilon", errUsage, msg)
	}
	return fmt.Errorf("%w: --epsilon: %s", errUsage, msg)
}
