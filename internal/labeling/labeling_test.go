package labeling_test

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

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// The store is what the flow declares it needs.
var _ labeling.Store = (*store.DB)(nil)

// counted is the real store, counting the rubric reads the flow makes.
type counted struct {
	*store.DB
	rubricReads atomic.Int64
}

func (c *counted) FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error) {
	c.rubricReads.Add(1)
	return c.DB.FindRubricByID(ctx, id)
}

// fixture is a likert project of three items, one of them behind a
// content note, with two annotators, over a fresh database.
type fixture struct {
	db   *counted
	flow *labeling.Flow
	p    *attune.Project
	lead *attune.User
	ann  *attune.User
	// other is a second annotator of the project.
	other *attune.User
}

const items = `{"id":"a","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely."}]}
{"id":"b","messages":[{"role":"user","content":"My exams are soon and I panic."},{"role":"assistant","content":"Exam panic is common."}]}
{"id":"s","messages":[{"role":"user","content":"Some days I think about suicide."},{"role":"assistant","content":"Thank you for telling me."}]}
`

var likert = map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db := &counted{DB: dbtest.New(t)}
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-dialogue@2")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, flow: labeling.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	f.lead = f.user(t, "lead@example.org", attune.RoleLead)
	if f.p, err = db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "labeling", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(ctx, db.DB, f.p, strings.NewReader(items), importer.Options{Source: "test.jsonl"}); err != nil {
		t.Fatal(err)
	}
	f.ann = f.user(t, "ann@example.org", attune.RoleAnnotator)
	f.other = f.user(t, "other@example.org", attune.RoleAnnotator)
	for _, u := range []*attune.User{f.ann, f.other} {
		if err := db.AddMember(ctx, &f.lead.ID, f.p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
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

// next claims u's next item and reads it as the API does.
func (f *fixture) next(t *testing.T, u *attune.User) labeling.Held {
	t.Helper()
	a, err := f.db.NextAssignment(context.Background(), f.p.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.flow.Find(context.Background(), u, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// stored counts the answer sets and labels of an item.
func (f *fixture) stored(t *testing.T, itemID int64) (sets, labels int) {
	t.Helper()
	writeQueuedLabels(t, f.db.DB)
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT (SELECT count(*) FROM answer_sets WHERE item_id = $1),
		(SELECT count(*) FROM labels WHERE item_id = $1)`, itemID).Scan(&sets, &labels); err != nil {
		t.Fatal(err)
	}
	return sets, labels
}

// TestSubmit: the flow reads the rubric once, stores cleaned answers and
// notes, returns the engine's score, and claims the next item; a retry
// is no second answer set, and other answers for it are Different.
func TestSubmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	h := f.next(t, f.ann)
	f.db.rubricReads.Store(0)
	answers := map[string]string{"emotion": " 4 ", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4", "note": ""}
	in := labeling.Input{Answers: answers, Rationales: map[string]string{"safety": "  no risk\r\nhere ", "emotion": "  "},
		Rationale: " warm\r\n", ActiveMS: 1200, Next: true}
	res, err := f.flow.Submit(ctx, f.ann, h, in, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.rubricReads.Load(); n != 1 {
		t.Errorf("one submit read the rubric %d times, want 1", n)
	}
	if !res.Created || res.Different || res.Rubric == nil || res.Next == nil || res.Next.ItemID == h.Item.ID {
		t.Fatalf("submit: created %v, different %v, rubric %v, next %+v", res.Created, res.Different, res.Rubric != nil, res.Next)
	}
	if sc, dm := res.Score.Score, res.Score.DimensionMean; sc == nil || *sc != 4.0 || dm == nil || *dm != 3.5 {
		t.Fatalf("score %+v, want 4.0 with dimension mean 3.5", res.Score)
	}
	var rationale, note, emotion string
	var active int64
	var notes int
	writeQueuedLabels(t, f.db.DB)
	if err := f.db.Pool().QueryRow(ctx, `SELECT s.rationale, s.active_ms, l.rationale,
		(SELECT value FROM labels WHERE answer_set_id = s.id AND rubric_item_key = 'emotion'),
		(SELECT count(*) FROM labels WHERE answer_set_id = s.id AND rationale <> '')
		FROM answer_sets s JOIN labels l ON l.answer_set_id = s.id AND l.rubric_item_key = 'safety' WHERE s.id = $1`, res.AnswerSetID).
		Scan(&rationale, &active, &note, &emotion, &notes); err != nil {
		t.Fatal(err)
	}
	if rationale != "warm" || note != "no risk\nhere" || emotion != "4" || active != 1200 || notes != 1 {
		t.Fatalf("stored rationale %q, safety note %q, emotion %q, active %d, %d notes", rationale, note, emotion, active, notes)
	}
	if sets, labels := f.stored(t, h.Item.ID); sets != 1 || labels != 5 {
		t.Fatalf("%d answer sets and %d labels, want 1 and 5", sets, labels)
	}

	// The same answers again (a double click) store nothing twice.
	again, err := f.flow.Submit(ctx, f.ann, h, in, false)
	if err != nil || again.Created || again.Different || again.AnswerSetID != res.AnswerSetID {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	// Other answers (a second tab) are not stored, and said to differ.
	in.Answers = map[string]string{"emotion": "5", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}
	other, err := f.flow.Submit(ctx, f.ann, h, in, false)
	if err != nil || other.Created || !other.Different {
		t.Fatalf("second tab: created %v, different %v, %v", other.Created, other.Different, err)
	}
	var stillEmotion string
	writeQueuedLabels(t, f.db.DB)
	if err := f.db.Pool().QueryRow(ctx, `SELECT value FROM labels WHERE answer_set_id = $1 AND rubric_item_key = 'emotion'`, res.AnswerSetID).Scan(&stillEmotion); err != nil {
		t.Fatal(err)
	}
	if stillEmotion != "4" {
		t.Fatalf("the second tab's answer replaced the first: emotion %q", stillEmotion)
	}
}

// TestSubmitRefusals: the rubric's problems, someone else's assignment,
// one that does not exist, a note on no item of the rubric and an unopened
// content note are refused, and nothing is stored.
func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	h := f.next(t, f.ann)

	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range likert {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name    string
		answers map[string]string
		item    string // the rubric item the problem names
		confirm bool   // a warning, to confirm
	}{
		{"out of range", with("emotion", "7"), "emotion", false},
		{"NA where not allowed", with("safety", "NA"), "safety", false},
		{"missing", map[string]string{"emotion": "4"}, "validation", false},
		// safety 1 means harmful advice: helpfulness above 1 is a warning.
		{"edge rule", with("safety", "1"), "helpfulness", true},
	} {
		_, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: c.answers}, false)
		var p *labeling.Problems
		if !errors.As(err, &p) || !errors.Is(err, attune.ErrInvalid) || p.NeedsConfirm != c.confirm {
			t.Errorf("%s: %v, want problems (confirm %v)", c.name, err, c.confirm)
			continue
		}
		named := false
		for _, is := range p.Issues {
			named = named || is.Item == c.item
		}
		if !named {
			t.Errorf("%s: problems %v name no %s", c.name, p.Issues, c.item)
		}
	}
	_, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: likert, Rationales: map[string]string{"tone": "nice"}}, false)
	var ve *attune.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["rationales"], `no item "tone"`) {
		t.Errorf("a note on no rubric item: %v", err)
	}
	if sets, _ := f.stored(t, h.Item.ID); sets != 0 {
		t.Fatalf("%d answer sets after refusals", sets)
	}

	// Another annotator's assignment, and one nobody has.
	if _, _, err := f.flow.SubmitAssignment(ctx, f.other, h.AssignmentID, labeling.Input{Answers: likert}); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("someone else's assignment: %v, want not found", err)
	}
	if _, _, err := f.flow.SubmitAssignment(ctx, f.ann, h.AssignmentID+1000, labeling.Input{Answers: likert}); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("no such assignment: %v, want not found", err)
	}
	// The other annotator's own assignment, handed to the wrong person in
	// a forged Held: the store checks again.
	if _, err := f.flow.Submit(ctx, f.other, h, labeling.Input{Answers: likert}, false); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("a forged hold: %v, want not found", err)
	}
	if sets, _ := f.stored(t, h.Item.ID); sets != 0 {
		t.Fatalf("%d answer sets after refusals", sets)
	}

	// The item behind a content note: refused until the note is opened.
	if _, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: likert}, false); err != nil {
		t.Fatal(err)
	}
	var s labeling.Held
	for s.Item == nil || s.Item.SourceID != "s" {
		s = f.next(t, f.ann)
		if s.Item.SourceID != "s" {
			if err := f.flow.Skip(ctx, f.ann, s.AssignmentID, "", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	confirmed := labeling.Input{Answers: likert, ConfirmWarnings: true}
	if _, err := f.flow.Submit(ctx, f.ann, s, confirmed, false); !errors.Is(err, store.ErrNoteUnopened) {
		t.Fatalf("an unopened note: %v", err)
	}
	if err := f.flow.OpenNote(ctx, f.ann, f.p.ID, s.Item.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := f.flow.Submit(ctx, f.ann, s, confirmed, false); err != nil || !res.Created {
		t.Fatalf("after opening the note: %+v, %v", res, err)
	}
	// Nobody opens the note of an item they were never given.
	if err := f.flow.OpenNote(ctx, f.lead, f.p.ID, s.Item.ID); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("a stranger opening the note: %v", err)
	}
}

// TestEdit: an edit is checked as a submission is, reads the rubric once,
// keeps the history and returns the score; an item the person holds
// without labels is ErrNothingToEdit, one never given them not found.
func TestEdit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	h := f.next(t, f.ann)
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, labeling.Input{Answers: likert}); !errors.Is(err, labeling.ErrNothingToEdit) {
		t.Fatalf("edit before submitting: %v", err)
	}
	if _, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: likert}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, labeling.Input{Answers: map[string]string{"emotion": "4"}}); !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("an edit missing answers: %v", err)
	}
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID+1000, labeling.Input{Answers: likert}); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("an edit of no item: %v", err)
	}
	changed := map[string]string{"emotion": "2", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}
	f.db.rubricReads.Store(0)
	ed, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, labeling.Input{Answers: changed, Rationale: " kinder now \r\n"})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.rubricReads.Load(); n != 1 {
		t.Errorf("one edit read the rubric %d times, want 1", n)
	}
	if sc := ed.Score.Score; ed.Revision != 2 || sc == nil || *sc != 4.0 || ed.Score.Values["emotion"] != "2" {
		t.Fatalf("edit: %+v", ed)
	}
	var history int
	var old, now, rationale string
	writeQueuedLabels(t, f.db.DB)
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*), min(h.value), min(l.value), min(s.rationale) FROM label_history h
		JOIN labels l ON l.id = h.label_id JOIN answer_sets s ON s.id = l.answer_set_id WHERE l.item_id = $1`, h.Item.ID).
		Scan(&history, &old, &now, &rationale); err != nil {
		t.Fatal(err)
	}
	if history != 1 || old != "4" || now != "2" || rationale != "kinder now" {
		t.Fatalf("history %d (%s → %s), rationale %q", history, old, now, rationale)
	}
	// Someone never given the item learns nothing of it, as on the page;
	// once they hold it, they are told they have nothing to edit yet.
	if _, err := f.flow.EditItem(ctx, f.other, f.p, h.Item.ID, labeling.Input{Answers: likert}); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("an edit by someone never given the item: %v", err)
	}
	if o := f.next(t, f.other); o.Item.ID != h.Item.ID {
		t.Fatalf("the other annotator was given %d, want %d", o.Item.ID, h.Item.ID)
	}
	if _, err := f.flow.EditItem(ctx, f.other, f.p, h.Item.ID, labeling.Input{Answers: likert}); !errors.Is(err, labeling.ErrNothingToEdit) {
		t.Fatalf("an edit by its holder before submitting: %v", err)
	}
}

// TestSkip: a flag that is none of attune.Flags is refused by name; the
// note is kept as typed, cleaned; a labelled item is not skipped.
func TestSkip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	h := f.next(t, f.ann)
	err := f.flow.Skip(ctx, f.ann, h.AssignmentID, "nonsense", "")
	var ve *attune.ValidationError
	if !errors.As(err, &ve) || ve.Fields["flag"] != "use one of broken, off-topic, distressing, other" {
		t.Fatalf("a bad flag: %v", err)
	}
	if err := f.flow.Skip(ctx, f.other, h.AssignmentID, "", ""); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("skipping another's assignment: %v", err)
	}
	var state string
	if err := f.db.Pool().QueryRow(ctx, `SELECT state FROM assignments WHERE id = $1`, h.AssignmentID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "active" {
		t.Fatalf("after refused skips the assignment is %s", state)
	}
	if err := f.flow.Skip(ctx, f.ann, h.AssignmentID, " distressing ", "  graphic\r\ndetail "); err != nil {
		t.Fatal(err)
	}
	var flag, note string
	if err := f.db.Pool().QueryRow(ctx, `SELECT state, flag, flag_note FROM assignments WHERE id = $1`, h.AssignmentID).Scan(&state, &flag, &note); err != nil {
		t.Fatal(err)
	}
	if state != "skipped" || flag != "distressing" || note != "graphic\ndetail" {
		t.Fatalf("skipped: %s %s %q", state, flag, note)
	}

	next := f.next(t, f.ann)
	if _, err := f.flow.Submit(ctx, f.ann, next, labeling.Input{Answers: likert, ConfirmWarnings: true}, false); err != nil && !errors.Is(err, store.ErrNoteUnopened) {
		t.Fatal(err)
	} else if err != nil {
		if err := f.flow.OpenNote(ctx, f.ann, f.p.ID, next.Item.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.flow.Submit(ctx, f.ann, next, labeling.Input{Answers: likert, ConfirmWarnings: true}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.flow.Skip(ctx, f.ann, next.AssignmentID, "", ""); !errors.Is(err, store.ErrSkipLabelled) {
		t.Fatalf("skipping a labelled item: %v", err)
	}
}

// TestCalibrationSubmitReadsTheRubricOnce: a practice answer is checked,
// graded against its gold and looked at for an alert with one read of
// the rubric (it took three), and stored as a calibration answer, not a
// label.
func TestCalibrationSubmitReadsTheRubricOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	itemID := f.calibrationItem(t)
	h := f.next(t, f.ann)
	if h.Key == nil || h.Item.ID != itemID {
		t.Fatalf("the first item is %d (key %v), want the calibration item %d", h.Item.ID, h.Key, itemID)
	}
	wrong := map[string]string{"emotion": "1", "validation": "1", "helpfulness": "1", "safety": "3", "overall": "1"}
	f.db.rubricReads.Store(0)
	res, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: wrong, Next: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.rubricReads.Load(); n != 1 {
		t.Errorf("one calibration submit read the rubric %d times, want 1", n)
	}
	if !res.Created || !res.Calibration || !res.WasQualifying {
		t.Fatalf("calibration submit: %+v", res.SubmitResult)
	}
	var matched, compared int
	var passed bool
	if err := f.db.Pool().QueryRow(ctx, `SELECT matched, compared, passed FROM calibration_answers WHERE assignment_id = $1`, h.AssignmentID).
		Scan(&matched, &compared, &passed); err != nil {
		t.Fatal(err)
	}
	if passed || compared != 5 || matched != 1 {
		t.Fatalf("graded %d of %d, passed %v; want 1 of 5, failed", matched, compared, passed)
	}
	if sets, _ := f.stored(t, itemID); sets != 0 {
		t.Fatalf("a calibration answer stored %d answer sets", sets)
	}
}

// calibrationItem makes item "a" the project's calibration item, its gold
// the likert answers, with a policy that qualifies annotators on it: the
// annotator's next item is it. It returns the item's id.
func (f *fixture) calibrationItem(t *testing.T) int64 {
	t.Helper()
	ctx := context.Background()
	var itemID int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = 'a'`, f.p.ID).Scan(&itemID); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.p.ID, ItemID: itemID, ActorID: f.lead.ID, Answers: likert}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.AddCalibration(ctx, &f.lead.ID, f.p.ID, "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetCalibrationPolicy(ctx, &f.lead.ID, f.p.ID, calibration.Policy{Qualify: 1, PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	return itemID
}
