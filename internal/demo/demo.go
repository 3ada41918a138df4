// Package demo sets up a small demonstration on an empty database: a lead,
// two annotators and a project for each built-in rubric, with a handful of
// dialogues written for the demo, so that a newcomer sees attune at work
// right after `make run`.
package demo

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

//go:embed *.jsonl
var files embed.FS

// Account is a demo sign-in.
type Account struct {
	Email, Password string
	Role            attune.Role
}

type project struct {
	name, rubric, file, instructions string
}

var projects = []project{
	{"Demo: empathetic replies", "empathetic-dialogue@2", "replies.jsonl",
		"Rate the **assistant's reply** on each dimension, reading the rubric beside it. Overall is your own judgement, not the average."},
	{"Demo: coaching conversations", "coaching-conversation@2.0", "conversations.jsonl",
		"Answer each criterion for the **whole conversation**. NA only where the rubric allows it."},
	{"Demo: empathetic understanding", "empathetic-understanding@1", "dialogues.jsonl",
		"Rate how well the **last reply** understands the user's emotions, 1 to 5."},
}

// Seed creates the demo accounts and projects and returns the accounts with
// their passwords. It does nothing and returns nil when the database
// already has projects: the demo is for an empty database.
func Seed(ctx context.Context, db *store.DB) ([]Account, error) {
	existing, err := db.ListAllProjects(ctx)
	if err != nil || len(existing) > 0 {
		return nil, err
	}
	accounts := []Account{
		{"lead@attune.local", password.Generate(), attune.RoleLead},
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
		ref, _ := rubric.ParseRef(pr.rubric)
		_, rv, err := db.FindRubric(ctx, ref)
		if err != nil {
			return nil, err
		}
		p, err := db.CreateProject(ctx, &lead.ID, store.NewProject{Name: pr.name, Instructions: pr.instructions,
			RubricVersionID: rv.ID, Overlap: 2, Lease: 30 * time.Minute})
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		data, err := files.ReadFile(pr.file)
		if err != nil {
			return nil, err
		}
		if _, err := importer.Import(ctx, db, p, bytes.NewReader(data), importer.Options{ActorID: &lead.ID, Source: "demo/" + pr.file}); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", pr.file, err)
		}
		for _, u := range users[1:] {
			if err := db.AddMember(ctx, &lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
				return nil, err
			}
		}
	}
	return accounts, nil
}

// Print tells the person who started attune how to sign in to the demo.
func Print(w io.Writer, base string, accounts []Account) {
	fmt.Fprintf(w, "A demo is set up: %d projects, one per built-in rubric. Demo sign-ins (shown once) at %s/login:\n", len(projects), base)
	for _, a := range accounts {
		fmt.Fprintf(w, "  %-10s %-26s %s\n", a.Role, a.Email, a.Password)
	}
	fmt.Fprintln(w)
}

// SeedJudge adds a judge backed by the demo's fake model (served by attune
// itself at baseURL) and queues a run of it over every demo project, so a
// newcomer sees judges work with no API key.
func SeedJudge(ctx context.Context, db *store.DB, runner *judge.Runner, policy attune.JudgePolicy, baseURL string) error {
	j, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: "Demo judge (fake model)", Provider: "openai", BaseURL: baseURL,
		Model: "fake-judge", Settings: attune.JudgeSettings{Concurrency: 4, MaxTokens: 300,
			Prices: attune.Prices{InputPerMTok: 0.15, CachedInputPerMTok: 0.075, OutputPerMTok: 0.6}}})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if err := runner.Queue(ctx, run.ID); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}
