package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/attune/attune/internal/rubric"
)

func rubricFlagsHelp(fs *flag.FlagSet) {
	fs.Bool("json", false, "print JSON (list, show)")
}

const rubricUsage = `attune rubric list [--json]
attune rubric show KEY[@VERSION] [--json]   (without a version: the newest)
attune rubric validate FILE                  (checks a rubric file; stores nothing)
attune rubric add FILE                       (stores a new rubric version)`

func runRubric(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: rubric takes list, show, validate or add:\n%s", errUsage, rubricUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("rubric "+verb, flag.ContinueOnError)
	rubricFlagsHelp(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	asJSON := fs.Lookup("json").Value.String() == "true"
	oneArg := func(what string) (string, error) {
		if fs.NArg() != 1 {
			return "", fmt.Errorf("%w: rubric %s takes one %s", errUsage, verb, what)
		}
		return fs.Arg(0), nil
	}

	if verb == "validate" {
		// Validation needs no database: it is about the file alone.
		path, err := oneArg("FILE")
		if err != nil {
			return err
		}
		def, err := readRubricFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %s is a valid %s rubric with %d items (sha256 %s)\n", path, def.Ref(), def.Kind, len(def.Items), def.Hash())
		return nil
	}
	switch verb {
	case "list", "show", "add":
	default:
		return fmt.Errorf("%w: unknown rubric command %q:\n%s", errUsage, verb, rubricUsage)
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()

	switch verb {
	case "list":
		if fs.NArg() != 0 {
			return fmt.Errorf("%w: rubric list takes no arguments", errUsage)
		}
		versions, err := db.ListRubrics(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			type row struct {
				Ref     string `json:"ref"`
				Kind    string `json:"kind"`
				Title   string `json:"title"`
				Builtin bool   `json:"builtin"`
				SHA256  string `json:"sha256"`
			}
			out := []row{}
			for _, v := range versions {
				out = append(out, row{v.Ref.String(), string(v.Kind), v.Title, v.Builtin, v.SHA256})
			}
			return writeJSON(e, out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUBRIC\tKIND\tSOURCE\tTITLE")
		for _, v := range versions {
			source := "added"
			if v.Builtin {
				source = "built-in"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Ref, v.Kind, source, v.Title)
		}
		return tw.Flush()
	case "show":
		arg, err := oneArg("KEY[@VERSION]")
		if err != nil {
			return err
		}
		ref := rubric.Ref{Key: arg}
		if strings.Contains(arg, "@") {
			if ref, err = rubric.ParseRef(arg); err != nil {
				return err
			}
		}
		def, _, err := db.FindRubric(ctx, ref)
		if err != nil {
			return err
		}
		if asJSON {
			_, err := e.stdout.Write(append(def.Canonical(), '\n'))
			return err
		}
		return def.WriteText(e.stdout)
	case "add":
		path, err := oneArg("FILE")
		if err != nil {
			return err
		}
		def, err := readRubricFile(path)
		if err != nil {
			return err
		}
		added, err := db.AddRubric(ctx, nil, def, false)
		if err != nil {
			return err
		}
		if added {
			fmt.Fprintf(e.stdout, "added %s (%s, %d items)\n", def.Ref(), def.Kind, len(def.Items))
		} else {
			fmt.Fprintf(e.stdout, "%s is already stored, unchanged\n", def.Ref())
		}
	}
	return nil
}

// readRubricFile reads and checks a rubric definition file; its errors
// name the file, and the field and line the parser found wrong.
func readRubricFile(path string) (*rubric.Definition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	def, err := rubric.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return def, nil
}

func writeJSON(e env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
