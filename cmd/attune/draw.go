package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/evaluation"
)

// drawFlagOf names the flag of each field of a draw.
var drawFlagOf = map[string]string{evaluation.FieldK: "k", evaluation.FieldSeed: "seed"}

func drawFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.String("k", "", "how many items to send to people (required)")
	fs.String("system", "", "draw only items of this system ((none) for items naming none)")
	systemKeyFlag(fs)
	fs.String("seed", "", "the seed, to repeat a draw; left out, a fresh one is made and printed")
}

// runDraw is `attune draw`: the draw of the systems page and the API,
// audited with no account as actor, like the operator's other commands.
// It prints the draw's number, seed and the items sent, one a line.
func runDraw(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("draw", flag.ContinueOnError)
	drawFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if get("project") == "" || get("k") == "" {
		return fmt.Errorf("%w: --project and --k are required: attune draw --project P --k N [--system S] [--seed X]", errUsage)
	}
	k, err := strconv.Atoi(strings.TrimSpace(get("k")))
	if err != nil {
		return fmt.Errorf("%w: --k %q must be a whole number of items", errUsage, get("k"))
	}
	seed, err := evaluation.ParseSeed(get("seed"))
	if err != nil {
		return flagErrors(err, drawFlagOf)
	}
	if err := checkSystemKeyFlag(fs); err != nil {
		return err
	}
	q := evaluation.DrawQuery{K: k, System: get("system"), SystemKey: get("system-key"), Seed: seed}
	if err := evaluation.CheckDraw(q); err != nil {
		return flagErrors(err, drawFlagOf)
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
	q.ProjectID, q.SystemKey = p.ID, p.SystemKeyOr(q.SystemKey)
	d, err := evaluation.Draw(ctx, db, q)
	if err != nil {
		return flagErrors(err, drawFlagOf)
	}
	fmt.Fprintf(e.stdout, "draw %d: %d items sent to people, seed %d\n", d.ID, d.K, d.Seed)
	for _, it := range d.Items {
		fmt.Fprintln(e.stdout, it.SourceID)
	}
	return nil
}
