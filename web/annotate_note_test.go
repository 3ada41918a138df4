package web_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/attune/attune/internal/store"
)

// sensitiveItems are a dialogue the wellbeing list announces with a content
// note, and one it does not.
const sensitiveItems = `{"id":"s1","messages":[{"role":"user","content":"Some days I think about suicide."},{"role":"assistant","content":"Thank you for telling me. You deserve support right now."}]}
{"id":"r1","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely. What do you miss most?"}]}
`

// TestContentNoteRefusesUnopenedAnswers: answers to a dialogue behind a
// content note are refused with 422 on every path — the no-JS form post,
// the htmx post, the API's submit and its edit — until the annotator opens
// the note; the opening is recorded and lasts.
func TestContentNoteRefusesUnopenedAnswers(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{items: sensitiveItems, overlap: 3, annotators: 3})
	ctx := context.Background()
	noteRefused := "Your answers were not stored: open the conversation and read it before answering."

	// The page: the note, the dialogue hidden, the answers locked.
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	wantContains(t, page, `data-testid="content-note"`, "“suicide”", `data-testid="answers-locked"`,
		fmt.Sprintf(`<form method="post" action="%s/open"`, path))
	for _, re := range []string{`data-testid="messages" hidden`, `<fieldset class="answers" disabled`, `data-testid="submit" disabled`} {
		if !regexp.MustCompile(re).MatchString(page.body) {
			t.Fatalf("the page lacks %s", re)
		}
	}
	id := itemIDOf(t, path)

	// A plain form post and an htmx post are refused, nothing stored.
	r := c.post(path+"/labels", form(likertAnswers, "confirm", "yes"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="note-refused"`, noteRefused, `data-testid="content-note"`)
	r = c.postWith(path+"/labels", form(likertAnswers, "confirm", "yes", "clock", "js"), hx(c))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.HasPrefix(r.body, `<div id="workspace"`) {
		t.Fatalf("the htmx refusal is not the workspace part: %.300s", r.body)
	}
	wantContains(t, r, noteRefused)
	if n := l.answerSets(id); n != 0 {
		t.Fatalf("%d answer sets stored for an unopened note", n)
	}

	// Opening it without JavaScript: a post, back to the item, shown; a
	// later visit shows it too.
	r = c.post(path+"/open", nil)
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != path {
		t.Fatalf("opening went to %q", loc)
	}
	for range 2 {
		page = c.get(path)
		wantLacks(t, page, `data-testid="content-note"`, `data-testid="messages" hidden`, `data-testid="answers-locked"`, `fieldset class="answers" disabled`)
	}
	wantStatus(t, c.post(path+"/labels", form(likertAnswers, "confirm", "yes")), http.StatusSeeOther)
	if n := l.answerSets(id); n != 1 {
		t.Fatalf("%d answer sets after opening and submitting", n)
	}

	// The API: the item says it is behind a note; a submit is refused until
	// the note is opened.
	api := l.a.apiFor(l.anns[1])
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	item := next["item"].(map[string]any)
	if status != http.StatusOK || item["source_id"] != "s1" || fmt.Sprint(item["content_note"]) != "map[marked:false words:[suicide]]" {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	submit := map[string]any{"answers": likertAnswers, "confirm_warnings": true}
	status, body := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), submit)
	if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body["fields"]), "content note you have not opened") {
		t.Fatalf("API submit of an unopened item: %d %v", status, body)
	}
	if n := l.answerSets(id); n != 1 {
		t.Fatalf("%d answer sets after a refused API submit", n)
	}
	note := fmt.Sprintf("/api/v1/projects/%d/items/%d/content-note", l.p.ID, id)
	if status, body := api.call("POST", note, nil); status != http.StatusNoContent {
		t.Fatalf("open through the API: %d %v", status, body)
	}
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), submit); status != http.StatusCreated {
		t.Fatalf("API submit after opening: %d %v", status, body)
	}

	// An edit through the API of labels stored before the rule (straight
	// into the store, as an older version stored them) is refused too.
	third := l.anns[2]
	a, err := l.a.db.NextAssignment(ctx, l.p.ID, third.ID)
	if err != nil || a.ItemID != id {
		t.Fatalf("third annotator's item: %+v, %v", a, err)
	}
	if _, err := l.a.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: third.ID, Answers: likertAnswers}); err != nil {
		t.Fatal(err)
	}
	api3 := l.a.apiFor(third)
	labels := fmt.Sprintf("/api/v1/projects/%d/items/%d/labels", l.p.ID, id)
	status, body = api3.call("PUT", labels, submit)
	if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body["fields"]), "content_note") {
		t.Fatalf("API edit of an unopened item: %d %v", status, body)
	}
	if status, _ := api3.call("POST", note, nil); status != http.StatusNoContent {
		t.Fatalf("open through the API: %d", status)
	}
	if status, body := api3.call("PUT", labels, submit); status != http.StatusOK || body["revision"] != float64(2) {
		t.Fatalf("API edit after opening: %d %v", status, body)
	}

	// Nobody opens a note of an item they were never given.
	other := l.a.user("stranger@example.org", "annotator")
	if status, _ := l.a.apiFor(other).call("POST", note, nil); status != http.StatusNotFound {
		t.Fatalf("a stranger opening the note: %d", status)
	}
}
