package web_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/web"
)

// judgedItems are three replies; x2 carries markup that must stay text.
const judgedItems = `{"id":"x1","messages":[{"role":"user","content":"I failed my driving test again."},{"role":"assistant","content":"That is frustrating. What went wrong this time?"}]}
{"id":"x2","messages":[{"role":"user","content":"<script>alert('dialogue')</script> my boss yelled"},{"role":"assistant","content":"That sounds upsetting."}]}
{"id":"x3","messages":[{"role":"user","content":"My sister is getting married and I feel left out."},{"role":"assistant","content":"Weddings stir a lot up. What part hurts most?"}]}
`

// judged is a project with items, its lead signed in, and a fake model.
type judged struct {
	a       *app
	lead    *attune.User
	c       *client
	project *attune.Project
	fake    *fakellm.Server
	baseURL string // the fake's OpenAI-compatible base URL
}

// newJudged sets up a Likert project of judgedItems, led by a signed-in
// lead, and a fake model that accepts only testKey. wrap, if given, wraps
// the fake's handler.
func newJudged(t *testing.T, opts fakellm.Options, wrap func(http.Handler) http.Handler) *judged {
	t.Helper()
	return newJudgedWith(t, opts, wrap)
}

// newJudgedWith is newJudged with the app's options changed by appOpts.
func newJudgedWith(t *testing.T, opts fakellm.Options, wrap func(http.Handler) http.Handler, appOpts ...func(*web.Options)) *judged {
	t.Helper()
	a := newApp(t, appOpts...)
	lead := a.user("lead@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{rubric: "empathetic-dialogue@2", overlap: 1})
	if _, err := importer.Import(context.Background(), a.db, p, strings.NewReader(judgedItems), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	opts.APIKey = testKey
	fake := fakellm.New(opts)
	var h http.Handler = fake
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := a.client()
	c.mustSignIn(lead)
	return &judged{a: a, lead: lead, c: c, project: p, fake: fake, baseURL: srv.URL + "/v1"}
}

// judgeValues is a valid judge form for the fake model.
func (j *judged) judgeValues(name string) url.Values {
	return url.Values{
		"name": {name}, "provider": {"openai"}, "base_url": {j.baseURL}, "model": {"fake-1"}, "key_env": {"ATTUNE_TEST_KEY"},
		"temperature": {"0"}, "max_tokens": {"300"}, "samples": {"1"}, "seed": {"7"}, "concurrency": {"4"},
		"rpm": {""}, "tpm": {""}, "price_input": {"2.5"}, "price_cached": {"1.25"}, "price_output": {"10"},
	}
}

// createJudge creates a judge through the form and returns it.
func (j *judged) createJudge(t *testing.T, form url.Values) *attune.Judge {
	t.Helper()
	r := j.c.post("/judges", form)
	wantStatus(t, r, http.StatusSeeOther)
	jd, err := j.a.db.FindJudgeByName(context.Background(), form.Get("name"))
	if err != nil {
		t.Fatal(err)
	}
	if loc := r.Header.Get("Location"); loc != fmt.Sprintf("/judges/%d/edit#try", jd.ID) {
		t.Fatalf("created judge: redirect to %q", loc)
	}
	// The page it lands on says the judge was made, once.
	page := j.c.get(fmt.Sprintf("/judges/%d/edit", jd.ID))
	wantContains(t, page, `data-testid="flash">Created the judge `+html.EscapeString(jd.Name)+`.`)
	wantLacks(t, j.c.get(fmt.Sprintf("/judges/%d/edit", jd.ID)), `data-testid="flash"`)
	return jd
}

// startRun goes through the two steps a lead takes: the estimate, then the
// confirmation. It returns the run.
func (j *judged) startRun(t *testing.T, judgeID int64, limit, budget string) *attune.JudgeRun {
	t.Helper()
	form := url.Values{"judge": {strconv.FormatInt(judgeID, 10)}, "limit": {limit}, "budget": {budget}}
	est := j.c.post(projectPath(j.project, "/runs"), form)
	wantStatus(t, est, http.StatusOK)
	wantContains(t, est, `data-testid="estimate"`, `data-testid="confirm-run"`, `data-testid="estimate-usd"`)
	r := j.c.post(projectPath(j.project, "/runs/confirm"), form)
	wantStatus(t, r, http.StatusSeeOther)
	m := regexp.MustCompile(`/runs/(\d+)$`).FindStringSubmatch(r.Header.Get("Location"))
	if m == nil {
		t.Fatalf("confirm: redirect to %q", r.Header.Get("Location"))
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	run, err := j.a.db.FindRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// work starts a runner of its own over the app's database, which takes the
// queued jobs, and waits for the run to stop. Runs live in PostgreSQL, so
// this is what another replica's worker would do. Its log goes to the
// app's, so that the key checks cover it.
func (j *judged) work(t *testing.T, runID int64) *attune.JudgeRun {
	t.Helper()
	return j.workWith(t, runID, testPolicy)
}

// workWith is work by a runner under the admin's policy.
func (j *judged) workWith(t *testing.T, runID int64, policy attune.JudgePolicy) *attune.JudgeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := judge.NewRunner(j.a.db, judge.RunnerOptions{Getenv: testGetenv, Policy: policy, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(j.a.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	run, err := r.Wait(ctx, runID)
	if err != nil {
		t.Fatalf("waiting for run %d: %v", runID, err)
	}
	return run
}

// noKey checks that the API key is in no page and no log line.
func (j *judged) noKey(t *testing.T, pages ...response) {
	t.Helper()
	for _, p := range pages {
		if strings.Contains(p.body, testKey) {
			t.Fatalf("%s %s shows the API key", p.Request.Method, p.Request.URL.Path)
		}
	}
	if strings.Contains(j.a.log.String(), testKey) {
		t.Fatal("the log holds the API key")
	}
}

func countOf(s, sub string) int { return strings.Count(s, sub) }

func TestJudgeCreateAndEdit(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	c := j.c

	home := c.get("/")
	wantContains(t, home, `data-testid="nav-judges"`, `href="/judges"`)
	list := c.get("/judges")
	wantStatus(t, list, http.StatusOK)
	wantContains(t, list, `data-testid="no-judges"`, `data-testid="new-judge"`)
	form := c.get("/judges/new")
	wantStatus(t, form, http.StatusOK)
	wantContains(t, form, `data-testid="judge-form"`, `name="key_env"`, "Never the key itself", `name="samples" value="1"`)

	// Bad input: a message per field, what was typed kept.
	bad := j.judgeValues("")
	for k, v := range map[string]string{"provider": "gemini", "base_url": "ftp://example.org", "model": "", "key_env": "1BAD",
		"temperature": "3", "max_tokens": "-5", "samples": "26", "seed": "seven", "concurrency": "0", "rpm": "-1", "price_output": "-2"} {
		bad.Set(k, v)
	}
	r := c.post("/judges", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	for _, f := range []string{"name", "provider", "base_url", "model", "key_env", "temperature", "max_tokens", "samples", "seed", "concurrency", "rpm", "price_output"} {
		wantContains(t, r, `data-testid="error-`+f+`"`)
	}
	wantContains(t, r, `value="1BAD"`, `value="26"`, "from 1 to 25", "from 1 to 1024")

	// A key pasted where its variable's name goes is refused and not
	// shown again; so is one pasted into another field, or a URL with
	// credentials.
	const pasted = "sk-proj-Zq81mN0pLkQ7vB2xC4dE6fG8hJ"
	keyed := j.judgeValues("Pasted")
	keyed.Set("key_env", pasted)
	keyed.Set("model", "sk-ant-api03-"+pasted[8:])
	keyed.Set("base_url", "https://user:hunter2-secret@example.org/v1")
	r = c.post("/judges", keyed)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-key_env"`, "looks like an API key itself", `data-testid="error-model"`, `data-testid="error-base_url"`)
	wantLacks(t, r, pasted, pasted[8:], "hunter2-secret")
	for _, v := range []string{testKey, "0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1", "hf_AbCdEfGh1234567890XyZ"} {
		keyed.Set("key_env", v)
		r = c.post("/judges", keyed)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantLacks(t, r, v)
	}
	if js, _ := j.a.db.ListJudges(context.Background()); len(js) != 0 {
		t.Fatalf("%d judges after refused forms, want 0", len(js))
	}
	if strings.Contains(j.a.log.String(), pasted) {
		t.Fatal("the log holds the pasted key")
	}

	jd := j.createJudge(t, j.judgeValues("Careful"))
	st := jd.Settings
	if jd.Provider != "openai" || jd.BaseURL != j.baseURL || jd.APIKeyEnv != "ATTUNE_TEST_KEY" || st.Temperature == nil || *st.Temperature != 0 ||
		st.MaxTokens != 300 || st.Samples != 1 || st.Seed == nil || *st.Seed != 7 || st.Concurrency != 4 || st.Prices.OutputPerMTok != 10 || st.Logprobs {
		t.Fatalf("stored judge %+v", jd)
	}
	list = c.get("/judges")
	wantContains(t, list, `data-testid="judge-row" data-name="Careful"`, `data-testid="judge-key-env">ATTUNE_TEST_KEY<`,
		"temperature 0", "at most 300 tokens an answer", "seed 7", "$2.5 input · $1.25 cached · $10 output", "never run")

	// The name is taken: the conflict shows on the name field.
	r = c.post("/judges", j.judgeValues("Careful"))
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, `data-testid="error-name"`, "already exists")

	edit := c.get(fmt.Sprintf("/judges/%d/edit", jd.ID))
	wantStatus(t, edit, http.StatusOK)
	wantContains(t, edit, `value="Careful"`, `value="ATTUNE_TEST_KEY"`, `name="seed" value="7"`, `data-testid="try-form"`)
	changed := j.judgeValues("Careful v2")
	changed.Set("samples", "5")
	changed.Set("logprobs", "on")
	changed.Set("temperature", "")
	r = c.post(fmt.Sprintf("/judges/%d/edit", jd.ID), changed)
	wantStatus(t, r, http.StatusSeeOther)
	jd, err := j.a.db.FindJudge(context.Background(), jd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if jd.Name != "Careful v2" || jd.Settings.Samples != 5 || !jd.Settings.Logprobs || jd.Settings.Temperature != nil {
		t.Fatalf("edited judge %+v", jd)
	}
	changed.Set("concurrency", "2000")
	r = c.post(fmt.Sprintf("/judges/%d/edit", jd.ID), changed)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-concurrency"`)
	wantStatus(t, c.get("/judges/999999/edit"), http.StatusNotFound)
	j.noKey(t, list, edit, r)
}

func TestJudgeAccess(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Guarded"))
	run := j.startRun(t, jd.ID, "", "")
	runURL := projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))

	// An annotator on the project: 403 on every judge and run page, and
	// no trace of judges on their pages.
	ann := j.a.user("ann@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	ac := j.a.client()
	ac.mustSignIn(ann)
	for _, path := range []string{"/judges", "/judges/new", fmt.Sprintf("/judges/%d/edit", jd.ID),
		runURL, runURL + "/items", runURL + "/progress", fmt.Sprintf("%s/items/%d", runURL, run.ID)} {
		wantStatus(t, ac.get(path), http.StatusForbidden)
	}
	for _, path := range []string{"/judges", fmt.Sprintf("/judges/%d/edit", jd.ID), fmt.Sprintf("/judges/%d/try", jd.ID),
		projectPath(j.project, "/runs"), projectPath(j.project, "/runs/confirm"), runURL + "/pause", runURL + "/cancel"} {
		wantStatus(t, ac.post(path, j.judgeValues("Sneaky")), http.StatusForbidden)
	}
	home := ac.get("/")
	wantLacks(t, home, `data-testid="nav-judges"`)
	wantLacks(t, ac.get(projectPath(j.project, "")), `data-testid="project-judges"`)

	// A lead of another project: the project's runs do not exist for them.
	other := j.a.client()
	other.mustSignIn(j.a.user("other@example.org", attune.RoleLead))
	wantStatus(t, other.get("/judges"), http.StatusOK)
	for _, path := range []string{runURL, runURL + "/items", runURL + "/progress"} {
		wantStatus(t, other.get(path), http.StatusNotFound)
	}
	wantStatus(t, other.post(runURL+"/cancel", nil), http.StatusNotFound)
	wantStatus(t, other.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}}), http.StatusNotFound)
	// Trying a judge on their project's items is refused too.
	r := other.post(fmt.Sprintf("/judges/%d/try", jd.ID), url.Values{"project": {fmt.Sprint(j.project.ID)}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-project"`)

	// A run of another project is not found under this one.
	p2 := j.a.project(j.lead, projectOpts{name: "Second", rubric: "empathetic-dialogue@2", overlap: 1})
	wantStatus(t, j.c.get(projectPath(p2, fmt.Sprintf("/runs/%d", run.ID))), http.StatusNotFound)

	// Signed out: the sign-in page, then back.
	out := j.a.client()
	r = out.get("/judges")
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); !strings.HasPrefix(loc, "/login?next=") {
		t.Fatalf("signed out: redirect to %q", loc)
	}
	// A cross-site form is refused.
	r = j.c.postWith("/judges", j.judgeValues("Forged"), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	wantStatus(t, r, http.StatusForbidden)
}

func TestJudgeTry(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Tried"))
	tryURL := fmt.Sprintf("/judges/%d/try", jd.ID)

	// The first item, when none is named.
	r := j.c.post(tryURL, url.Values{"project": {fmt.Sprint(j.project.ID)}, "item": {""}})
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "Nothing was stored", `data-testid="capabilities"`, "<code>x1</code>", `data-testid="try-totals"`)
	if n := countOf(r.body, `data-testid="try-result"`); n != 5 {
		t.Fatalf("%d rubric items tried, want 5", n)
	}
	if n := countOf(r.body, `data-testid="try-raw"`); n != 5 {
		t.Fatalf("%d raw replies, want 5", n)
	}
	wantLacks(t, r, `data-testid="try-failed"`, `data-testid="try-error"`)
	if st := j.fake.Stats(); st.OK < 6 { // the probe and five rubric items
		t.Fatalf("fake model saw %d good answers, want at least 6", st.OK)
	}

	// The item named, with markup in its dialogue: the prompt shows it as
	// text.
	r = j.c.post(tryURL, url.Values{"project": {fmt.Sprint(j.project.ID)}, "item": {"x2"}})
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "<code>x2</code>", "&lt;script&gt;alert(")
	wantLacks(t, r, "<script>alert(")

	// Nothing was stored: no answers, no calls.
	var sets, calls int
	if err := j.a.db.Pool().QueryRow(context.Background(), `SELECT (SELECT count(*) FROM answer_sets), (SELECT count(*) FROM judge_calls)`).Scan(&sets, &calls); err != nil {
		t.Fatal(err)
	}
	if sets != 0 || calls != 0 {
		t.Fatalf("a try stored %d answer sets and %d calls", sets, calls)
	}

	// Bad choices re-show the form.
	r = j.c.post(tryURL, url.Values{"project": {"x"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-project"`)
	r = j.c.post(tryURL, url.Values{"project": {fmt.Sprint(j.project.ID)}, "item": {"nope"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-item"`, "no item with the id")

	// A key variable that is not set, and a key the endpoint refuses: the
	// reason, never the key.
	unset := j.judgeValues("Unset")
	unset.Set("key_env", "ATTUNE_NOT_SET")
	jd2 := j.createJudge(t, unset)
	r2 := j.c.post(fmt.Sprintf("/judges/%d/try", jd2.ID), url.Values{"project": {fmt.Sprint(j.project.ID)}})
	wantStatus(t, r2, http.StatusOK)
	wantContains(t, r2, `data-testid="try-failed"`, "ATTUNE_NOT_SET", "is not set")

	// An endpoint that wants another key than the one the judge sends.
	wrongKey := httptest.NewServer(fakellm.New(fakellm.Options{APIKey: "sk-some-other-key-entirely"}))
	t.Cleanup(wrongKey.Close)
	refused := j.judgeValues("Refused")
	refused.Set("base_url", wrongKey.URL+"/v1")
	jd3 := j.createJudge(t, refused)
	r3 := j.c.post(fmt.Sprintf("/judges/%d/try", jd3.ID), url.Values{"project": {fmt.Sprint(j.project.ID)}})
	wantStatus(t, r3, http.StatusOK)
	wantContains(t, r3, `data-testid="try-failure"`, "refused the API key")
	j.noKey(t, r, r2, r3)
}

func TestJudgeRunEndToEnd(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Runner"))
	ctx := context.Background()

	// A person labels x1 first, to be compared with the judge.
	ann := j.a.user("ann@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	api := j.a.apiFor(ann)
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", j.project.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	humanItem := int64(next["item"].(map[string]any)["id"].(float64))
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers}); status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, body)
	}

	// The project page offers the judge; bad input comes back on it.
	page := j.c.get(projectPath(j.project, ""))
	wantContains(t, page, `data-testid="project-judges"`, `data-testid="start-run"`, `data-testid="no-runs"`, "Runner (fake-1)")
	r := j.c.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}, "limit": {"0"}, "budget": {"-1"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-limit"`, `data-testid="error-budget"`, `data-testid="project-judges"`)

	// The estimate comes first and stores nothing.
	est := j.c.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}, "budget": {"5"}})
	wantStatus(t, est, http.StatusOK)
	wantContains(t, est, `data-testid="estimate-items">3<`, `data-testid="estimate-calls">15<`, `data-testid="estimate-budget">`, "$5.00")
	if runs, _ := j.a.db.ListRuns(ctx, j.project.ID); len(runs) != 0 {
		t.Fatalf("%d runs after the estimate, want 0", len(runs))
	}

	run := j.startRun(t, jd.ID, "", "5")
	if run.Status != attune.RunQueued || run.ItemsTotal != 3 || run.BudgetUSD == nil || *run.BudgetUSD != 5 || run.EstimateUSD <= 0 {
		t.Fatalf("stored run %+v", run)
	}
	runURL := projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))
	queued := j.c.get(runURL)
	wantStatus(t, queued, http.StatusOK)
	wantContains(t, queued, `data-testid="run-status">queued<`, `hx-trigger="every 2s"`, `hx-get="`+runURL+`/progress"`, `data-testid="run-pause"`)

	done := j.work(t, run.ID)
	if done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}

	page = j.c.get(runURL)
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="run-status">completed<`, `data-testid="run-done">3<`, `data-testid="run-total">3<`,
		`data-testid="run-labels">15<`, "Structured output: yes", `data-testid="run-by-item-row" data-key="emotion"`)
	wantLacks(t, page, `hx-trigger=`, `data-testid="run-pause"`, `data-testid="run-cancel"`)
	pr, err := j.a.db.RunProgress(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if pr.CostUSD <= 0 || pr.Calls < 15 {
		t.Fatalf("progress %+v", pr)
	}
	wantContains(t, page, fmt.Sprintf(`data-testid="run-cost">%s<`, usdText(pr.CostUSD)), fmt.Sprintf(`data-testid="run-calls">%d<`, pr.Calls))
	if n := countOf(page.body, `data-testid="run-by-item-row"`); n != 5 {
		t.Fatalf("%d rubric item rows, want 5", n)
	}

	// The polled part alone, for htmx; a browser asking for it gets the page.
	req, _ := http.NewRequest(http.MethodGet, j.c.base+runURL+"/progress", nil)
	req.Header.Set("HX-Request", "true")
	part := j.c.do(req)
	wantStatus(t, part, http.StatusOK)
	wantContains(t, part, `id="run-progress"`, `data-testid="run-done">3<`)
	wantLacks(t, part, "<html", `hx-trigger=`)
	wantStatus(t, j.c.get(runURL+"/progress"), http.StatusSeeOther)

	// The answers: every item, then one beside the person's answers.
	items := j.c.get(runURL + "/items")
	wantStatus(t, items, http.StatusOK)
	if n := countOf(items.body, `data-testid="run-item-row"`); n != 3 {
		t.Fatalf("%d item rows, want 3", n)
	}
	wantContains(t, items, `data-source="x1"`, "Items 1–3 of 3")
	wantLacks(t, items, `data-testid="next-page"`)
	one := j.c.get(fmt.Sprintf("%s/items/%d", runURL, humanItem))
	wantStatus(t, one, http.StatusOK)
	if n := countOf(one.body, `data-testid="judge-answer"`); n != 5 {
		t.Fatalf("%d judge answers, want 5", n)
	}
	if n := countOf(one.body, `data-testid="call-raw"`); n < 5 {
		t.Fatalf("%d raw calls, want at least 5", n)
	}
	wantContains(t, one, `data-testid="compare-rater">Runner (judge)<`, `data-testid="compare-rater">ann@example.org<`,
		`data-testid="answer-method">structured<`, `data-testid="compare-score"`, `data-testid="answer-rationale"`)
	wantStatus(t, j.c.get(runURL+"/items/999999"), http.StatusNotFound)

	// The project's page lists the run; the judges list sums its use.
	page = j.c.get(projectPath(j.project, ""))
	wantContains(t, page, `data-testid="run-row"`, `data-testid="run-status">completed<`)
	list := j.c.get("/judges")
	wantContains(t, list, "1 run · ")
	j.noKey(t, est, queued, page, part, items, one, list)
}

// usdText writes dollars as the pages do below ten cents.
func usdText(x float64) string {
	if x >= 0.001 {
		return fmt.Sprintf("$%.4f", x)
	}
	return fmt.Sprintf("$%.6f", x)
}

// markup injects HTML into every answer of the fake model, as a hostile
// or confused model might write it. It holds no digit, which a numeric
// scale's tolerant parsing would read as an answer.
func markup(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		body = bytes.ReplaceAll(body, []byte("Hmm, hard to say."), []byte("<script>alert(document.cookie)</script> Hmm, hard to say."))
		body = bytes.ReplaceAll(body, []byte("Hard to say."), []byte("<b onmouseover=alert(document.domain)>Hard</b> to say."))
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

func TestJudgeRunErrorsShowRawEscaped(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{RateGarbage: 1}, markup)
	jd := j.createJudge(t, j.judgeValues("Confused"))
	run := j.startRun(t, jd.ID, "2", "")
	if run.ItemsTotal != 2 {
		t.Fatalf("run over %d items, want 2", run.ItemsTotal)
	}
	done := j.work(t, run.ID)
	if done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}
	runURL := projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))
	page := j.c.get(runURL)
	wantContains(t, page, `data-testid="run-errors"><a href="`+runURL+`/items?errors=1">10<`)

	errs := j.c.get(runURL + "/items?errors=1")
	wantStatus(t, errs, http.StatusOK)
	if n := countOf(errs.body, `data-testid="run-item-row"`); n != 2 {
		t.Fatalf("%d items with an ERROR, want 2", n)
	}
	m := regexp.MustCompile(`href="(` + regexp.QuoteMeta(runURL) + `/items/\d+)"`).FindStringSubmatch(errs.body)
	if m == nil {
		t.Fatalf("no item link in %.600s", errs.body)
	}
	one := j.c.get(m[1])
	wantStatus(t, one, http.StatusOK)
	wantContains(t, one, `data-testid="answer-value">ERROR<`, `data-testid="answer-method">error<`, `data-testid="call-reask"`,
		"&lt;script&gt;alert(document.cookie)&lt;/script&gt; Hmm, hard to say.", `data-testid="answer-raw"`,
		// Each ERROR says why it is one, where it is shown.
		`data-testid="answer-reason">Why ERROR: re-asked once, and still the reply held no readable answer: the answer must be one of`)
	wantLacks(t, one, "<script>alert(document.cookie)", "<b onmouseover")
	if n := countOf(one.body, `data-testid="call-raw"`); n != 10 { // five rubric items, each asked and re-asked
		t.Fatalf("%d raw calls, want 10", n)
	}

	// A try shows the same replies as text.
	r := j.c.post(fmt.Sprintf("/judges/%d/try", jd.ID), url.Values{"project": {fmt.Sprint(j.project.ID)}})
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="try-value">ERROR<`, "&lt;script&gt;alert(document.cookie)&lt;/script&gt;")
	wantLacks(t, r, "<script>alert(document.cookie)", "<b onmouseover")
	j.noKey(t, page, errs, one, r)
}

func TestJudgeRunPauseResumeCancel(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Controlled"))
	run := j.startRun(t, jd.ID, "", "")
	runURL := projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))
	status := func(want attune.RunStatus) response {
		t.Helper()
		r, err := j.a.db.FindRun(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Fatalf("run is %s, want %s", r.Status, want)
		}
		page := j.c.get(runURL)
		wantContains(t, page, `data-testid="run-status">`+string(want)+`<`)
		return page
	}

	// A second run of the same judge while one is queued is refused.
	form := url.Values{"judge": {fmt.Sprint(jd.ID)}}
	est := j.c.post(projectPath(j.project, "/runs"), form)
	wantContains(t, est, `data-testid="run-active"`, "disabled")
	r := j.c.post(projectPath(j.project, "/runs/confirm"), form)
	wantStatus(t, r, http.StatusSeeOther)
	if runs, _ := j.a.db.ListRuns(context.Background(), j.project.ID); len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}

	wantStatus(t, j.c.post(runURL+"/pause", nil), http.StatusSeeOther)
	page := status(attune.RunPaused)
	wantContains(t, page, `data-testid="run-reason">paused by lead@example.org<`, `data-testid="run-resume"`, `data-testid="run-cancel"`)
	wantLacks(t, page, `data-testid="run-pause"`, `hx-trigger=`)

	wantStatus(t, j.c.post(runURL+"/resume", nil), http.StatusSeeOther)
	page = status(attune.RunQueued)
	wantContains(t, page, `hx-trigger="every 2s"`)
	// Resuming what is not paused is refused with a message.
	wantStatus(t, j.c.post(runURL+"/resume", nil), http.StatusSeeOther)
	page = status(attune.RunQueued)
	wantContains(t, page, `data-testid="flash"`, "Only a paused run can be resumed")

	wantStatus(t, j.c.post(runURL+"/cancel", nil), http.StatusSeeOther)
	page = status(attune.RunCancelled)
	wantLacks(t, page, `data-testid="run-resume"`, `data-testid="run-cancel"`, `hx-trigger=`)
	wantStatus(t, j.c.post(runURL+"/cancel", nil), http.StatusSeeOther)
	page = status(attune.RunCancelled)
	wantContains(t, page, "This run has ended already")

	// A cancelled run frees the judge for a new one, which works to its
	// end even though the worker also sees the cancelled run's job.
	run2 := j.startRun(t, jd.ID, "1", "")
	if done := j.work(t, run2.ID); done.Status != attune.RunCompleted {
		t.Fatalf("second run ended %s (%s)", done.Status, done.Reason)
	}
	j.noKey(t, page)
}

// TestJudgeRunBudget: a run stops at its budget, paused with the reason.
func TestJudgeRunBudget(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	vals := j.judgeValues("Costly")
	vals.Set("price_input", "5000")
	vals.Set("price_output", "5000")
	jd := j.createJudge(t, vals)
	est := j.c.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}, "budget": {"0.5"}})
	wantContains(t, est, `data-testid="over-budget"`)
	run := j.startRun(t, jd.ID, "", "0.5")
	done := j.work(t, run.ID)
	if done.Status != attune.RunPaused {
		t.Fatalf("run ended %s, want paused at its budget", done.Status)
	}
	page := j.c.get(projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID)))
	wantContains(t, page, `data-testid="run-status">paused<`, "the budget of $0.50 is spent", `data-testid="run-budget">$0.50<`, `data-testid="run-cancel"`)
	// Resuming would stop again at once: a new run with a larger budget
	// is the way on.
	wantLacks(t, page, `data-testid="run-resume"`)
	runURL := projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))
	wantStatus(t, j.c.post(runURL+"/resume", nil), http.StatusSeeOther)
	page = j.c.get(runURL)
	wantContains(t, page, `data-testid="run-status">paused<`, "spent its budget")
	j.noKey(t, page)
}

// TestBrowserRunProgressPolls: the run's page follows the run without a
// reload while it is queued or running, and stops asking once it ends.
func TestBrowserRunProgressPolls(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Watched"))
	run := j.startRun(t, jd.ID, "", "")
	runURL := j.a.srv.URL + projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID))

	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(runURL),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.KeyEvent(j.lead.Email),
		chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("pw-"+j.lead.Email),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#run-progress[data-status=queued]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// A mark on the window survives swaps and dies with a reload.
	eval[bool](t, ctx, `window.notReloaded = true`)
	j.work(t, run.ID)
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`document.querySelector('#run-progress').dataset.status === 'completed'`)); err != nil {
		t.Fatalf("the page never showed the run completed: %v", err)
	}
	if !eval[bool](t, ctx, `window.notReloaded === true`) {
		t.Fatal("the page reloaded instead of swapping the progress in")
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid=run-done]').textContent`); got != "3" {
		t.Fatalf("items done %q, want 3", got)
	}
	if eval[bool](t, ctx, `document.querySelector('#run-progress').hasAttribute('hx-trigger')`) {
		t.Fatal("the finished run's progress still polls")
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "judge-run")

	// The answers of one item, for people to look at.
	if err := chromedp.Do(ctx, chromedp.Navigate(runURL+"/items"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=run-items]`))); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "judge-items")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=run-item-row] a`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=compare]`))); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "judge-item")
	if sw := eval[int](t, ctx, `document.documentElement.scrollWidth`); sw > 1280 {
		t.Fatalf("the answers page is %dpx wide: it scrolls sideways", sw)
	}
}
