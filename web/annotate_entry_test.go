package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// countAssignments counts the assignments of the labelling's project.
func (l *labelling) countAssignments(t *testing.T) int {
	t.Helper()
	var n int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM assignments WHERE project_id = $1`, l.p.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAnnotateGetClaimsNothing: the workspace's entry is safe to follow
// from anywhere. A GET, same-site or cross-site, never creates or renews an
// assignment; Start labelling posts, and only that post claims.
func TestAnnotateGetClaimsNothing(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	entry := projectPath(l.p, "/annotate")

	r := c.get(entry)
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-reason="ready"`, `<form method="post" action="`+entry+`"`, `data-testid="start-labelling"`)
	// A link on another site, followed by the annotator's browser.
	cross, _ := http.NewRequest(http.MethodGet, c.base+entry, nil)
	cross.Header.Set("Sec-Fetch-Site", "cross-site")
	cross.Header.Set("Referer", "https://elsewhere.example/")
	wantStatus(t, c.do(cross), http.StatusOK)
	if n := l.countAssignments(t); n != 0 {
		t.Fatalf("GET of the entry created %d assignments", n)
	}
	// A cross-site post is refused before it claims anything.
	r = c.postWith(entry, nil, map[string]string{"Origin": "https://elsewhere.example", "Sec-Fetch-Site": "cross-site"})
	wantStatus(t, r, http.StatusForbidden)
	if n := l.countAssignments(t); n != 0 {
		t.Fatalf("a cross-site post created %d assignments", n)
	}

	// The button claims; the entry then resumes that item without
	// renewing its lease.
	path, _ := l.start(c)
	if n := l.countAssignments(t); n != 1 {
		t.Fatalf("Start labelling made %d assignments, want 1", n)
	}
	lease := func() time.Time {
		t.Helper()
		var at time.Time
		if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT lease_expires_at FROM assignments WHERE project_id = $1`, l.p.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	before := lease()
	r = c.get(entry)
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != path {
		t.Fatalf("the entry resumed %q, want the held item %q", loc, path)
	}
	if after := lease(); !after.Equal(before) || l.countAssignments(t) != 1 {
		t.Fatalf("a GET changed the queue: lease %v → %v, %d assignments", before, after, l.countAssignments(t))
	}

	// Once everything is labelled the entry says so, still claiming nothing.
	r = c.post(path+"/labels", form(likertAnswers))
	wantStatus(t, r, http.StatusSeeOther)
	wantStatus(t, c.post(r.Header.Get("Location")+"/labels", form(likertAnswers)), http.StatusSeeOther)
	n := l.countAssignments(t)
	r = c.get(entry)
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="done"`)
	if m := l.countAssignments(t); m != n {
		t.Fatalf("GET at the end of the queue changed the assignments from %d to %d", n, m)
	}
}

// TestAnnotateRestoredOnlyWithWork: the page says it restored unsaved
// answers only when the draft holds some; a draft that only kept the time
// spent restores nothing.
func TestAnnotateRestoredOnlyWithWork(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	const restored = "Restored your unsaved answers."
	wantLacks(t, page, restored)

	// The script saves the time spent every half minute, answers or not.
	wantStatus(t, c.post(path+"/draft", url.Values{"mode": {"label"}, "base": {"0"}, "active_ms": {"31000"}, "rationale": {""}}), http.StatusNoContent)
	page = c.get(path)
	wantContains(t, page, `value="31000"`)
	wantLacks(t, page, restored)

	wantStatus(t, c.post(path+"/draft", url.Values{"mode": {"label"}, "base": {"0"}, "answer.emotion": {"4"}}), http.StatusNoContent)
	wantContains(t, c.get(path), restored)

	// Editing: a draft that holds the submitted answers unchanged restores
	// nothing; one that changes them does.
	wantStatus(t, c.post(path+"/labels", form(likertAnswers)), http.StatusSeeOther)
	edit := url.Values{"mode": {"edit"}, "base": {"1"}}
	for k, v := range likertAnswers {
		edit.Set("answer."+k, v)
	}
	wantStatus(t, c.post(path+"/draft", edit), http.StatusNoContent)
	page = c.get(path)
	wantContains(t, page, `data-testid="edit-mode"`)
	wantLacks(t, page, restored)
	edit.Set("answer.emotion", "1")
	wantStatus(t, c.post(path+"/draft", edit), http.StatusNoContent)
	wantContains(t, c.get(path), restored)
}
