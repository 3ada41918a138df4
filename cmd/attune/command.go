package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// readCommand parses a command's flags, refuses positional arguments and
// returns the reader of a flag's value: the prologue every command over
// one project shares.
func readCommand(fs *flag.FlagSet, e env, args []string) (get func(name string) string, err error) {
	if err := parseFlags(fs, e, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return func(name string) string { return fs.Lookup(name).Value.String() }, nil
}

// formatOf is the --format value when it is one of allowed, else a usage
// error naming them.
func formatOf(get func(string) string, allowed ...string) (string, error) {
	f := get("format")
	if !slices.Contains(allowed, f) {
		return "", fmt.Errorf("%w: --format must be %s", errUsage, strings.Join(allowed, " or "))
	}
	return f, nil
}

// openProject opens the database of the environment and finds the
// project by name; the caller closes the database.
func openProject(ctx context.Context, e env, name string) (*store.DB, *attune.Project, error) {
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	p, err := db.FindProjectByName(ctx, name)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, p, nil
}

// writeIndentedJSON writes v as indented JSON and flushes w.
func writeIndentedJSON(w *bufio.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return w.Flush()
}

// systemKeyFlag declares --system-key, whose default "" means the
// project's setting (attune.Project.SystemKey).
func systemKeyFlag(fs *flag.FlagSet) {
	fs.String("system-key", "", "the item meta key that names an item's system; left out, the project's system key (attune project update --system-key)")
}

// checkSystemKeyFlag refuses a --system-key given empty: left out, the
// project's key is read, but given it must name a meta key.
func checkSystemKeyFlag(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "system-key" && strings.TrimSpace(f.Value.String()) == "" {
			err = fmt.Errorf("%w: --system-key must name a meta key; leave it out for the project's", errUsage)
		}
	})
	return err
}
