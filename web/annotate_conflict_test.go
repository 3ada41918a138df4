package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
)

// hiddenFields reads the hidden inputs of the form with the given
// data-testid out of a page.
func hiddenFields(t *testing.T, body, testid string) url.Values {
	t.Helper()
	m := regexp.MustCompile(`(?s)<form[^>]*data-testid="` + testid + `"[^>]*>(.*?)</form>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form %s in %.600s", testid, body)
	}
	v := url.Values{}
	for _, f := range regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
		v.Add(html.UnescapeString(f[1]), html.UnescapeString(f[2]))
	}
	return v
}

// TestAnnotateSecondTabDifferent: a second submission of an item with
// other answers is not dropped under a notice: it comes back beside the
// answers stored first (409), nothing of it stored, and keeping it stores
// it as an edit with history.
func TestAnnotateSecondTabDifferent(t *testing.T) {
	t.Parallel()
	items := replies + `{"id":"r3","messages":[{"role":"user","content":"I lost my job."},{"role":"assistant","content":"That is a shock."}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	c := l.signedIn(l.anns[0])
	path, _ := l.start(c)
	id := itemIDOf(t, path)
	r := c.postWith(path+"/labels", form(likertAnswers, "rationale", "first tab"), hx(c))
	wantStatus(t, r, http.StatusOK)
	next := r.Header.Get("HX-Push-Url")

	second := map[string]string{"emotion": "2", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "2"}
	for _, headers := range []map[string]string{hx(c), {"Origin": c.base, "Sec-Fetch-Site": "same-origin"}} {
		r = c.postWith(path+"/labels", form(second, "rationale", "second tab", "rationale.emotion", "flat"), headers)
		wantStatus(t, r, http.StatusConflict)
		wantContains(t, r, `data-testid="resubmitted"`, "not stored", `data-testid="keep-new"`,
			`href="`+next+`" data-testid="discard-new"`, "first tab", "second tab", "flat")
		for key, want := range map[string]string{"emotion": "true", "validation": "false", "overall": "true"} {
			if !regexp.MustCompile(`data-key="` + key + `" data-differs="` + want + `"`).MatchString(r.body) {
				t.Fatalf("row %s does not say differs=%s: %.3000s", key, want, r.body)
			}
		}
		if got := l.storedAnswers(t, strconv.FormatInt(id, 10)); !sameAnswers(got, likertAnswers) || l.answerSets(id) != 1 {
			t.Fatalf("the second tab's answers were stored: %v", got)
		}
	}

	// Keep them: the form posts them as an edit of revision 1.
	keep := hiddenFields(t, r.body, "keep-form")
	if keep.Get("mode") != "edit" || keep.Get("base") != "1" || keep.Get("answer.emotion") != "2" || keep.Get("rationale") != "second tab" {
		t.Fatalf("keep form fields: %v", keep)
	}
	r = c.post(path+"/labels", keep)
	wantStatus(t, r, http.StatusSeeOther)
	if got := l.storedAnswers(t, strconv.FormatInt(id, 10)); !sameAnswers(got, second) {
		t.Fatalf("after keeping, stored %v, want %v", got, second)
	}
	var revision, history int
	ctx := context.Background()
	writeQueuedLabels(t, l.a.db)
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT revision, (SELECT count(*) FROM label_history h JOIN labels x ON x.id = h.label_id WHERE x.item_id = $1)
		FROM answer_sets WHERE item_id = $1`, id).Scan(&revision, &history); err != nil {
		t.Fatal(err)
	}
	if revision != 2 || history == 0 {
		t.Fatalf("after keeping: revision %d, %d history rows", revision, history)
	}
	wantContains(t, c.get(r.Header.Get("Location")), "Saved your changes to r1 (revision 2)")
}
