package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func projectFlagsHelp(fs *flag.FlagSet) {
	fs.String("name", "", "project name (create)")
	fs.String("rubric", "", "rubric version KEY@VERSION (create)")
	fs.String("overlap", strconv.Itoa(attune.DefaultOverlap), fmt.Sprintf("how many annotators label each item, 1 to %d (create)", attune.MaxOverlap))
	fs.String("lease", attune.DefaultLease.String(), "how long an annotator holds an item before it goes back, whole minutes from 1m to 24h (create)")
	fs.String("annotators", attune.PoolOfEpsilon(attune.DefaultEpsilon).Key, "who the annotators are, which sets the alt-test's ε: experts (0.2), trained (0.15), crowd (0.1) or custom with --epsilon (create, set)")
	fs.String("epsilon", "", "a custom alt-test ε between 0 and 1, with --annotators custom or alone (create, set)")
	fs.String("system-key", "", fmt.Sprintf("the item meta key that names an item's system, at most %d characters (create, set; default %s)", attune.MaxSystemKey, attune.DefaultSystemKey))
	fs.String("evidence", "", "turn evidence: off (no turns are marked), optional (a person may mark the turns where a failing answer fails) or required (every failing answer names at least one turn) (create, set; default optional)")
	fs.String("probe-retest", "", fmt.Sprintf("the probes' retest threshold: the largest share of items whose answer may change across the asks (create, set; default %v)", probe.DefaultRetestChange))
	fs.String("probe-perturb", "", fmt.Sprintf("the probes' perturbation threshold: the largest share of items whose answer may move under one rewrite (create, set; default %v)", probe.DefaultPerturbMove))
	fs.String("probe-min-items", "", fmt.Sprintf("the fewest items a probe judges on (create, set; default %d)", probe.DefaultMinItems))
	fs.String("probe-length", "", fmt.Sprintf("the probes' length threshold: the largest difference of slopes per doubling of reply length (create, set; default %v)", probe.DefaultLengthSlope))
	fs.String("instructions-file", "", "Markdown file of instructions for annotators (create)")
	fs.String("lead", "", "email of a lead to put in charge (create)")
	fs.String("project", "", "project name (set, add-member, remove-member, people, requalify)")
	fs.String("email", "", "the person's email (add-member, remove-member, requalify)")
	fs.String("role", "annotator", "annotator or lead (add-member)")
	fs.String("attempt", "", "the person's current qualification attempt, as people shows it; refused when it is no longer current (requalify; default: the current one)")
	fs.Bool("json", false, "print JSON (list, show, people)")
}

const projectUsage = `attune project create --name N --rubric KEY@VERSION [--overlap K] [--lease 30m] [--annotators experts|trained|crowd|custom] [--epsilon E] [--system-key KEY] [--evidence off|optional|required] [--probe-retest S] [--probe-perturb S] [--probe-min-items N] [--probe-length D] [--instructions-file F] [--lead EMAIL]
attune project set --project N [--annotators experts|trained|crowd|custom] [--epsilon E] [--system-key KEY] [--evidence off|optional|required] [--probe-retest S] [--probe-perturb S] [--probe-min-items N] [--probe-length D]
attune project list [--json]
attune project show NAME [--json]
attune project add-member --project N --email E [--role annotator|lead]
attune project remove-member --project N --email E
attune project people --project N [--json]
attune project requalify --project N --email E [--attempt N]`

// projectFlagOf names the flag of a project setting whose field name is
// not the flag's.
var projectFlagOf = map[string]string{"system_key": "system-key", "evidence_policy": "evidence",
	probe.FieldRetestChange: "probe-retest", probe.FieldPerturbMove: "probe-perturb", probe.FieldMinItems: "probe-min-items", probe.FieldLengthSlope: "probe-length"}

func runProject(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: project takes create, set, list, show, add-member, remove-member, people or requalify:\n%s", errUsage, projectUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("project "+verb, flag.ContinueOnError)
	projectFlagsHelp(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch verb {
	case "create", "set", "list", "show", "add-member", "remove-member", "people", "requalify":
	default:
		return fmt.Errorf("%w: unknown project command %q:\n%s", errUsage, verb, projectUsage)
	}
	if verb != "show" && fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()

	switch verb {
	case "create":
		if get("name") == "" || get("rubric") == "" {
			return fmt.Errorf("%w: project create needs --name and --rubric", errUsage)
		}
		ref, err := rubric.ParseRef(get("rubric"))
		if err != nil {
			return err
		}
		_, rv, err := db.FindRubric(ctx, ref)
		if err != nil {
			return err
		}
		// Read here, checked with the web form's rules (and by the store).
		unread := map[string]string{}
		overlap, err := strconv.Atoi(get("overlap"))
		if err != nil {
			unread["overlap"] = attune.ProjectFieldMessage("overlap")
		}
		lease, err := time.ParseDuration(get("lease"))
		if err != nil {
			unread["lease"] = attune.ProjectFieldMessage("lease")
		}
		epsilon, ok, msg := readEpsilonFlags(fs)
		if !ok {
			unread["epsilon"] = msg
		}
		var instructions string
		if f := get("instructions-file"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			instructions = string(b)
		}
		// Checked here as well as by the store, which reads a zero ε as
		// the default: a --epsilon 0 must be refused, not replaced.
		systemKey := attune.DefaultSystemKey
		if given["system-key"] {
			systemKey = strings.TrimSpace(get("system-key"))
		}
		evidence, err := evidenceFlag(fs, given)
		if err != nil {
			unread["evidence_policy"] = err.Error()
		}
		thresholds, bad := thresholdFlags(fs, given, probe.DefaultThresholds())
		maps.Copy(unread, bad)
		check := attune.Project{Name: strings.TrimSpace(get("name")), Instructions: instructions, Overlap: overlap, Lease: lease, Epsilon: epsilon, SystemKey: systemKey,
			EvidencePolicy: evidence}
		if err := check.Validate(); err != nil || len(unread) > 0 {
			var v *attune.ValidationError
			if !errors.As(err, &v) {
				v = &attune.ValidationError{Fields: map[string]string{}}
			}
			maps.Copy(v.Fields, unread)
			return flagErrors(v, projectFlagOf)
		}
		var lead *int64
		if email := get("lead"); email != "" {
			u, err := findUserByEmail(ctx, db, email)
			if err != nil {
				return err
			}
			lead = &u.ID
		}
		p, err := db.CreateProject(ctx, lead, store.NewProject{Name: strings.TrimSpace(get("name")), Instructions: instructions,
			RubricVersionID: rv.ID, Overlap: overlap, Lease: lease, Epsilon: epsilon, SystemKey: systemKey,
			EvidencePolicy: evidence, ProbeThresholds: thresholds})
		if err != nil {
			return flagErrors(err, nil)
		}
		fmt.Fprintf(e.stdout, "created project %q (id %d, %s, %d per item)\n", p.Name, p.ID, p.RubricRef, p.Overlap)
	case "set":
		if get("project") == "" {
			return fmt.Errorf("%w: project set needs --project", errUsage)
		}
		p, err := db.FindProjectByName(ctx, get("project"))
		if err != nil {
			return err
		}
		// Only what is given changes; a set naming neither setting sets
		// the ε of --annotators' default, as it did before there were two.
		thresholdsGiven := slices.ContainsFunc(probe.ThresholdFields, func(f string) bool { return given[projectFlagOf[f]] })
		setEpsilon := given["annotators"] || given["epsilon"] || !(given["system-key"] || given["evidence"] || thresholdsGiven)
		check := *p
		if setEpsilon {
			epsilon, ok, msg := readEpsilonFlags(fs)
			if !ok {
				return flagErrors(&attune.ValidationError{Fields: map[string]string{"epsilon": msg}}, nil)
			}
			check.Epsilon = epsilon
		}
		if given["system-key"] {
			check.SystemKey = strings.TrimSpace(get("system-key"))
		}
		if given["evidence"] {
			evidence, err := evidenceFlag(fs, given)
			if err != nil {
				return flagErrors(&attune.ValidationError{Fields: map[string]string{"evidence_policy": err.Error()}}, projectFlagOf)
			}
			check.EvidencePolicy = evidence
		}
		stored, err := db.ProbeThresholds(ctx, p.ID)
		if err != nil {
			return err
		}
		thresholds, bad := thresholdFlags(fs, given, stored)
		// The store reads a zero ε and an empty key as "leave it": check
		// them here.
		if err := check.Validate(); err != nil || len(bad) > 0 {
			var v *attune.ValidationError
			if !errors.As(err, &v) {
				v = &attune.ValidationError{Fields: map[string]string{}}
			}
			maps.Copy(v.Fields, bad)
			return flagErrors(v, projectFlagOf)
		}
		err = db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Instructions: p.Instructions,
			Overlap: p.Overlap, Lease: p.Lease, Epsilon: check.Epsilon, SystemKey: check.SystemKey,
			EvidencePolicy: check.EvidencePolicy, ProbeThresholds: thresholds})
		if err != nil {
			return flagErrors(err, projectFlagOf)
		}
		if thresholds != nil {
			stored = *thresholds
		}
		fmt.Fprintf(e.stdout, "project %q: alt-test ε %s (%s), system key %q, turn evidence %s, %s\n", p.Name, strconv.FormatFloat(check.Epsilon, 'f', -1, 64), attune.PoolOfEpsilon(check.Epsilon).Label, check.SystemKey, check.Evidence(), thresholdsLine(stored))
	case "list":
		ps, err := db.ListAllProjects(ctx)
		if err != nil {
			return err
		}
		if get("json") == "true" {
			type row struct {
				ID       int64  `json:"id"`
				Name     string `json:"name"`
				Rubric   string `json:"rubric"`
				Status   string `json:"status"`
				Overlap  int    `json:"overlap"`
				Items    int    `json:"items"`
				Complete int    `json:"complete"`
			}
			out := []row{}
			for _, p := range ps {
				out = append(out, row{p.ID, p.Name, p.RubricRef, string(p.Status), p.Overlap, p.Items, p.Complete})
			}
			return writeJSON(e, out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tRUBRIC\tSTATUS\tOVERLAP\tITEMS\tCOMPLETE")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", p.Name, p.RubricRef, p.Status, p.Overlap, p.Items, p.Complete)
		}
		return tw.Flush()
	case "show":
		if fs.NArg() == 0 {
			return fmt.Errorf("%w: project show takes one project name", errUsage)
		}
		// Flags may follow the name: parse what comes after it too.
		name := fs.Arg(0)
		if err := parseFlags(fs, e, fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: project show takes one project name, got also %q", errUsage, fs.Args())
		}
		p, err := db.FindProjectByName(ctx, name)
		if err != nil {
			return err
		}
		return showProject(ctx, e, db, p, get("json") == "true")
	case "add-member", "remove-member":
		if get("project") == "" || get("email") == "" {
			return fmt.Errorf("%w: project %s needs --project and --email", errUsage, verb)
		}
		p, err := db.FindProjectByName(ctx, get("project"))
		if err != nil {
			return err
		}
		u, err := findUserByEmail(ctx, db, get("email"))
		if err != nil {
			return err
		}
		if verb == "remove-member" {
			if err := db.RemoveMember(ctx, nil, p.ID, u.ID); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "removed %s from %q\n", u.Email, p.Name)
			return nil
		}
		role := attune.MemberRole(get("role"))
		if role != attune.MemberAnnotator && role != attune.MemberLead {
			return fmt.Errorf("--role must be annotator or lead, not %q", role)
		}
		if err := db.AddMember(ctx, nil, p.ID, u.ID, role); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s is %s on %q\n", u.Email, role, p.Name)
	case "people":
		if get("project") == "" {
			return fmt.Errorf("%w: project people needs --project", errUsage)
		}
		p, err := db.FindProjectByName(ctx, get("project"))
		if err != nil {
			return err
		}
		people, err := db.ListPeople(ctx, p.ID)
		if err != nil {
			return err
		}
		return writePeople(e, people, get("json") == "true")
	case "requalify":
		if get("project") == "" || get("email") == "" {
			return fmt.Errorf("%w: project requalify needs --project and --email", errUsage)
		}
		return requalify(ctx, e, db, get("project"), get("email"), get("attempt"))
	}
	return nil
}

// onFlag is a store's refusal of what a flag gave, written under the
// flag's name with the message meant for people (not the store's
// wrapping); it is still the store's error for errors.Is.
type onFlag struct {
	flag string
	err  error
}

func (e *onFlag) Error() string {
	msg := attune.PublicMessage(e.err)
	if msg == "" {
		msg = e.err.Error()
	}
	return "--" + e.flag + ": " + msg
}

func (e *onFlag) Unwrap() error { return e.err }

// writePeople prints a project's annotators with their status, as the
// people page shows them.
func writePeople(e env, people []store.Person, asJSON bool) error {
	if asJSON {
		type row struct {
			Email         string   `json:"email"`
			Name          string   `json:"name"`
			Qualification string   `json:"qualification"`
			Attempt       int      `json:"attempt"`
			Answered      int      `json:"answered"`
			Passed        int      `json:"passed"`
			Submitted     int      `json:"submitted"`
			Paused        bool     `json:"paused"`
			DriftingOn    []string `json:"drifting_on"`
			Alert         string   `json:"alert"`
		}
		out := []row{}
		for _, p := range people {
			out = append(out, row{p.Email, p.Name, string(p.Qualification), p.Attempt.Number, p.Attempt.Answered, p.Attempt.Passed,
				p.Submitted, p.Paused, p.Calibration.DriftingOn, p.Alert})
		}
		return writeJSON(e, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tQUALIFICATION\tATTEMPT\tPASSED\tANSWERED\tSUBMITTED\tQUEUE\tCALIBRATION")
	for _, p := range people {
		queue := "open"
		if p.Paused {
			queue = "paused"
		}
		drift := "steady"
		if p.Calibration.Drifting {
			drift = "drifting on " + strings.Join(p.Calibration.DriftingOn, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", p.Email, p.Qualification, p.Attempt.Number, p.Attempt.Passed, p.Attempt.Answered,
			p.Submitted, queue, drift)
	}
	return tw.Flush()
}

// requalify starts a new qualification attempt for an annotator, as a
// lead does on the people page. Without --attempt it is their current
// one, read first. Like the other commands of the operator at the
// machine, it is audited with no account as actor.
func requalify(ctx context.Context, e env, db *store.DB, projectName, email, attemptFlag string) error {
	p, err := db.FindProjectByName(ctx, projectName)
	if err != nil {
		return err
	}
	u, err := findUserByEmail(ctx, db, email)
	if err != nil {
		return err
	}
	var attempt int
	if attemptFlag != "" {
		if attempt, err = strconv.Atoi(attemptFlag); err != nil {
			return flagErrors(attune.Invalid("attempt", fmt.Sprintf("%q is not a whole number: give the person's current attempt, as project people shows it", attemptFlag)), nil)
		}
	} else {
		person, err := db.FindPerson(ctx, p.ID, u.ID)
		if err != nil {
			return &onFlag{"email " + u.Email, err}
		}
		attempt = person.Attempt.Number
	}
	n, err := db.Requalify(ctx, nil, p.ID, u.ID, attempt)
	switch {
	case errors.Is(err, attune.ErrNotFound):
		return &onFlag{"email " + u.Email, err}
	case errors.Is(err, attune.ErrConflict):
		return &onFlag{"attempt", err}
	case err != nil:
		return flagErrors(err, map[string]string{"member": "email"})
	}
	fmt.Fprintf(e.stdout, "%s on %q: attempt %d begins; the practice items are served again\n", u.Email, p.Name, n)
	return nil
}

// projectJSON is `attune project show --json`.
type projectJSON struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Rubric  string `json:"rubric"`
	Status  string `json:"status"`
	Overlap int    `json:"overlap"`
	Lease   string `json:"lease"`
	// Epsilon is the alt-test's ε and Pool who it says the annotators
	// are (experts, trained, crowd or custom).
	Epsilon   float64 `json:"epsilon"`
	Pool      string  `json:"annotator_pool"`
	SystemKey string  `json:"system_key"`
	// EvidencePolicy is the turn evidence setting: off, optional or
	// required.
	EvidencePolicy string `json:"evidence_policy"`
	// ProbeThresholds are the project's probe thresholds, the defaults
	// until a lead sets others.
	ProbeThresholds probe.Thresholds `json:"probe_thresholds"`
	Items           int              `json:"items"`
	Complete        int              `json:"complete"`
	// ItemsByLabels[n] is how many items have n human labels, n = 0..overlap.
	ItemsByLabels []int `json:"items_by_labels"`
	InProgress    int   `json:"in_progress"`
	LastHour      int   `json:"labels_last_hour"`
	// OutOfPool counts the items a lead took out of the pool, which the
	// counts above leave out.
	OutOfPool  int             `json:"out_of_pool"`
	Members    []memberJSON    `json:"members"`
	Annotators []annotatorJSON `json:"annotators"`
}

type memberJSON struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

type annotatorJSON struct {
	Email         string  `json:"email"`
	Submitted     int     `json:"submitted"`
	Skipped       int     `json:"skipped"`
	LastHour      int     `json:"last_hour"`
	MedianSeconds float64 `json:"median_seconds_per_item"`
}

func showProject(ctx context.Context, e env, db *store.DB, p *attune.Project, asJSON bool) error {
	pr, err := db.Progress(ctx, p.ID)
	if err != nil {
		return err
	}
	members, err := db.ListMembers(ctx, p.ID)
	if err != nil {
		return err
	}
	thresholds, err := db.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return err
	}
	out := projectJSON{ID: p.ID, Name: p.Name, Rubric: p.RubricRef, Status: string(p.Status), Overlap: p.Overlap,
		Lease: p.Lease.String(), Epsilon: p.Epsilon, Pool: attune.PoolOfEpsilon(p.Epsilon).Key, SystemKey: p.SystemKey, EvidencePolicy: string(p.Evidence()), ProbeThresholds: thresholds, Items: pr.Items, Complete: pr.Complete, ItemsByLabels: pr.ByLabels, InProgress: pr.Active,
		LastHour: pr.LastHour, OutOfPool: pr.Pulled, Members: []memberJSON{}, Annotators: []annotatorJSON{}}
	for _, m := range members {
		out.Members = append(out.Members, memberJSON{m.Email, string(m.Role)})
	}
	for _, a := range pr.Annotators {
		out.Annotators = append(out.Annotators, annotatorJSON{a.Email, a.Submitted, a.Skipped, a.LastHour, a.MedianActive.Seconds()})
	}
	if asJSON {
		return writeJSON(e, out)
	}
	fmt.Fprintf(e.stdout, "%s (id %d)\n  rubric %s · %s · %d per item · lease %s · alt-test ε %s (%s) · system key %q · turn evidence %s\n  %s\n  %d items, %d complete, %d in progress, %d labels in the last hour\n",
		p.Name, p.ID, p.RubricRef, p.Status, p.Overlap, p.Lease, strconv.FormatFloat(p.Epsilon, 'f', -1, 64), attune.PoolOfEpsilon(p.Epsilon).Label, p.SystemKey, p.Evidence(), thresholdsLine(thresholds), pr.Items, pr.Complete, pr.Active, pr.LastHour)
	if pr.Pulled > 0 {
		fmt.Fprintf(e.stdout, "  %d out of the pool (not counted above)\n", pr.Pulled)
	}
	for n, c := range pr.ByLabels {
		fmt.Fprintf(e.stdout, "  %2d labels: %d items\n", n, c)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  MEMBER\tROLE\tSUBMITTED\tSKIPPED\tLAST HOUR\tMEDIAN TIME")
	byEmail := map[string]attune.AnnotatorProgress{}
	for _, a := range pr.Annotators {
		byEmail[a.Email] = a
	}
	for _, m := range members {
		a := byEmail[m.Email]
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\n", m.Email, m.Role, a.Submitted, a.Skipped, a.LastHour, a.MedianActive.Round(time.Second))
	}
	return tw.Flush()
}

// readEpsilonFlags reads the alt-test's ε from --annotators and
// --epsilon; --epsilon alone is a custom ε.
func readEpsilonFlags(fs *flag.FlagSet) (float64, bool, string) {
	annotators, custom := fs.Lookup("annotators").Value.String(), fs.Lookup("epsilon").Value.String()
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "annotators" })
	switch {
	case custom != "" && !given:
		annotators = attune.AnnotatorsCustom
	case custom != "" && annotators != attune.AnnotatorsCustom:
		return 0, false, "Give --epsilon with --annotators custom, or leave --annotators out."
	}
	return attune.ReadEpsilon(annotators, custom)
}

func findUserByEmail(ctx context.Context, db *store.DB, email string) (*attune.User, error) {
	norm, err := attune.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	u, err := db.FindUserByEmail(ctx, norm)
	if errors.Is(err, attune.ErrNotFound) {
		return nil, fmt.Errorf("no account has the email %s", norm)
	}
	return u, err
}

func importFlags(fs *flag.FlagSet) {
	fs.String("project", "", "the project to import into, by name (required)")
	fs.Bool("update", false, "replace the content of items whose id exists with different content (only items without labels)")
	fs.String("format", "", "jsonl or csv; detected from the content when not given")
}

func runImport(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	importFlags(fs)
	// Accept flags before and after FILE.
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 {
		if err := parseFlags(fs, e, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: import takes one FILE, got also %q", errUsage, fs.Args())
		}
	}
	if len(rest) == 0 || fs.Lookup("project").Value.String() == "" {
		return fmt.Errorf("%w: attune import --project NAME FILE", errUsage)
	}
	format := dataset.Format(fs.Lookup("format").Value.String())
	if format != "" && format != dataset.JSONL && format != dataset.CSV {
		return fmt.Errorf("%w: --format must be jsonl or csv", errUsage)
	}
	path := rest[0]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, fs.Lookup("project").Value.String())
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := importer.Import(ctx, db, p, f, importer.Options{Source: path, Format: format, Update: fs.Lookup("update").Value.String() == "true"})
	if err != nil {
		var le *attune.LineErrors
		if errors.As(err, &le) {
			fmt.Fprintln(e.stderr, le.Error())
			return fmt.Errorf("%s: nothing was imported; fix the lines above and import again", path)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "imported %s into %q: %d new, %d updated, %d unchanged (%d read in %s)\n",
		path, p.Name, res.Inserted, res.Updated, res.Unchanged, res.Read, time.Since(start).Round(time.Millisecond))
	return nil
}

func tokenFlags(fs *flag.FlagSet) {
	fs.String("email", "", "whose token (required)")
	fs.String("name", "", "what the token is for (create)")
	fs.Bool("read-only", false, "the token may only read: the API refuses it every method but GET (create)")
	fs.Int64("id", 0, "the token to revoke (revoke)")
}

func runToken(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: token takes create, list or revoke", errUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("token "+verb, flag.ContinueOnError)
	tokenFlags(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	if verb != "create" && verb != "list" && verb != "revoke" {
		return fmt.Errorf("%w: unknown token command %q", errUsage, verb)
	}
	if fs.Lookup("email").Value.String() == "" {
		return fmt.Errorf("%w: token %s needs --email", errUsage, verb)
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	u, err := findUserByEmail(ctx, db, fs.Lookup("email").Value.String())
	if err != nil {
		return err
	}
	switch verb {
	case "create":
		token, t, err := db.CreateAPIToken(ctx, nil, u.ID, fs.Lookup("name").Value.String(), fs.Lookup("read-only").Value.String() == "true")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "token %d for %s (shown only once; use it as: Authorization: Bearer TOKEN)\n", t.ID, u.Email)
		fmt.Fprintln(e.stdout, token)
	case "list":
		ts, err := db.ListAPITokens(ctx, u.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tACCESS\tSTATUS")
		for _, t := range ts {
			status := "active"
			if t.RevokedAt != nil {
				status = "revoked"
			}
			access := "read-write"
			if t.ReadOnly {
				access = "read-only"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s…\t%s\t%s\t%s\n", t.ID, t.Name, t.Prefix, t.CreatedAt.UTC().Format("2006-01-02"), access, status)
		}
		return tw.Flush()
	case "revoke":
		id, _ := strconv.ParseInt(fs.Lookup("id").Value.String(), 10, 64)
		if id == 0 {
			return fmt.Errorf("%w: token revoke needs --id", errUsage)
		}
		if err := db.RevokeAPIToken(ctx, nil, u.ID, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "token %d revoked\n", id)
	}
	return nil
}

// thresholdFlags reads the probe threshold flags given over base: nil when
// none is given; otherwise the thresholds they come to and the messages
// (by setting name) of those that are not numbers or out of range, as
// probe.ReadThresholds and probe.Thresholds.Validate say.
func thresholdFlags(fs *flag.FlagSet, given map[string]bool, base probe.Thresholds) (*probe.Thresholds, map[string]string) {
	typed := map[string]string{}
	for _, f := range probe.ThresholdFields {
		if name := projectFlagOf[f]; given[name] {
			typed[f] = fs.Lookup(name).Value.String()
		}
	}
	if len(typed) == 0 {
		return nil, nil
	}
	t, bad := probe.ReadThresholds(base, typed)
	var v *attune.ValidationError
	if errors.As(t.Validate(), &v) {
		for f, msg := range v.Fields {
			if _, unread := bad[f]; !unread {
				bad[f] = msg
			}
		}
	}
	return &t, bad
}

// thresholdsLine says a project's probe thresholds.
func thresholdsLine(t probe.Thresholds) string {
	return fmt.Sprintf("probes: retest at most %v changed, each rewrite at most %v moved, on at least %d items, length difference at most %v",
		t.RetestChange, t.PerturbMove, t.MinItems, t.LengthSlope)
}

// evidenceFlag reads --evidence: left out, "" (the store's default on
// create, the stored setting on set); given, it must be a setting, which
// Validate checks, and given empty it is refused with Validate's message
// rather than read as "leave it".
func evidenceFlag(fs *flag.FlagSet, given map[string]bool) (rubric.EvidencePolicy, error) {
	if !given["evidence"] {
		return "", nil
	}
	v := rubric.EvidencePolicy(strings.TrimSpace(fs.Lookup("evidence").Value.String()))
	if v == "" {
		return "", errors.New(attune.ProjectFieldMessage("evidence_policy"))
	}
	return v, nil
}
