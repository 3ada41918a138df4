package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
)

// TestKeysetPageSurvivesRemovals: a page follows the last row of the page
// before, not a count of rows, so that a row removed from an earlier page
// between two requests makes the next page skip nothing (an offset would
// skip one); a cursor of another list and a page size out of bounds are
// refused as invalid input.
func TestKeysetPageSurvivesRemovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{annotators: 3})
	all, err := db.ListMembers(ctx, f.project.ID)
	if err != nil || len(all) != 4 || all[0].Role != attune.MemberLead {
		t.Fatalf("members %+v %v", all, err)
	}
	first, next, err := db.MemberPage(ctx, f.project.ID, "", 2)
	if err != nil || len(first) != 2 || next == "" || first[0].UserID != all[0].UserID || first[1].UserID != all[1].UserID {
		t.Fatalf("first page %+v %q %v", first, next, err)
	}
	if err := db.RemoveMember(ctx, nil, f.project.ID, first[1].UserID); err != nil {
		t.Fatal(err)
	}
	rest, last, err := db.MemberPage(ctx, f.project.ID, next, 2)
	if err != nil || last != "" || len(rest) != 2 || rest[0].UserID != all[2].UserID || rest[1].UserID != all[3].UserID {
		t.Fatalf("second page %+v %q %v, want the last two of %+v", rest, last, err, all)
	}

	hooks, _, err := db.WebhookPage(ctx, f.project.ID, next, 2)
	if !errors.Is(err, attune.ErrInvalid) || hooks != nil {
		t.Errorf("a members cursor for the webhooks: %v", err)
	}
	for _, limit := range []int{0, 101} {
		if _, _, err := db.MemberPage(ctx, f.project.ID, "", limit); !errors.Is(err, attune.ErrInvalid) {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
}
