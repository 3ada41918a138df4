package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/internal/attune"
)

func goldFlags(fs *flag.FlagSet) {
	fs.String("project", "", "project name (required)")
	fs.Bool("all", false, "auto: judge every item with complete labels again, not only those changed since")
	fs.String("max-spread", "", "auto: first set the project's maximum spread for scores (0–10)")
}

const goldUsage = `attune gold auto --project P [--all] [--max-spread N]
attune gold status --project P`

// runGold applies the consensus rule to a project (auto) or says where its
// items stand on the way to a gold set (status).
func runGold(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: gold takes auto or status:\n%s", errUsage, goldUsage)
	}
	verb := args[0]
	if verb != "auto" && verb != "status" {
		return fmt.Errorf("%w: unknown gold command %q:\n%s", errUsage, verb, goldUsage)
	}
	fs := flag.NewFlagSet("gold "+verb, flag.ContinueOnError)
	goldFlags(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if get("project") == "" {
		return fmt.Errorf("%w: gold %s needs --project:\n%s", errUsage, verb, goldUsage)
	}
	spread := -1
	if s := get("max-spread"); s != "" {
		n, err := adjudication.ParseMaxSpread(s)
		if err != nil {
			return fmt.Errorf("%w: --max-spread: %s", errUsage, fieldMessage(err, adjudication.SpreadField))
		}
		spread = n
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
	if verb == "auto" {
		// The command line has no user: the audit log records no actor.
		flow, all := adjudication.New(db), get("all") == "true"
		var res adjudication.Consensus
		if spread >= 0 {
			res, err = flow.SetMaxSpread(ctx, p.ID, nil, spread, all)
		} else {
			res, err = flow.ApplyConsensus(ctx, p.ID, nil, all)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, res.Message())
	}
	c, err := db.CountGold(ctx, p.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%q: %d items; gold by the rule %d, by a lead %d; %d waiting for a lead, %d still being labelled, %d not judged yet (max spread %d)\n",
		p.Name, c.Items, c.Automatic, c.Adjudicated, c.Queue, c.Labelling, c.Pending, c.MaxSpread)
	return nil
}

// fieldMessage is the message of field in a validation error, or the
// error's text when it is another.
func fieldMessage(err error, field string) string {
	var ve *attune.ValidationError
	if errors.As(err, &ve) && ve.Fields[field] != "" {
		return ve.Fields[field]
	}
	return err.Error()
}
