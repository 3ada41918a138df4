package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/attune/attune/internal/gold"

	"github.com/attune/attune/internal/store"
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
		n, problem := gold.ParseMaxSpread(s)
		if problem != "" {
			return fmt.Errorf("%w: --max-spread: %s", errUsage, problem)
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
		if spread >= 0 {
			if err := db.SetGoldMaxSpread(ctx, nil, p.ID, spread); err != nil {
				return err
			}
		}
		res, err := db.ApplyConsensus(ctx, p.ID, store.ConsensusOptions{All: get("all") == "true"})
		if err != nil {
			return err
		}
		waits := "wait"
		if res.Queued == 1 {
			waits = "waits"
		}
		fmt.Fprintf(e.stdout, "judged %d items: %d got gold by the rule, %d %s for a lead\n", res.Items, res.Automatic, res.Queued, waits)
	}
	c, err := db.CountGold(ctx, p.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%q: %d items; gold by the rule %d, by a lead %d; %d waiting for a lead, %d still being labelled, %d not judged yet (max spread %d)\n",
		p.Name, c.Items, c.Automatic, c.Adjudicated, c.Queue, c.Labelling, c.Pending, c.MaxSpread)
	return nil
}
