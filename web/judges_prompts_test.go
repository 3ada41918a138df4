package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
)

// bodies records the request bodies a fake model receives.
type bodies struct {
	mu  sync.Mutex
	all []string
}

func (b *bodies) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			b.mu.Lock()
			b.all = append(b.all, string(body))
			b.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// count says how many recorded bodies hold s.
func (b *bodies) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, x := range b.all {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

func TestJudgePromptVersionsWeb(t *testing.T) {
	t.Parallel()
	sent := &bodies{}
	j := newJudged(t, fakellm.Options{}, sent.wrap)
	jd := j.createJudge(t, j.judgeValues("Varied"))
	ctx := context.Background()
	def, err := j.a.db.FindRubricByID(ctx, j.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	base := projectPath(j.project, fmt.Sprintf("/judges/%d/prompts", jd.ID))

	// The project page links the judge's prompts; version 1 is the
	// rubric's own.
	wantContains(t, j.c.get(projectPath(j.project, "")), `data-testid="prompt-links"`, `href="`+base+`"`)
	list := j.c.get(base)
	wantStatus(t, list, http.StatusOK)
	if n := countOf(list.body, `data-testid="prompt-version"`); n != 1 {
		t.Fatalf("%d versions listed, want 1", n)
	}
	wantContains(t, list, `href="`+base+`/new?from=1"`)
	v1 := j.c.get(base + "/1")
	wantStatus(t, v1, http.StatusOK)
	wantContains(t, v1, "The rubric's own prompt, verbatim.")
	wantLacks(t, v1, `data-testid="prompt-diff"`)

	// The form is a copy of version 1, written as text.
	form := j.c.get(base + "/new?from=1")
	wantStatus(t, form, http.StatusOK)
	if n := countOf(form.body, "<textarea"); n != len(def.Items) {
		t.Fatalf("%d prompt fields, want %d", n, len(def.Items))
	}
	wantContains(t, form, `name="from" value="1"`, "{{Dialog}}")

	values := url.Values{"from": {"1"}}
	for _, it := range def.Items {
		values.Set(attune.PromptField(it.Key), strings.ReplaceAll(it.Prompt, "\n", "\r\n"))
	}
	// A template without the slot is refused, with what was typed shown
	// again; nothing is stored.
	bad := url.Values{}
	for k, v := range values {
		bad[k] = v
	}
	bad.Set("prompt_emotion", "Rate the empathy. <b>no dialogue</b>")
	r := j.c.post(base, bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-prompt_emotion"`, "&lt;b&gt;no dialogue&lt;/b&gt;")
	// Unchanged (line ends aside) is no new version either.
	r = j.c.post(base, values)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-prompts"`)
	if vs, err := j.a.db.ListJudgePrompts(ctx, jd.ID, j.project.RubricVersionID); err != nil || len(vs) != 1 {
		t.Fatalf("versions after refused forms: %d, %v", len(vs), err)
	}

	// Another lead of the project may read the versions but not make one.
	other := j.a.user("other-lead@example.org", attune.RoleLead)
	j.a.member(j.project, other, attune.MemberLead)
	oc := j.a.client()
	oc.mustSignIn(other)
	wantStatus(t, oc.get(base), http.StatusOK)
	wantContains(t, oc.get(base), `data-testid="prompts-locked"`)
	wantStatus(t, oc.get(base+"/new?from=1"), http.StatusForbidden)
	wantStatus(t, oc.post(base, values), http.StatusForbidden)

	// The owner's edit: a marker line the fake model will receive, and
	// markup that the diff must show as text.
	edited := strings.Replace(def.Items[0].Prompt, "{{Dialog}}", "MARKER-V2-7f3 <script>alert(1)</script>\n{{Dialog}}", 1)
	values.Set(attune.PromptField(def.Items[0].Key), edited)
	r = j.c.post(base, values)
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != base+"/2" {
		t.Fatalf("saved version: redirect to %q", loc)
	}
	v2 := j.c.get(base + "/2")
	wantStatus(t, v2, http.StatusOK)
	wantContains(t, v2, `data-testid="prompt-diff"`, `<span class="diff-ins">+ MARKER-V2-7f3 &lt;script&gt;alert(1)&lt;/script&gt;`,
		"Edited from v1 by lead@example.org", `data-testid="prompt-unchanged"`, `name="prompt" value="2"`)
	wantLacks(t, v2, "<script>alert(1)")
	if n := countOf(v2.body, `data-testid="prompt-unchanged"`); n != len(def.Items)-1 {
		t.Errorf("%d items unchanged, want %d", n, len(def.Items)-1)
	}

	// A version the judge lacks is refused on the start form.
	r = j.c.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}, "prompt": {"7"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-prompt"`)

	// Version 2 runs: the run records it, every call of the edited item
	// carries the edit, and its answers are a rater of their own.
	form2 := url.Values{"judge": {fmt.Sprint(jd.ID)}, "prompt": {"2"}, "limit": {""}, "budget": {""}}
	est := j.c.post(projectPath(j.project, "/runs"), form2)
	wantStatus(t, est, http.StatusOK)
	wantContains(t, est, `data-testid="estimate-prompt"`, `name="prompt" value="2"`)
	r = j.c.post(projectPath(j.project, "/runs/confirm"), form2)
	wantStatus(t, r, http.StatusSeeOther)
	runs, err := j.a.db.ListRuns(ctx, j.project.ID)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	run := runs[0]
	if run.PromptVersion != 2 || run.RaterID == jd.RaterID {
		t.Fatalf("run = %+v, want prompt v2 and a rater other than the judge's own %d", run, jd.RaterID)
	}
	if done := j.work(t, run.ID); done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}
	if n := countOf(strings.Join(sent.all, "\n"), "MARKER-V2-7f3"); n < 3 {
		t.Errorf("%d calls carried the edited prompt, want at least one per item (3)", n)
	}
	if n := sent.count("MARKER-V2-7f3"); n > len(sent.all)/len(def.Items)+1 {
		t.Errorf("%d of %d calls carried the edit, which only the first rubric item's prompt has", n, len(sent.all))
	}
	var labels int
	if err := j.a.db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels WHERE rater_id = $1`, run.RaterID).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if labels != 3*len(def.Items) {
		t.Errorf("version 2's rater holds %d labels, want %d", labels, 3*len(def.Items))
	}
	wantContains(t, j.c.get(projectPath(j.project, "")), "Varied · prompt v2")
	wantContains(t, j.c.get(projectPath(j.project, "/report.json")), `"Varied · prompt v2"`)
	used := j.c.get(base)
	wantContains(t, used, `<td class="num">1</td>`)
	// The experiment page offers version 2 as a variant (version 1 never
	// ran), and resolves it to its own rater.
	exp := j.c.get(projectPath(j.project, "/experiment"))
	wantStatus(t, exp, http.StatusOK)
	wantContains(t, exp, `value="Varied@2" checked`, "Varied · prompt v2 (3 answer sets)")
	wantLacks(t, exp, `value="Varied"`)
	wantStatus(t, j.c.get(projectPath(j.project, "/experiment?judge=Varied@2")), http.StatusOK)
	wantStatus(t, j.c.get(projectPath(j.project, "/experiment?judge=Varied@3")), http.StatusNotFound)
}
