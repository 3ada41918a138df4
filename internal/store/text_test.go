package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestUnstorableTextRefused: whatever path calls the store (a form, the
// command line), a NUL or invalid UTF-8 in a name is an attune.ErrInvalid
// naming the field, not a failed statement.
func TestUnstorableTextRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	for _, bad := range []string{"a\x00b", "a\xffb"} {
		for name, try := range map[string]func() error{
			"email": func() error {
				_, err := f.db.CreateUser(ctx, nil, store.NewUser{Email: bad + "@example.org", Role: attune.RoleAnnotator, PasswordHash: "$argon2id$x"})
				return err
			},
			"name": func() error {
				_, err := f.db.CreateUser(ctx, nil, store.NewUser{Email: "x@example.org", Name: bad, Role: attune.RoleAnnotator, PasswordHash: "$argon2id$x"})
				return err
			},
			"token name": func() error {
				_, _, err := f.db.CreateAPIToken(ctx, nil, f.lead.ID, bad, false)
				return err
			},
			"project name": func() error {
				_, err := f.db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: bad, RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
				return err
			},
			"project instructions": func() error {
				_, err := f.db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "ok", Instructions: bad, RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
				return err
			},
			"judge name": func() error {
				_, err := f.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: bad, Provider: "openai", Model: "m"})
				return err
			},
		} {
			err := try()
			var ve *attune.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%q in %s: %v, want a validation error", bad, name, err)
			}
		}
	}
}
