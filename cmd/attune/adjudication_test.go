package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// goldRows are the rows the gold flows write in a project: its maximum
// spread, its gold and the audit entries of the flows, as web's test of
// the same name reads them.
func goldRows(t *testing.T, db *store.DB, projectID int64) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var spread int
	if err := db.Pool().QueryRow(ctx, `SELECT gold_max_spread FROM projects WHERE id = $1`, projectID).Scan(&spread); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "spread %d\n", spread)
	for _, q := range []string{
		`SELECT i.source_id || ' ' || g.rubric_item_key || '=' || g.value || '/' || g.method
		 FROM gold_labels g JOIN items i ON i.id = g.item_id WHERE g.project_id = $1 ORDER BY 1`,
		`SELECT action || ' ' || count(*) FROM audit_events WHERE project_id = $1 AND action LIKE 'gold.%' GROUP BY action ORDER BY 1`,
	} {
		rows, err := db.Pool().Query(ctx, q, projectID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// TestAdjudicationFlowsSameEverywhere: the command line's share of web's
// test of the same name, with its inputs (the command line sets no gold by
// hand and has no annotators, so it has no adjudication cases): applying
// the rule and setting the maximum spread say what the page says and
// leave the rows the page and the API leave, without an actor.
func TestAdjudicationFlowsSameEverywhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		ok    bool
		want  string // the output, or the error
		delta string // the rows added
	}{
		{"apply consensus", nil, true, "The consensus rule had nothing new to judge.\n", "gold.apply_consensus 1\n"},
		{"set max spread", []string{"--max-spread", "3"}, true,
			"The maximum spread is 3. The consensus rule judged 2 items: 0 got gold by the rule, 2 wait for a lead.\n",
			"gold.apply_consensus 1\ngold.set_max_spread 1\n"},
		{"set max spread above the limit", []string{"--max-spread", "11"}, false,
			"usage error: --max-spread: Enter a whole number from 0 to 10.", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL, db, p := labelledForGold(t)
			before := goldRows(t, db, p.ID)
			var out strings.Builder
			err := run(ctx, append([]string{"gold", "auto", "--project", "Pilot"}, c.args...), envFor(dbURL), strings.NewReader(""), &out, &out)
			after := goldRows(t, db, p.ID)
			switch {
			case c.ok && err != nil:
				t.Fatalf("%v\n%s", err, out.String())
			case c.ok && !strings.HasPrefix(out.String(), c.want):
				t.Fatalf("output %q, want it to start %q", out.String(), c.want)
			case !c.ok && (err == nil || !errors.Is(err, errUsage) || err.Error() != c.want):
				t.Fatalf("error %v, want %q", err, c.want)
			}
			spread := "spread 1\n"
			if c.name == "set max spread" {
				spread = "spread 3\n"
			}
			if want := spread + strings.TrimPrefix(before, "spread 1\n") + c.delta; after != want {
				t.Fatalf("rows:\n%s\nwant\n%s", after, want)
			}
		})
	}
}

// labelledForGold is the web test's project made on the command line: a
// likert project "Pilot" of two replies, each labelled by two people 3
// apart on emotion, settled (both wait for a lead). It returns the
// database's URL, the store over it and the project.
func labelledForGold(t *testing.T) (string, *store.DB, *attune.Project) {
	t.Helper()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	emails := []string{"ann@example.org", "bob@example.org"}
	newPilot(t, env, twoReplies, emails...)
	db, p := openPilot(t, dbURL)
	labelEach(t, db, p, emails, func(i int, u *attune.User, a *attune.Assignment, _ *attune.Item) {
		answers := map[string]string{"emotion": []string{"2", "5"}[i], "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
		if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := db.SettleQueued(ctx); err != nil {
		t.Fatal(err)
	}
	return dbURL, db, p
}
