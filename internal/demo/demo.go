// Package demo sets up a demonstration on an empty database: a lead, two
// annotators and a project for each built-in rubric, each with 56
// dialogues generated from templates, three simulated people's labels of
// 48 of them, gold, a calibration set, and a judge owned by the lead with
// two prompt versions run over every project, so that a newcomer sees
// attune at work — the alternative annotator test's verdict included —
// right after `make run`.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Account is a demo sign-in.
type Account struct {
	Email, Password string
	Role            attune.Role
}

type project struct {
	name, rubric, prefix, instructions string
	seed                               uint64
	// qualify is the practice items a person passes before real ones (0:
	// none), and practice what each demo annotator did with them.
	qualify  int
	practice []practice
}

var projects = []project{
	{"Demo: empathetic replies", "empathetic-dialogue@2", "demo-reply",
		"Rate the **assistant's reply** on each dimension, reading the rubric beside it. Overall is your own judgement, not the average.", 1,
		// The first demo annotator qualified, the second failed every
		// practice item.
		3, []practice{{passed: 3}, {failed: calibrationItems}}},
	{"Demo: coaching conversations", "coaching-conversation@2.0", "demo-conv",
		"Answer each criterion for the **whole conversation**. NA only where the rubric allows it.", 2,
		// The first demo annotator is one practice item in, the second
		// has not started.
		2, []practice{{passed: 1}}},
	{"Demo: empathetic understanding", "empathetic-understanding@1", "demo-eu",
		"Rate how well the **last reply** understands the user's emotions, 1 to 5.", 3, 0, nil},
}

// Demo items left in the adjudication queue for the lead, per project;
// the rest of the items the people disagree on are adjudicated by the
// seed.
const leftToAdjudicate = 4

// Demo items promoted to the calibration set, per project.
const calibrationItems = 5

// Seed creates the demo accounts and projects and returns the accounts with
// their passwords. It does nothing and returns nil when the database
// already has projects: the demo is for an empty database.
func Seed(ctx context.Context, db *store.DB) ([]Account, error) {
	existing, err := db.ListAllProjects(ctx)
	if err != nil || len(existing) > 0 {
		return nil, err
	}
	accounts := []Account{
		{LeadEmail, password.Generate(), attune.RoleLead},
		{"annotator1@attune.local", password.Generate(), attune.RoleAnnotator},
		{"annotator2@attune.local", password.Generate(), attune.RoleAnnotator},
	}
	var users []*attune.User
	for _, a := range accounts {
		hash, err := password.Hash(a.Password, password.Default)
		if err != nil {
			return nil, err
		}
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: a.Email, Role: a.Role, PasswordHash: hash})
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		users = append(users, u)
	}
	lead := users[0]
	for _, pr := range projects {
		if err := seedProject(ctx, db, pr, lead, users[1:]); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", pr.name, err)
		}
	}
	return accounts, nil
}

// seedProject creates one demo project: its items, the demo people's
// labels of most of them, gold (the consensus rule's, and the lead's
// adjudication of all but a few disagreements), a calibration set and the
// demo annotators' practice on it.
func seedProject(ctx context.Context, db *store.DB, pr project, lead *attune.User, annotators []*attune.User) error {
	ref, err := rubric.ParseRef(pr.rubric)
	if err != nil {
		return err
	}
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		return err
	}
	p, err := db.CreateProject(ctx, &lead.ID, store.NewProject{Name: pr.name, Instructions: pr.instructions,
		RubricVersionID: rv.ID, Overlap: 2, Lease: 30 * time.Minute})
	if err != nil {
		return err
	}
	items := generate(def, pr.prefix, pr.seed)
	data, err := itemsJSONL(items)
	if err != nil {
		return err
	}
	if _, err := importer.Import(ctx, db, p, bytes.NewReader(data), importer.Options{ActorID: &lead.ID, Source: pr.prefix + ".jsonl"}); err != nil {
		return err
	}
	for _, u := range annotators {
		if err := db.AddMember(ctx, &lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			return err
		}
	}
	sets := peopleAnswers(def, items, pr.seed)
	if _, err := importer.ImportLabels(ctx, db, p, bytes.NewReader(labelsCSV(def, items, sets)),
		store.LabelsImportOptions{ActorID: &lead.ID, Source: pr.prefix + "-labels.csv"}); err != nil {
		return err
	}
	// Items are stored in the file's order, so ids follow the items.
	ids, err := db.ItemIDs(ctx, p.ID, demoLabelled)
	if err != nil {
		return err
	}
	var open []int
	for n, id := range ids {
		g, err := db.FindGold(ctx, id)
		if errors.Is(err, attune.ErrNotFound) || err == nil && len(g.Answers) < len(def.Items) {
			open = append(open, n)
		} else if err != nil {
			return err
		}
	}
	for _, n := range open[:max(0, len(open)-leftToAdjudicate)] {
		answers := map[string]string{}
		for _, ri := range def.Items {
			answers[ri.Key] = string(majority(sets[n], ri.Key, items[n].truth[ri.Key]))
		}
		if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: ids[n], ActorID: lead.ID, Answers: answers,
			Note: "Adjudicated by the demo's set-up: the answer most of the people gave."}); err != nil {
			return err
		}
	}
	added := 0
	for n := 0; n < demoLabelled && added < calibrationItems; n++ {
		if slices.Contains(open[max(0, len(open)-leftToAdjudicate):], n) {
			continue
		}
		if _, err := db.AddCalibration(ctx, &lead.ID, p.ID, items[n].ID, nil); err != nil {
			return err
		}
		added++
	}
	return seedQualification(ctx, db, def, p, pr.qualify, annotators, pr.practice)
}

// Print tells the person who started attune how to sign in to the demo.
func Print(w io.Writer, base string, accounts []Account) {
	fmt.Fprintf(w, "A demo is set up: %d projects, one per built-in rubric. Demo sign-ins (shown once) at %s/login:\n", len(projects), base)
	for _, a := range accounts {
		fmt.Fprintf(w, "  %-10s %-26s %s\n", a.Role, a.Email, a.Password)
	}
	fmt.Fprintln(w)
}

// LeadEmail is the demo lead's sign-in, the owner of the demo judge.
const LeadEmail = "lead@attune.local"

// SeedJudge adds a judge backed by the demo's fake model (served by attune
// itself at baseURL, answering as SimulatedJudge), owned by the demo lead,
// with a second prompt version for each demo project's rubric, and queues
// a run of each version over every demo project, so that a newcomer sees
// judges work with no API key and can compare two prompt versions.
func SeedJudge(ctx context.Context, db *store.DB, runner *judge.Runner, policy attune.JudgePolicy, baseURL string) error {
	lead, err := db.FindUserByEmail(ctx, LeadEmail)
	if err != nil {
		return fmt.Errorf("demo: the demo lead: %w", err)
	}
	j, err := db.CreateJudge(ctx, &lead.ID, policy, store.NewJudge{Name: "Demo judge (fake model)", Provider: "openai", BaseURL: baseURL,
		Model: "fake-judge", Settings: attune.JudgeSettings{Concurrency: 16, MaxTokens: 300,
			Prices: attune.Prices{InputPerMTok: 0.15, CachedInputPerMTok: 0.075, OutputPerMTok: 0.6}}})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		return err
	}
	for _, ps := range ps {
		p, err := db.FindProjectByID(ctx, ps.ID)
		if err != nil {
			return err
		}
		def, err := db.FindRubricByID(ctx, p.RubricVersionID)
		if err != nil {
			return err
		}
		if _, err := db.CreateJudgePrompt(ctx, &lead.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: p.RubricVersionID,
			Parent: 1, Prompts: promptsV2(def)}); err != nil {
			return fmt.Errorf("demo: %s: prompt v2: %w", p.Name, err)
		}
		for _, version := range []int{1, 2} {
			run, err := db.CreateRun(ctx, &lead.ID, store.NewRun{JudgeID: j.ID, ProjectID: p.ID, PromptVersion: version})
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			if err := runner.Queue(ctx, run.ID); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
		}
	}
	return nil
}
