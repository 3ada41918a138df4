package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

// inputTag returns the input element with the data-testid, as written.
func inputTag(t *testing.T, body, testid string) string {
	t.Helper()
	m := regexp.MustCompile(`<input[^>]*data-testid="` + regexp.QuoteMeta(testid) + `"[^>]*>`).FindString(body)
	if m == "" {
		t.Fatalf("no input %s on the page", testid)
	}
	return m
}

// forbiddenReason is the rubric's own reason for refusing NA on key for a
// conversation of turns turns, as a page writes it.
func forbiddenReason(t *testing.T, key string, turns int) string {
	t.Helper()
	def, _ := rubric.Builtin("coaching-conversation@2.0")
	it, _ := def.Item(key)
	reason, forbidden := def.Forbids(it, rubric.NA, rubric.Facts{Turns: turns})
	if !forbidden {
		t.Fatalf("the rubric does not forbid NA on %s at %d turns", key, turns)
	}
	return html.EscapeString(reason)
}

// TestFormsDoNotOfferForbiddenAnswers: the annotator's form, without its
// script, shows NA on CP1 of a 12-turn conversation disabled, with the
// rubric's reason as its tooltip and its description; NA that a person may
// confirm (CP3) or that no fact rules out (CQ9) is offered as before.
func TestFormsDoNotOfferForbiddenAnswers(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "")})
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	reason := forbiddenReason(t, "CP1", 12)

	na := inputTag(t, page.body, "answer-CP1-NA")
	if !strings.Contains(na, " disabled") || !strings.Contains(na, `aria-describedby="answer-CP1-NA-why"`) {
		t.Fatalf("CP1's NA is offered: %s", na)
	}
	wantContains(t, page, `title="`+reason+`"`, `id="answer-CP1-NA-why" data-testid="option-forbidden">Not offered here. `+reason+`</span>`)
	for _, id := range []string{"answer-CP1-YES", "answer-CP1-NO", "answer-CP3-NA", "answer-CQ9-NA"} {
		if tag := inputTag(t, page.body, id); strings.Contains(tag, " disabled") {
			t.Errorf("%s is not offered: %s", id, tag)
		}
	}
	if n := strings.Count(page.body, `data-testid="option-forbidden"`); n != 1 {
		t.Errorf("%d answers marked as not offered, want CP1's NA alone", n)
	}

	// A refused answer set comes back with the option still not offered.
	bad := map[string]string{}
	for k, v := range criteriaAllYes {
		bad[k] = v
	}
	bad["CP1"] = "NA"
	r := c.post(path+"/labels", form(bad))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if na := inputTag(t, r.body, "answer-CP1-NA"); !strings.Contains(na, " disabled") || strings.Contains(na, "checked") {
		t.Fatalf("after the refusal CP1's NA is %s, want disabled and not chosen", na)
	}
}

// TestGoldFormDoesNotOfferForbiddenAnswers: the lead's gold form shares
// the rule: NA on CP1 of a 4-turn conversation is disabled with the reason.
func TestGoldFormDoesNotOfferForbiddenAnswers(t *testing.T) {
	t.Parallel()
	l := criteriaProject(t)
	lead := l.signedIn(l.lead)
	page := lead.get(fmt.Sprintf("%s/disagreements/%d", projectPath(l.p, ""), l.itemID(t, "c2")))
	wantStatus(t, page, http.StatusOK)
	na := inputTag(t, page.body, "gold-CP1-NA")
	if !strings.Contains(na, " disabled") || !strings.Contains(na, `aria-describedby="gold-CP1-NA-why"`) {
		t.Fatalf("CP1's NA is offered for gold: %s", na)
	}
	reason := forbiddenReason(t, "CP1", 4)
	wantContains(t, page, `title="`+reason+`"`, `id="gold-CP1-NA-why" data-testid="option-forbidden">NA is not offered here. `+reason+`</p>`)
	if tag := inputTag(t, page.body, "gold-CQ9-NA"); strings.Contains(tag, " disabled") {
		t.Errorf("CQ9's NA is not offered for gold: %s", tag)
	}
}

// TestRefusedImportAddressStillWorks: a refused import is shown at the
// address it was posted to; that address opened again leads the lead to
// the import form instead of a 404, and stays closed to an annotator.
func TestRefusedImportAddressStillWorks(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	lead := l.signedIn(l.lead)
	r := lead.upload(projectPath(l.p, "/import"), nil, "data.jsonl", "PK\x03\x04 not a dataset")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "a ZIP archive")
	wantLacks(t, r, "unknown column")
	for path, want := range map[string]string{
		"/import":        projectPath(l.p, "#import"),
		"/labels/import": projectPath(l.p, "/report#labels-import"),
	} {
		r = lead.get(projectPath(l.p, path))
		if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %s", path, r.StatusCode, r.Header.Get("Location"), want)
		}
		if ann := l.signedIn(l.anns[0]).get(projectPath(l.p, path)); ann.StatusCode == http.StatusSeeOther {
			t.Errorf("GET %s as an annotator: redirected to %q", path, ann.Header.Get("Location"))
		}
	}
}
