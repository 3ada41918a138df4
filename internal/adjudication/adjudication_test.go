package adjudication_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// The store is what the flow declares it needs.
var _ adjudication.Store = (*store.DB)(nil)

// counted is the real store, counting the rubric reads the flow makes.
type counted struct {
	*store.DB
	rubricReads atomic.Int64
}

func (c *counted) FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error) {
	c.rubricReads.Add(1)
	return c.DB.FindRubricByID(ctx, id)
}

const items = `{"id":"r1","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"My exams are soon and I panic."},{"role":"assistant","content":"Exam panic is common."}]}
`

type fixture struct {
	db   *counted
	flow *adjudication.Flow
	p    *attune.Project
	lead *attune.User
}

// newFixture is a likert project of two items, each labelled by two
// people whose emotion is 2 and 5: too far apart for the default maximum
// spread of 1, so both wait for a lead.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db := &counted{DB: dbtest.New(t)}
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, err := rubric.ParseRef("empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, flow: adjudication.New(db)}
	f.lead = f.user(t, "lead@example.org", attune.RoleLead)
	if f.p, err = db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "adjudication", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(ctx, db.DB, f.p, strings.NewReader(items), importer.Options{Source: "test.jsonl"}); err != nil {
		t.Fatal(err)
	}
	lab := labeling.New(db.DB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i, emotion := range []string{"2", "5"} {
		u := f.user(t, []string{"a@example.org", "b@example.org"}[i], attune.RoleAnnotator)
		if err := db.AddMember(ctx, &f.lead.ID, f.p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			a, err := db.NextAssignment(ctx, f.p.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			h, err := lab.Find(ctx, u, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			in := labeling.Input{Answers: map[string]string{"emotion": emotion, "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}, ConfirmWarnings: true}
			if _, err := lab.Submit(ctx, u, h, in, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.SettleQueued(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) user(t *testing.T, email string, role attune.Role) *attune.User {
	t.Helper()
	u, err := f.db.CreateUser(context.Background(), nil, store.NewUser{Email: email, Role: role, PasswordHash: "$argon2id$x"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (f *fixture) itemID(t *testing.T, source string) int64 {
	t.Helper()
	var id int64
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, f.p.ID, source).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// stored is the gold of an item as "key=value/method" rows and the
// number of audit events of action.
func (f *fixture) stored(t *testing.T, itemID int64, action string) (gold []string, audits int) {
	t.Helper()
	ctx := context.Background()
	rows, err := f.db.Pool().Query(ctx, `SELECT rubric_item_key || '=' || value || '/' || method FROM gold_labels WHERE item_id = $1 ORDER BY 1`, itemID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		gold = append(gold, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = $1`, action).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	return gold, audits
}

// TestSetMaxSpread: a spread above the limit is refused in the words every
// adapter shows and changes nothing; one within it is set, and the rule
// judges both items again under it (two people 3 apart stay a tie).
func TestSetMaxSpread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for _, typed := range []string{"11", "-1", "two"} {
		_, err := adjudication.ParseMaxSpread(typed)
		var ve *attune.ValidationError
		if !errors.As(err, &ve) || ve.Fields[adjudication.SpreadField] != "Enter a whole number from 0 to 10." {
			t.Fatalf("parse %q: %v", typed, err)
		}
	}
	_, err := f.flow.SetMaxSpread(ctx, f.p.ID, &f.lead.ID, 11, false)
	var ve *attune.ValidationError
	if !errors.As(err, &ve) || ve.Fields[adjudication.SpreadField] != "Enter a whole number from 0 to 10." {
		t.Fatalf("spread 11: %v", err)
	}
	if n, err := f.db.GoldMaxSpread(ctx, f.p.ID); err != nil || n != 1 {
		t.Fatalf("spread after a refusal: %d, %v", n, err)
	}
	if _, audits := f.stored(t, f.itemID(t, "r1"), "gold.set_max_spread"); audits != 0 {
		t.Fatalf("a refused spread was audited %d times", audits)
	}
	n, err := adjudication.ParseMaxSpread(" 3 ")
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.flow.SetMaxSpread(ctx, f.p.ID, &f.lead.ID, n, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 2 || res.Queued != 2 || res.MaxSpread != 3 || !res.SpreadSet {
		t.Fatalf("set 3: %+v", res)
	}
	if want := "The maximum spread is 3. The consensus rule judged 2 items: 0 got gold by the rule, 2 wait for a lead."; res.Message() != want {
		t.Fatalf("message %q, want %q", res.Message(), want)
	}
	if n, err := f.db.GoldMaxSpread(ctx, f.p.ID); err != nil || n != 3 {
		t.Fatalf("spread after set: %d, %v", n, err)
	}
	if gold, audits := f.stored(t, f.itemID(t, "r1"), "gold.set_max_spread"); audits != 1 || len(gold) != 0 {
		t.Fatalf("after set: gold %v, %d audits", gold, audits)
	}
}

// TestApplyConsensus: the rule says it had nothing new to judge once the
// labels settled their items, and judges every item again with all.
func TestApplyConsensus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	res, err := f.flow.ApplyConsensus(ctx, f.p.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 0 || res.MaxSpread != 1 || res.Message() != "The consensus rule had nothing new to judge." {
		t.Fatalf("nothing new: %+v %q", res, res.Message())
	}
	res, err = f.flow.ApplyConsensus(ctx, f.p.ID, &f.lead.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "The consensus rule judged 2 items: 0 got gold by the rule, 2 wait for a lead."; res.Message() != want {
		t.Fatalf("all: %q, want %q", res.Message(), want)
	}
	if _, audits := f.stored(t, f.itemID(t, "r1"), "gold.apply_consensus"); audits != 2 {
		t.Fatalf("%d consensus audits, want 2", audits)
	}
}

// TestAdjudicate: one read of the rubric per action; a value the rubric
// does not allow and a note too long are refused and store nothing; gold
// with an accepted consensus and a note is stored cleaned.
func TestAdjudicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := f.itemID(t, "r1")
	answers := map[string]string{"emotion": " 4 ", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	for _, c := range []struct {
		name string
		in   adjudication.Input
		item string
		want string
	}{
		{"invalid answer", adjudication.Input{Answers: map[string]string{"emotion": "9", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}}, "emotion", ""},
		{"note too long", adjudication.Input{Answers: answers, Note: strings.Repeat("é", 2001)}, "note",
			"Keep the note to 2000 characters or fewer (this one has 2001)."},
	} {
		f.db.rubricReads.Store(0)
		g, err := f.flow.Adjudicate(ctx, f.p, f.lead.ID, id, c.in)
		var p *adjudication.Problems
		if !errors.As(err, &p) || p.NeedsConfirm || !errors.Is(err, attune.ErrInvalid) {
			t.Fatalf("%s: %v", c.name, err)
		}
		found := false
		for _, is := range p.Issues {
			found = found || is.Item == c.item && (c.want == "" || is.Message == c.want)
		}
		if !found {
			t.Errorf("%s: issues %+v lack %s %q", c.name, p.Issues, c.item, c.want)
		}
		if g.Item == nil || g.Item.ID != id {
			t.Errorf("%s: checked gold %+v", c.name, g)
		}
		if n := f.db.rubricReads.Load(); n != 1 {
			t.Errorf("%s: read the rubric %d times, want 1", c.name, n)
		}
		if gold, audits := f.stored(t, id, "gold.adjudicate"); len(gold) != 0 || audits != 0 {
			t.Fatalf("%s stored %v, %d audits", c.name, gold, audits)
		}
	}
	f.db.rubricReads.Store(0)
	g, err := f.flow.Adjudicate(ctx, f.p, f.lead.ID, id, adjudication.Input{Answers: answers, Note: "  warm\r\nenough ", AcceptConsensus: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.rubricReads.Load(); n != 1 {
		t.Errorf("adjudicate read the rubric %d times, want 1", n)
	}
	if g.Note != "warm\nenough" || g.Answers["emotion"] != "4" {
		t.Fatalf("checked gold %+v", g)
	}
	gold, audits := f.stored(t, id, "gold.adjudicate")
	if audits != 1 || strings.Join(gold, " ") != "emotion=4/adjudicated helpfulness=3/adjudicated overall=3/adjudicated safety=3/adjudicated validation=3/adjudicated" {
		t.Fatalf("stored %v, %d audits", gold, audits)
	}
	var note string
	if err := f.db.Pool().QueryRow(ctx, `SELECT note FROM adjudications WHERE item_id = $1`, id).Scan(&note); err != nil {
		t.Fatal(err)
	}
	if note != "warm\nenough" {
		t.Fatalf("stored note %q", note)
	}
}
