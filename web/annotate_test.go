package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/web"
)

// labelling is a project set up for the workspace: a lead, annotators and
// imported dialogues.
type labelling struct {
	a    *app
	p    *attune.Project
	lead *attune.User
	anns []*attune.User
}

type labellingOpts struct {
	rubric     string // default empathetic-dialogue@2
	overlap    int    // default 1
	items      string // JSONL; default two replies
	annotators int    // default 1
	opts       []func(*web.Options)
}

// replies are two single replies for reply-level rubrics.
const replies = `{"id":"r1","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely. What do you miss most?"}]}
{"id":"r2","messages":[{"role":"user","content":"My exams are soon and I panic."},{"role":"assistant","content":"Exam panic is common. Shall we plan together?"}]}
`

// conversation returns a JSONL line: a conversation of n turns.
func conversation(id string, n int, extra string) string {
	var msgs []attune.Message
	for i := 1; i <= n; i++ {
		msgs = append(msgs, attune.Message{Role: "user", Content: fmt.Sprintf("Turn %d: work keeps piling up. %s", i, extra)},
			attune.Message{Role: "assistant", Content: fmt.Sprintf("Reply %d: that sounds heavy.\nWhat weighs most?", i)})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "messages": msgs})
	return string(b) + "\n"
}

func newLabelling(t *testing.T, o labellingOpts) *labelling {
	t.Helper()
	if o.rubric == "" {
		o.rubric = "empathetic-dialogue@2"
	}
	if o.overlap == 0 {
		o.overlap = 1
	}
	if o.items == "" {
		o.items = replies
	}
	if o.annotators == 0 {
		o.annotators = 1
	}
	a := newApp(t, o.opts...)
	l := &labelling{a: a, lead: a.user("lead@example.org", attune.RoleLead)}
	l.p = a.project(l.lead, projectOpts{rubric: o.rubric, overlap: o.overlap})
	if _, err := importer.Import(context.Background(), a.db, l.p, strings.NewReader(o.items), importer.Options{Source: "test.jsonl"}); err != nil {
		t.Fatal(err)
	}
	for i := range o.annotators {
		u := a.user(fmt.Sprintf("ann%d@example.org", i), attune.RoleAnnotator)
		a.member(l.p, u, attune.MemberAnnotator)
		l.anns = append(l.anns, u)
	}
	return l
}

// signedIn returns a client signed in as u.
func (l *labelling) signedIn(u *attune.User) *client {
	c := l.a.client()
	c.mustSignIn(u)
	return c
}

// itemPathRE matches an item page's path; its group is the item id.
var itemPathRE = regexp.MustCompile(`^/projects/\d+/items/(\d+)$`)

// start presses Start labelling (a post to the workspace's entry) and
// follows it to the item it claims.
func (l *labelling) start(c *client) (path string, page response) {
	l.a.t.Helper()
	r := c.post(projectPath(l.p, "/annotate"), nil)
	wantStatus(l.a.t, r, http.StatusSeeOther)
	path = r.Header.Get("Location")
	if !itemPathRE.MatchString(path) {
		l.a.t.Fatalf("annotate redirected to %q, want an item page", path)
	}
	page = c.get(path)
	wantStatus(l.a.t, page, http.StatusOK)
	return path, page
}

func itemIDOf(t *testing.T, path string) int64 {
	t.Helper()
	m := itemPathRE.FindStringSubmatch(path)
	if m == nil {
		t.Fatalf("%q is not an item page", path)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// form is a label form as the page posts it.
func form(answers map[string]string, kv ...string) url.Values {
	v := url.Values{"mode": {"label"}}
	for k, x := range answers {
		v.Set("answer."+k, x)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func (l *labelling) answerSets(itemID int64) int {
	l.a.t.Helper()
	var n int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM answer_sets WHERE item_id = $1`, itemID).Scan(&n); err != nil {
		l.a.t.Fatal(err)
	}
	return n
}

// htmx headers as htmx sends them with a request from the page.
func hx(c *client) map[string]string {
	return map[string]string{"Origin": c.base, "Sec-Fetch-Site": "same-origin", "HX-Request": "true"}
}

var criteriaAllYes = map[string]string{"CQ1": "YES", "CQ2": "YES", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
	"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "YES", "CP2": "YES", "CP3": "NA"}

// TestAnnotatePlainForms works through a project with plain form posts, as
// a browser without JavaScript does: every rubric text beside the inputs,
// the engine's errors beside the items, a redirect to the next item, the
// done screen.
func TestAnnotatePlainForms(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])

	// The project page links to the workspace.
	pp := c.get(projectPath(l.p, ""))
	wantContains(t, pp, `data-testid="start-labelling"`, "Start labelling")

	path, page := l.start(c)
	first := itemIDOf(t, path)
	wantContains(t, page,
		`data-testid="workspace"`, `data-testid="dialogue"`, `data-testid="rated-tag"`,
		// Every level description sits in the label of its radio button.
		"Ignores or misidentifies the user&#39;s emotions entirely.", `name="answer.emotion" value="5"`,
		"Boundary guidance", "1 vs 2", "Score 5 example", "Crisis rule",
		`name="rationale.emotion"`, `name="rationale"`, `data-testid="skip-form"`,
		`<progress`, `data-testid="own-submitted">0<`)
	wantLacks(t, page, `data-testid="edit-mode"`, `data-testid="content-note"`)

	// A refresh shows the same item.
	if again := c.get(projectPath(l.p, "/annotate")); again.Header.Get("Location") != path {
		t.Fatalf("second visit went to %q, want %q", again.Header.Get("Location"), path)
	}

	// Without its script the page posts to the item's own address, so that
	// a refusal is shown there: a reload or a shared link lands on the item,
	// not on a POST-only …/labels.
	if !regexp.MustCompile(`<form[^>]*id="label-form"[^>]*action="`+regexp.QuoteMeta(path)+`"`).MatchString(page.body) &&
		!regexp.MustCompile(`<form[^>]*action="`+regexp.QuoteMeta(path)+`"[^>]*id="label-form"`).MatchString(page.body) {
		t.Fatalf("the label form does not post to the item's address %s", path)
	}

	// Missing answers block, each beside its item.
	r := c.post(path, form(map[string]string{"emotion": "4"}))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="problems"`, `data-testid="item-error"`, "validation (Validation &amp; Warmth): no answer")
	// What was chosen is still chosen.
	if !regexp.MustCompile(`value="4"\s+checked\s+data-key="4"\s+data-testid="answer-emotion-4"`).MatchString(r.body) {
		t.Fatalf("the 422 page lost the chosen answer: %.2000s", r.body)
	}
	if n := l.answerSets(first); n != 0 {
		t.Fatalf("%d answer sets after a refused submit", n)
	}

	r = c.post(path, form(likertAnswers, "rationale", "kind but generic", "rationale.safety", "no risk here"))
	wantStatus(t, r, http.StatusSeeOther)
	next := r.Header.Get("Location")
	if !itemPathRE.MatchString(next) || next == path {
		t.Fatalf("after submit redirected to %q", next)
	}
	page = c.get(next)
	wantContains(t, page, "Submitted r", `data-testid="own-submitted">1<`, `data-testid="prev-label"`)

	var rationale, safetyNote string
	var active int64
	writeQueuedLabels(t, l.a.db)
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT s.rationale, s.active_ms, l.rationale FROM answer_sets s JOIN labels l ON l.answer_set_id = s.id
		WHERE s.item_id = $1 AND l.rubric_item_key = 'safety'`, first).Scan(&rationale, &active, &safetyNote); err != nil {
		t.Fatal(err)
	}
	if rationale != "kind but generic" || safetyNote != "no risk here" || active <= 0 {
		t.Fatalf("stored rationale %q, safety note %q, active %d ms", rationale, safetyNote, active)
	}

	r = c.post(next+"/labels", form(likertAnswers))
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != projectPath(l.p, "/annotate") {
		t.Fatalf("after the last item redirected to %q", loc)
	}
	done := c.get(projectPath(l.p, "/annotate"))
	wantStatus(t, done, http.StatusOK)
	wantContains(t, done, `data-testid="done"`, "All done", `data-testid="own-submitted">2<`, `data-testid="prev-label"`)
	wantContains(t, c.get(projectPath(l.p, "")), "Continue labelling")
}

// TestAnnotateHTMX submits as htmx does: the next item comes back as a
// part of the page with its URL, ready when the submit returns.
func TestAnnotateHTMX(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)

	r := c.postWith(path+"/labels", form(map[string]string{}), hx(c))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.HasPrefix(r.body, `<div id="workspace"`) || strings.Contains(r.body, "<html") {
		t.Fatalf("422 for htmx is not the workspace part: %.300s", r.body)
	}

	r = c.postWith(path+"/labels", form(likertAnswers, "clock", "js", "active_ms", "4321"), hx(c))
	wantStatus(t, r, http.StatusOK)
	next := r.Header.Get("HX-Push-Url")
	if !itemPathRE.MatchString(next) || next == path {
		t.Fatalf("HX-Push-Url = %q", next)
	}
	if !strings.HasPrefix(r.body, `<div id="workspace"`) || !strings.Contains(r.body, fmt.Sprintf(`data-item="%d"`, itemIDOf(t, next))) {
		t.Fatalf("the response is not the next item's workspace: %.300s", r.body)
	}
	var active int64
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT active_ms FROM answer_sets WHERE item_id = $1`, itemIDOf(t, path)).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 4321 {
		t.Fatalf("active time stored %d ms, want the 4321 the page measured", active)
	}

	r = c.postWith(next+"/labels", form(likertAnswers), hx(c))
	wantStatus(t, r, http.StatusOK)
	if r.Header.Get("HX-Push-Url") != projectPath(l.p, "/annotate") || !strings.Contains(r.body, `data-testid="done"`) {
		t.Fatalf("after the last item: push %q, body %.300s", r.Header.Get("HX-Push-Url"), r.body)
	}
}

// TestAnnotateDoubleSubmit posts the same assignment twice, one after the
// other and at once: one answer set, and both answers show the next item.
func TestAnnotateDoubleSubmit(t *testing.T) {
	t.Parallel()
	items := replies + `{"id":"r3","messages":[{"role":"user","content":"I lost my job."},{"role":"assistant","content":"That is a shock."}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)
	id := itemIDOf(t, path)

	r1 := c.post(path+"/labels", form(likertAnswers))
	r2 := c.post(path+"/labels", form(likertAnswers))
	wantStatus(t, r1, http.StatusSeeOther)
	wantStatus(t, r2, http.StatusSeeOther)
	if r1.Header.Get("Location") != r2.Header.Get("Location") {
		t.Fatalf("the retry went to %q, the first to %q", r2.Header.Get("Location"), r1.Header.Get("Location"))
	}
	if n := l.answerSets(id); n != 1 {
		t.Fatalf("%d answer sets after a double submit", n)
	}
	wantContains(t, c.get(r2.Header.Get("Location")), "were already submitted")

	// Two tabs at once.
	path = r1.Header.Get("Location")
	id = itemIDOf(t, path)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			statuses[i] = c.postWith(path+"/labels", form(likertAnswers), hx(c)).StatusCode
		})
	}
	wg.Wait()
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusOK {
		t.Fatalf("concurrent submits answered %v", statuses)
	}
	if n := l.answerSets(id); n != 1 {
		t.Fatalf("%d answer sets after two concurrent submits", n)
	}
}

// TestAnnotateAccess: only the item's own annotator sees it; anyone else
// learns nothing.
func TestAnnotateAccess(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{annotators: 2, overlap: 2})
	path, _ := l.start(l.signedIn(l.anns[0]))

	other := l.signedIn(l.anns[1])
	wantStatus(t, other.get(path), http.StatusNotFound)
	wantStatus(t, other.post(path+"/labels", form(likertAnswers)), http.StatusNotFound)
	wantStatus(t, other.post(path+"/draft", form(likertAnswers)), http.StatusConflict)

	stranger := l.a.user("stranger@example.org", attune.RoleAnnotator)
	sc := l.signedIn(stranger)
	wantStatus(t, sc.get(path), http.StatusNotFound)
	wantStatus(t, sc.get(projectPath(l.p, "/annotate")), http.StatusNotFound)

	lc := l.signedIn(l.lead)
	wantStatus(t, lc.get(path), http.StatusNotFound)
	r := lc.get(projectPath(l.p, "/annotate"))
	wantStatus(t, r, http.StatusForbidden)
	wantContains(t, r, "Only the project&#39;s annotators label it.")

	wantStatus(t, l.a.client().get(path), http.StatusSeeOther) // signed out: to the sign-in page
}

// TestAnnotateCriteria: NA only where the rubric allows it, conditions
// explained with the conversation's own facts, NA refused where the
// condition holds.
func TestAnnotateCriteria(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "")})
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)

	wantContains(t, page, `data-testid="answer-CQ2-NA"`, `data-testid="answer-CQ8-YES"`, `data-testid="answer-CQ8-NO"`,
		"NA is not offered: Every conversation can be assessed for harmful patterns",
		"Applies from 10 turns; this conversation has 12.", "Applies from 3 turns; this conversation has 12.",
		"Criterion is met throughout", "Comprehension", "weight 0.15", "SAFETY GATE",
		"Fails, for example, when", "Misinterprets user in turn 5", "In the rubric's worked example: NA — No significant ambiguity to clarify",
		"attune&#39;s word list found none here")
	wantLacks(t, page, `data-testid="answer-CQ8-NA"`, `data-testid="answer-CP2-NA"`)

	bad := map[string]string{}
	for k, v := range criteriaAllYes {
		bad[k] = v
	}
	bad["CP3"] = "NA" // 12 turns: CP3 applies, but NA is allowed with confirmation (unrelated topics)
	bad["CP1"] = "NA" // 12 turns: CP1 applies and has no exception
	bad["CQ8"] = "NA" // never valid
	r := c.post(path+"/labels", form(bad))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "CP1 (Variety in techniques): NA is for conversations under 3 turns",
		"CQ8 (Avoids harmful patterns (endorsements, diagnoses, promises)): NA is not valid here")

	good := map[string]string{}
	for k, v := range criteriaAllYes {
		good[k] = v
	}
	good["CP3"] = "NA"
	r = c.post(path+"/labels", form(good))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="confirm"`, "confirm that user explored unrelated topics")
	r = c.post(path+"/labels", form(good, "confirm", "yes"))
	wantStatus(t, r, http.StatusSeeOther)
}

// TestAnnotateContentNoteAndCrisisRule: a dialogue that mentions suicide is
// announced first, and counts as having crisis signals for the rubric.
func TestAnnotateContentNoteAndCrisisRule(t *testing.T) {
	t.Parallel()
	items := `{"id":"s1","messages":[{"role":"user","content":"Some days I think about suicide."},{"role":"assistant","content":"Thank you for telling me. You deserve support right now."}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	wantContains(t, page, `data-testid="content-note"`, "This conversation mentions suicide or self-harm.", "“suicide”",
		`data-testid="show-conversation"`, `data-testid="skip-sensitive"`)
	if !regexp.MustCompile(`data-testid="messages" hidden`).MatchString(page.body) {
		t.Fatal("the dialogue is not hidden behind the content note")
	}
	wantStatus(t, c.post(path+"/open", nil), http.StatusSeeOther)
	shown := c.get(path)
	wantLacks(t, shown, `data-testid="content-note"`, `data-testid="messages" hidden`)

	// The crisis rule is a warning to confirm.
	answers := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "4"}
	r := c.post(path+"/labels", form(answers))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="problem-warning"`, "a crisis disclosure needs crisis resources", `data-testid="confirm"`)
	wantLacks(t, r, `data-testid="content-note"`) // the annotator has seen the dialogue
	wantStatus(t, c.post(path+"/labels", form(answers, "confirm", "yes")), http.StatusSeeOther)
}

// TestMarkSensitive: a lead marks an item the word list misses; its
// annotator then sees the content note.
func TestMarkSensitive(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	lc := l.signedIn(l.lead)
	wantContains(t, lc.get(projectPath(l.p, "")), `data-testid="sensitive-form"`)
	r := lc.post(projectPath(l.p, "/sensitive"), url.Values{"ids": {"r1\r\nr2\r\nnope\r\n"}})
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, lc.get(projectPath(l.p, "")), "Marked 2 items as sensitive. No item has the id nope.")
	r = lc.post(projectPath(l.p, "/sensitive"), url.Values{"ids": {"  \n "}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="sensitive-error"`)

	ac := l.signedIn(l.anns[0])
	wantStatus(t, ac.post(projectPath(l.p, "/sensitive"), url.Values{"ids": {"r1"}}), http.StatusForbidden)
	_, page := l.start(ac)
	wantContains(t, page, `data-testid="content-note"`, "A lead of the project marked it.")
}

// TestAnnotateSkipAndFlag skips one item with a flag and a note.
func TestAnnotateSkipAndFlag(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)

	wantStatus(t, c.post(path+"/skip", url.Values{"flag": {"nonsense"}}), http.StatusUnprocessableEntity)
	r := c.post(path+"/skip", url.Values{"flag": {"distressing"}, "note": {"graphic detail"}})
	wantStatus(t, r, http.StatusSeeOther)
	next := r.Header.Get("Location")
	wantContains(t, c.get(next), "flagged it as distressing")
	var state, flag, note string
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT state, flag, flag_note FROM assignments WHERE item_id = $1`, itemIDOf(t, path)).Scan(&state, &flag, &note); err != nil {
		t.Fatal(err)
	}
	if state != "skipped" || flag != "distressing" || note != "graphic detail" {
		t.Fatalf("assignment: %s %s %q", state, flag, note)
	}
	// The skipped item is gone for this annotator.
	wantStatus(t, c.get(path), http.StatusNotFound)
}

// TestAnnotateEditKeepsHistory changes an earlier label from the previous
// link: the page is pre-filled, and the earlier value stays in the history.
func TestAnnotateEditKeepsHistory(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)
	id := itemIDOf(t, path)
	r := c.post(path+"/labels", form(likertAnswers, "rationale.emotion", "named the loneliness"))
	next := c.get(r.Header.Get("Location"))
	wantContains(t, next, fmt.Sprintf(`href="%s" rel="prev"`, path))

	page := c.get(path)
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="edit-mode"`, "revision 1", "Save changes", "named the loneliness",
		`data-testid="back-to-labelling"`, `name="mode" value="edit"`)
	wantLacks(t, page, `data-testid="skip-form"`)
	if !regexp.MustCompile(`value="4"\s+checked\s+data-key="4"\s+data-testid="answer-emotion-4"`).MatchString(page.body) {
		t.Fatal("the edit page is not pre-filled with the submitted answers")
	}

	changed := map[string]string{}
	for k, v := range likertAnswers {
		changed[k] = v
	}
	changed["emotion"] = "2"
	f := form(changed, "rationale.emotion", "named the loneliness")
	f.Set("mode", "edit")
	f.Set("base", "1")
	r = c.post(path+"/labels", f)
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, c.get(r.Header.Get("Location")), "Saved your changes to r", "revision 2")

	var sets, history int
	var old, now string
	ctx := context.Background()
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets WHERE item_id = $1`, id).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	writeQueuedLabels(t, l.a.db)
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT count(*), min(h.value), min(l.value) FROM label_history h JOIN labels l ON l.id = h.label_id
		WHERE l.item_id = $1`, id).Scan(&history, &old, &now); err != nil {
		t.Fatal(err)
	}
	if sets != 1 || history != 1 || old != "4" || now != "2" {
		t.Fatalf("answer sets %d, history rows %d (%s → %s)", sets, history, old, now)
	}
}

// TestAnnotateDrafts: a draft comes back on the page, and is refused once
// the answers are stored.
func TestAnnotateDrafts(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)

	d := form(map[string]string{"emotion": "5", "validation": "2"}, "rationale.emotion", "very specific", "active_ms", "9000", "clock", "js")
	wantStatus(t, c.post(path+"/draft", d), http.StatusNoContent)
	page := c.get(path)
	wantContains(t, page, "Restored your unsaved answers.", "very specific", `name="active_ms" value="9000"`)
	if !regexp.MustCompile(`value="2"\s+checked\s+data-key="2"\s+data-testid="answer-validation-2"`).MatchString(page.body) {
		t.Fatal("the draft's answers are not chosen on the page")
	}
	wantStatus(t, c.post(path+"/labels", form(likertAnswers, "clock", "js", "active_ms", "9500")), http.StatusSeeOther)
	wantStatus(t, c.post(path+"/draft", d), http.StatusConflict)
	var drafts int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM drafts`).Scan(&drafts); err != nil {
		t.Fatal(err)
	}
	if drafts != 0 {
		t.Fatalf("%d drafts after submit", drafts)
	}
}

// TestAnnotateDraftKeepsTurns: the turns typed on a failing answer are
// saved with the draft and back in their field after a reload, as typed;
// turns on an item the rubric lacks are dropped.
func TestAnnotateDraftKeepsTurns(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)
	d := form(map[string]string{"emotion": "2"}, "evidence.emotion", "1,", "evidence.nope", "1", "active_ms", "3000", "clock", "js")
	wantStatus(t, c.post(path+"/draft", d), http.StatusNoContent)
	page := c.get(path)
	wantContains(t, page, "Restored your unsaved answers.")
	if !regexp.MustCompile(`name="evidence\.emotion"\s+value="1,"`).MatchString(page.body) {
		t.Fatalf("the draft's turns are not back in their field: %.3000s", page.body[strings.Index(page.body, `name="evidence.emotion"`)-200:])
	}
	var stored string
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT evidence::text FROM drafts`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != `{"emotion": "1,"}` {
		t.Errorf("the draft stored turns %s", stored)
	}
}

// TestAnnotateDialogueIsText: markup in a dialogue is shown as text.
func TestAnnotateDialogueIsText(t *testing.T) {
	t.Parallel()
	items := `{"id":"x1","messages":[{"role":"system","content":"Be kind."},{"role":"user","content":"<script>alert(1)</script><b>bold</b>\nsecond line"},{"role":"assistant","content":"<img src=x onerror=alert(2)> I hear you."}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items, rubric: "empathetic-understanding@1"})
	_, page := l.start(l.signedIn(l.anns[0]))
	wantContains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;\nsecond line", "&lt;img src=x onerror=alert(2)&gt;",
		`data-role="system"`, "System message", "Evaluation steps", "Rate on a Scale of 1-5")
	wantLacks(t, page, "<b>bold</b>", "<script>alert", "<img src=x")
}

// TestAnnotatePausedAndBlind: a paused project says so; an annotator never
// sees another's labels.
func TestAnnotatePausedAndBlind(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{overlap: 2, annotators: 2})
	c0, c1 := l.signedIn(l.anns[0]), l.signedIn(l.anns[1])
	path, _ := l.start(c0)
	wantStatus(t, c0.post(path+"/labels", form(likertAnswers, "rationale", "SECRET-RATIONALE", "rationale.emotion", "SECRET-NOTE")), http.StatusSeeOther)
	p1, page := l.start(c1)
	if p1 != path {
		t.Fatalf("the second annotator got %s, want the item nearest completion %s", p1, path)
	}
	wantLacks(t, page, "SECRET-RATIONALE", "SECRET-NOTE")
	if regexp.MustCompile(`checked\s+data-key`).MatchString(page.body) {
		t.Fatal("an answer is chosen on a fresh item: another annotator's label leaked")
	}

	if err := l.a.db.SetProjectStatus(context.Background(), l.lead.ID, l.p.ID, attune.ProjectPaused); err != nil {
		t.Fatal(err)
	}
	r := c1.post(p1+"/labels", form(likertAnswers))
	wantStatus(t, r, http.StatusSeeOther)
	paused := c1.get(r.Header.Get("Location"))
	wantContains(t, paused, `data-testid="paused"`, "is paused", "Your labels so far are saved.")
}

// TestAnnotateBreak offers a break after the configured stretch, and
// "Keep going" starts the stretch afresh.
func TestAnnotateBreak(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{opts: []func(*web.Options){func(o *web.Options) { o.BreakAfter = time.Nanosecond }}})
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	wantContains(t, page, `data-testid="break-note"`, "You have been labelling for 0 minutes — take a break?", `data-testid="keep-going"`)
	r := c.post(projectPath(l.p, "/break"), url.Values{"item": {strconv.FormatInt(itemIDOf(t, path), 10)}})
	wantStatus(t, r, http.StatusSeeOther)
	if r.Header.Get("Location") != path {
		t.Fatalf("keep going went to %q", r.Header.Get("Location"))
	}
	wantStatus(t, c.postWith(projectPath(l.p, "/break"), nil, hx(c)), http.StatusOK)

	quiet := newLabelling(t, labellingOpts{})
	_, page = quiet.start(quiet.signedIn(quiet.anns[0]))
	wantLacks(t, page, `data-testid="break-note"`)
}

// TestAnnotateHighlightsSignalWords: the words the wellbeing list found are
// highlighted in the dialogue, escaped like the rest of it; CQ9 says which
// they are and that the judgement is the annotator's; NA there is a
// warning that names them, and stands once confirmed.
func TestAnnotateHighlightsSignalWords(t *testing.T) {
	t.Parallel()
	msgs := []attune.Message{
		{Role: "user", Content: "I'm too scared to commit suicide like he did! <b>I enjoy living life</b>"},
		{Role: "assistant", Content: "That sounds frightening. Have you ever thought of an Overdose?"},
	}
	line, _ := json.Marshal(map[string]any{"id": "w1", "messages": msgs})
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: string(line) + "\n"})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)
	wantStatus(t, c.post(path+"/open", nil), http.StatusSeeOther)
	page := c.get(path)
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page,
		`commit <mark class="signal" data-testid="signal-word" title="On attune&#39;s word list as “suicide”: a prompt to look, not a verdict">suicide</mark> like he did! &lt;b&gt;I enjoy living life&lt;/b&gt;`,
		`thought of an <mark class="signal" data-testid="signal-word" title="On attune&#39;s word list as “overdose”: a prompt to look, not a verdict">Overdose</mark>?`,
		"This conversation contains “suicide”, “overdose” from attune&#39;s word list (highlighted)",
		`data-testid="answer-CQ9-NA"`)
	wantLacks(t, page, "<b>I enjoy")

	answers := criteria("CP1", "NA")
	r := c.post(path+"/labels", form(answers))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="problem-warning"`, `data-testid="confirm"`,
		"CQ9 (Handles crisis signals appropriately): NA although the dialogue contains the wellbeing list&#39;s words &#34;suicide&#34; and &#34;overdose&#34;")
	wantStatus(t, c.post(path+"/labels", form(answers, "confirm", "yes")), http.StatusSeeOther)
	if n := l.answerSets(itemIDOf(t, path)); n != 1 {
		t.Fatalf("%d answer sets stored, want the confirmed one", n)
	}

	// A dialogue without a word of the list has nothing highlighted.
	plain := newLabelling(t, labellingOpts{})
	pc := plain.signedIn(plain.anns[0])
	_, page = plain.start(pc)
	wantLacks(t, page, `data-testid="signal-word"`, "<mark")
}

// TestTurnNumbersMatchTheCount: the workspace numbers exactly the turns the
// rubric counts: a greeting before the first user message and a user
// message left without a reply at the end carry no number, so nothing is
// numbered past "N turns".
func TestTurnNumbersMatchTheCount(t *testing.T) {
	t.Parallel()
	item := `{"id":"g1","messages":[{"role":"assistant","content":"Hi, I am here to listen."},` +
		`{"role":"user","content":"My exam went badly."},{"role":"assistant","content":"I am sorry. What happened?"},` +
		`{"role":"user","content":"I blanked."},{"role":"assistant","content":"That is frightening. It happens to many."},` +
		`{"role":"user","content":"Thanks, bye."}]}` + "\n"
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: item, annotators: 1})
	_, page := l.start(l.signedIn(l.anns[0]))
	wantStatus(t, page, http.StatusOK)
	got := regexp.MustCompile(`<span class="turn" title="Turn">(\d+)</span>`).FindAllStringSubmatch(page.body, -1)
	var nums []string
	for _, m := range got {
		nums = append(nums, m[1])
	}
	if strings.Join(nums, ",") != "1,1,2,2" {
		t.Fatalf("turn numbers %v, want 1,1,2,2 (the greeting and the last message unnumbered)", nums)
	}
	wantContains(t, page, "2 turns")
}

// TestDialogueSaysWhatIsRated heads one short exchange by what each rubric
// rates: a conversation rubric rates the conversation, however short.
func TestDialogueSaysWhatIsRated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rubric, heading, rated string }{
		{"empathetic-dialogue@2", "Reply", "you rate the assistant&#39;s reply (marked)"},
		{"empathetic-understanding@1", "Reply, in its conversation", "you rate the last assistant reply (marked), read in context"},
		{"coaching-conversation@2.0", "Conversation", "1 turn · you rate the whole conversation"},
	} {
		t.Run(tc.rubric, func(t *testing.T) {
			t.Parallel()
			l := newLabelling(t, labellingOpts{rubric: tc.rubric})
			_, page := l.start(l.signedIn(l.anns[0]))
			wantContains(t, page, `data-testid="dialogue-heading">`+tc.heading+`</h2>`, tc.rated)
		})
	}
}
