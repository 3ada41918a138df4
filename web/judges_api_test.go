package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

// send calls the API and decodes a JSON answer into out (when not nil),
// returning the status and the raw body.
func (c *apiClient) send(method, path string, body, out any) (int, string) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := contractClient(c.t).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

// must is send that fails the test on any other status than want.
func (c *apiClient) must(want int, method, path string, body, out any) string {
	c.t.Helper()
	status, raw := c.send(method, path, body, out)
	if status != want {
		c.t.Fatalf("%s %s: %d, want %d; body %s", method, path, status, want, raw)
	}
	return raw
}

// apiJudgeBody is a valid judge for the fake model, as the API takes it.
func (j *judged) apiJudgeBody(name string) map[string]any {
	return map[string]any{"name": name, "provider": "openai", "base_url": j.baseURL, "model": "fake-1", "key_env": "ATTUNE_TEST_KEY",
		"temperature": 0, "max_tokens": 300, "samples": 1, "seed": 7, "concurrency": 4,
		"price_input": 2.5, "price_cached": 1.25, "price_output": 10}
}

type judgeOut struct {
	ID                  int64    `json:"id"`
	Name                string   `json:"name"`
	Provider            string   `json:"provider"`
	BaseURL             string   `json:"base_url"`
	Model               string   `json:"model"`
	KeyEnv              string   `json:"key_env"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           *int     `json:"max_tokens"`
	Samples             int      `json:"samples"`
	Seed                *int64   `json:"seed"`
	Concurrency         int      `json:"concurrency"`
	RPM                 *int     `json:"rpm"`
	PriceInput          float64  `json:"price_input"`
	PriceOutput         float64  `json:"price_output"`
	Owner               string   `json:"owner"`
	MayChangeConnection bool     `json:"may_change_connection"`
	Totals              *struct {
		Runs  int     `json:"runs"`
		Calls int     `json:"calls"`
		Cost  float64 `json:"cost_usd"`
	} `json:"totals"`
}

type apiErr struct {
	Error  string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

func decodeErr(t *testing.T, raw string) apiErr {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatalf("not an API error: %s", raw)
	}
	return e
}

// TestJudgesAPI creates, reads, edits and tries a judge with a token, by
// the judge form's rules: the same field messages, the admin's allow-list
// of hosts and key variables, a pasted key refused and never repeated,
// only the owner moving the connection, a key sent to a new endpoint only
// when confirmed. The try asks the fake model over HTTP.
func TestJudgesAPI(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	api := j.a.apiFor(j.lead)
	var responses []string

	var list struct {
		Judges []judgeOut `json:"judges"`
	}
	api.must(http.StatusOK, "GET", "/api/v1/judges", nil, &list)
	if len(list.Judges) != 0 {
		t.Fatalf("judges before any: %+v", list.Judges)
	}

	// Bad fields: one message per field, those of the form.
	bad := j.apiJudgeBody("")
	for k, v := range map[string]any{"provider": "gemini", "base_url": "ftp://example.org", "model": "", "key_env": "1BAD",
		"temperature": 3, "max_tokens": -5, "samples": 26, "concurrency": 0, "price_output": -2} {
		bad[k] = v
	}
	status, raw := api.send("POST", "/api/v1/judges", bad, nil)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("bad judge: %d %s", status, raw)
	}
	e := decodeErr(t, raw)
	for _, f := range []string{"name", "provider", "base_url", "model", "key_env", "temperature", "max_tokens", "samples", "concurrency", "price_output"} {
		if e.Fields[f] == "" {
			t.Errorf("no message for %s in %s", f, raw)
		}
	}
	if !strings.Contains(e.Fields["samples"], "from 1 to 25") {
		t.Errorf("samples: %q", e.Fields["samples"])
	}
	// A number written as text is read as the form reads it, with the
	// form's message when it is none.
	worded := j.apiJudgeBody("Worded")
	worded["seed"], worded["samples"] = "seven", "2"
	status, raw = api.send("POST", "/api/v1/judges", worded, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["seed"] != "Enter a whole number, or leave it empty." || len(e.Fields) != 1 {
		t.Errorf("a seed of words: %d %s", status, raw)
	}

	// A key sent anywhere is refused and not repeated; so are URL
	// credentials, and a host the admin has not allowed.
	const pasted = "sk-proj-Zq81mN0pLkQ7vB2xC4dE6fG8hJ"
	keyed := j.apiJudgeBody("Pasted")
	keyed["key_env"] = pasted
	keyed["model"] = "sk-ant-api03-" + pasted[8:]
	keyed["base_url"] = "https://user:hunter2-secret@example.org/v1"
	status, raw = api.send("POST", "/api/v1/judges", keyed, nil)
	e = decodeErr(t, raw)
	if status != http.StatusUnprocessableEntity || e.Fields["key_env"] != attune.MsgKeyInKeyEnv || e.Fields["model"] != attune.MsgKeyElsewhere ||
		e.Fields["base_url"] != attune.MsgCredentialsInURL {
		t.Fatalf("pasted key: %d %s", status, raw)
	}
	for _, secret := range []string{pasted, pasted[8:], "hunter2-secret"} {
		if strings.Contains(raw, secret) {
			t.Fatalf("the refusal repeats %q: %s", secret, raw)
		}
	}
	outside := j.apiJudgeBody("Outside")
	outside["base_url"] = "https://models.example.org/v1"
	status, raw = api.send("POST", "/api/v1/judges", outside, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || !strings.Contains(e.Fields["base_url"], "models.example.org") {
		t.Fatalf("a host not allowed: %d %s", status, raw)
	}
	unlisted := j.apiJudgeBody("Unlisted")
	unlisted["key_env"] = "DATABASE_URL"
	status, raw = api.send("POST", "/api/v1/judges", unlisted, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["key_env"] == "" {
		t.Fatalf("a key variable not allowed: %d %s", status, raw)
	}

	var created judgeOut
	raw = api.must(http.StatusCreated, "POST", "/api/v1/judges", j.apiJudgeBody("Careful"), &created)
	responses = append(responses, raw)
	if created.Name != "Careful" || created.BaseURL != j.baseURL || created.KeyEnv != "ATTUNE_TEST_KEY" || created.Samples != 1 ||
		created.Seed == nil || *created.Seed != 7 || created.Temperature == nil || *created.Temperature != 0 || created.RPM != nil ||
		created.PriceOutput != 10 || created.Owner != j.lead.Email || !created.MayChangeConnection {
		t.Fatalf("created: %s", raw)
	}
	stored, err := j.a.db.FindJudge(context.Background(), created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.CreatedBy == nil || *stored.CreatedBy != j.lead.ID || stored.Settings.MaxTokens != 300 || stored.Settings.Prices.InputPerMTok != 2.5 {
		t.Fatalf("stored: %+v", stored)
	}
	status, raw = api.send("POST", "/api/v1/judges", j.apiJudgeBody("Careful"), nil)
	if status != http.StatusConflict {
		t.Fatalf("a name in use: %d %s", status, raw)
	}

	var one judgeOut
	responses = append(responses, api.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/judges/%d", created.ID), nil, &one))
	if one.ID != created.ID || one.Name != "Careful" || one.Totals != nil {
		t.Fatalf("one judge: %+v", one)
	}
	if s, _ := api.send("GET", "/api/v1/judges/999999", nil, nil); s != http.StatusNotFound {
		t.Fatalf("no such judge: %d", s)
	}
	responses = append(responses, api.must(http.StatusOK, "GET", "/api/v1/judges", nil, &list))
	if len(list.Judges) != 1 || list.Judges[0].ID != created.ID {
		t.Fatalf("list: %+v", list.Judges)
	}

	// Another lead changes the model, not where the key goes.
	other := j.a.user("other-lead@example.org", attune.RoleLead)
	otherAPI := j.a.apiFor(other)
	path := fmt.Sprintf("/api/v1/judges/%d", created.ID)
	edit := j.apiJudgeBody("Careful")
	edit["model"] = "fake-2"
	var edited judgeOut
	otherAPI.must(http.StatusOK, "PUT", path, edit, &edited)
	if edited.Model != "fake-2" || edited.MayChangeConnection {
		t.Fatalf("edited by another lead: %+v", edited)
	}
	moved := j.apiJudgeBody("Careful")
	moved["base_url"] = strings.Replace(j.baseURL, "/v1", "/v2", 1)
	if s, raw := otherAPI.send("PUT", path, moved, nil); s != http.StatusForbidden {
		t.Fatalf("another lead moves the endpoint: %d %s", s, raw)
	}
	// The owner moves it only with the key confirmed for the new address.
	status, raw = api.send("PUT", path, moved, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["key_env"] != attune.MsgConfirmKey {
		t.Fatalf("moved without confirming the key: %d %s", status, raw)
	}
	moved["confirm_key"] = true
	api.must(http.StatusOK, "PUT", path, moved, &edited)
	if edited.BaseURL != moved["base_url"] || edited.Model != "fake-1" {
		t.Fatalf("moved: %+v", edited)
	}
	back := j.apiJudgeBody("Careful")
	back["confirm_key"] = true
	api.must(http.StatusOK, "PUT", path, back, &edited)
	// An annotator's token is refused; a lead's without the judge's
	// project may still read judges, which are global.
	annAPI := j.a.apiFor(j.a.user("ann-judges@example.org", attune.RoleAnnotator))
	if s, _ := annAPI.send("GET", "/api/v1/judges", nil, nil); s != http.StatusForbidden {
		t.Fatalf("an annotator lists judges: %d", s)
	}

	// The try asks the fake model about the project's item x1.
	var trial struct {
		Judge    string `json:"judge"`
		SourceID string `json:"source_id"`
		Failure  string `json:"failure"`
		Results  []struct {
			Key    string `json:"key"`
			Value  string `json:"value"`
			Method string `json:"method"`
			Raw    string `json:"raw"`
			Prompt []struct {
				Role, Content string
			} `json:"prompt"`
			Usage struct {
				Input int `json:"input_tokens"`
			} `json:"usage"`
		} `json:"results"`
		CostUSD float64 `json:"cost_usd"`
	}
	tryPath := path + "/try"
	raw = api.must(http.StatusOK, "POST", tryPath, map[string]any{"project": j.project.ID, "item": "x1"}, &trial)
	responses = append(responses, raw)
	def, err := j.a.db.FindRubricByID(context.Background(), j.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	if trial.Failure != "" || trial.SourceID != "x1" || len(trial.Results) != len(def.Items) || trial.CostUSD <= 0 {
		t.Fatalf("try: %s", raw)
	}
	for _, res := range trial.Results {
		if _, ok := def.Item(res.Key); !ok || res.Value == "" || res.Value == "ERROR" || res.Raw == "" || res.Usage.Input == 0 ||
			len(res.Prompt) == 0 || !strings.Contains(res.Prompt[len(res.Prompt)-1].Content, "driving test") {
			t.Fatalf("try result: %+v", res)
		}
	}
	if j.fake.Stats().OK == 0 {
		t.Fatal("the fake model was never called")
	}
	// Only a project the caller leads, and an item it has.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"project": j.project.ID, "item": "nope"}, "item"},
		{map[string]any{}, "project"},
	} {
		status, raw := api.send("POST", tryPath, c.body, nil)
		if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields[c.field] == "" {
			t.Errorf("try %v: %d %s", c.body, status, raw)
		}
	}
	status, raw = otherAPI.send("POST", tryPath, map[string]any{"project": j.project.ID}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["project"] != "Choose a project you lead." {
		t.Errorf("a try on a project not led: %d %s", status, raw)
	}

	for _, r := range responses {
		if strings.Contains(r, testKey) {
			t.Fatalf("a response holds the API key: %s", r)
		}
	}
	if strings.Contains(j.a.log.String(), testKey) || strings.Contains(j.a.log.String(), pasted) {
		t.Fatal("the log holds a key")
	}
}

type runOut struct {
	ID            int64    `json:"id"`
	JudgeID       int64    `json:"judge_id"`
	Status        string   `json:"status"`
	Reason        string   `json:"reason"`
	PromptVersion int      `json:"prompt_version"`
	BudgetUSD     *float64 `json:"budget_usd"`
	EstimateUSD   float64  `json:"estimate_usd"`
	SpentUSD      float64  `json:"spent_usd"`
	ItemsTotal    int      `json:"items_total"`
	Progress      *struct {
		ItemsDone int     `json:"items_done"`
		Labels    int     `json:"labels"`
		Calls     int     `json:"calls"`
		CostUSD   float64 `json:"cost_usd"`
	} `json:"progress"`
	ByRubricItem []struct {
		Key   string `json:"key"`
		Calls int    `json:"calls"`
	} `json:"by_rubric_item"`
	Actions *struct {
		Pause, Resume, Cancel bool
	} `json:"actions"`
}

type runItemsOut struct {
	Items []struct {
		ItemID   int64             `json:"item_id"`
		SourceID string            `json:"source_id"`
		Answered bool              `json:"answered"`
		Answers  map[string]string `json:"answers"`
		Calls    int               `json:"calls"`
	} `json:"items"`
	Total      int     `json:"total"`
	NextCursor *string `json:"next_cursor"`
}

// TestRunsAPI estimates, starts, watches, pauses, resumes and cancels judge
// runs with a token, as the run pages do: the estimate is the
// confirmation page's, the run starts with its budget, a second run of the
// same judge is refused while one is queued, and the answers page through
// with a cursor.
func TestRunsAPI(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	api := j.a.apiFor(j.lead)
	jd := j.createJudge(t, j.judgeValues("Runner"))
	runs := fmt.Sprintf("/api/v1/projects/%d/runs", j.project.ID)

	// Bad fields: the start form's messages.
	status, raw := api.send("POST", runs+"/estimate", map[string]any{"judge": jd.ID, "limit": 0, "budget_usd": -1, "prompt_version": 3}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["limit"] == "" || e.Fields["budget"] == "" {
		t.Fatalf("bad run: %d %s", status, raw)
	}
	status, raw = api.send("POST", runs+"/estimate", map[string]any{"judge": jd.ID, "prompt_version": 3}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || !strings.Contains(e.Fields["prompt"], "no prompt version 3") {
		t.Fatalf("a prompt version the judge lacks: %d %s", status, raw)
	}
	status, raw = api.send("POST", runs+"/estimate", map[string]any{"judge": 999999}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields["judge"] == "" {
		t.Fatalf("no such judge: %d %s", status, raw)
	}

	var est struct {
		Items       int      `json:"items"`
		RubricItems int      `json:"rubric_items"`
		Calls       int      `json:"calls"`
		USD         float64  `json:"usd"`
		BudgetUSD   *float64 `json:"budget_usd"`
		OverBudget  bool     `json:"over_budget"`
		Active      string   `json:"active_run"`
	}
	api.must(http.StatusOK, "POST", runs+"/estimate", map[string]any{"judge": jd.ID, "budget_usd": 5}, &est)
	// The confirmation page's figures for the same run.
	page := j.c.post(projectPath(j.project, "/runs"), url.Values{"judge": {fmt.Sprint(jd.ID)}, "budget": {"5"}})
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, fmt.Sprintf(`data-testid="estimate-items">%d<`, est.Items), fmt.Sprintf(`data-testid="estimate-calls">%d<`, est.Calls))
	wantContains(t, page, `data-testid="estimate-usd"><strong>`+usdText(est.USD)+`<`)
	if est.Items != 3 || est.Calls != 3*est.RubricItems || est.BudgetUSD == nil || *est.BudgetUSD != 5 || est.OverBudget || est.Active != "" {
		t.Fatalf("estimate: %+v", est)
	}
	if n, _ := j.a.db.ListRuns(context.Background(), j.project.ID); len(n) != 0 {
		t.Fatal("an estimate stored a run")
	}

	var run runOut
	api.must(http.StatusCreated, "POST", runs, map[string]any{"judge": jd.ID, "budget_usd": 5}, &run)
	if run.Status != "queued" || run.BudgetUSD == nil || *run.BudgetUSD != 5 || run.ItemsTotal != 3 || run.EstimateUSD != est.USD ||
		run.Actions == nil || !run.Actions.Pause || run.Actions.Resume {
		t.Fatalf("started: %+v", run)
	}
	// Two runs of one judge at once would answer the same items twice.
	status, raw = api.send("POST", runs, map[string]any{"judge": jd.ID}, nil)
	if status != http.StatusConflict || !strings.Contains(raw, fmt.Sprintf("Run %d of this judge is queued", run.ID)) {
		t.Fatalf("a second run: %d %s", status, raw)
	}
	api.must(http.StatusOK, "POST", runs+"/estimate", map[string]any{"judge": jd.ID}, &est)
	if !strings.Contains(est.Active, fmt.Sprintf("Run %d", run.ID)) {
		t.Fatalf("the estimate does not say a run is active: %+v", est)
	}

	runPath := fmt.Sprintf("%s/%d", runs, run.ID)
	var changed struct {
		Message string `json:"message"`
		Run     runOut `json:"run"`
	}
	api.must(http.StatusOK, "POST", runPath+"/pause", nil, &changed)
	if changed.Run.Status != "paused" || !strings.Contains(changed.Run.Reason, j.lead.Email) || !changed.Run.Actions.Resume || changed.Run.Actions.Pause {
		t.Fatalf("paused: %+v", changed)
	}
	if s, raw := api.send("POST", runPath+"/pause", nil, nil); s != http.StatusConflict || !strings.Contains(raw, "Only a queued or running run") {
		t.Fatalf("paused twice: %d %s", s, raw)
	}
	api.must(http.StatusOK, "POST", runPath+"/resume", nil, &changed)
	if changed.Run.Status != "queued" {
		t.Fatalf("resumed: %+v", changed.Run)
	}
	done := j.work(t, run.ID)
	if done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}
	var status1 runOut
	api.must(http.StatusOK, "GET", runPath, nil, &status1)
	if status1.Status != "completed" || status1.Progress == nil || status1.Progress.ItemsDone != 3 || status1.Progress.Calls == 0 ||
		status1.Progress.CostUSD <= 0 || len(status1.ByRubricItem) == 0 || status1.Actions.Cancel || status1.Actions.Resume {
		t.Fatalf("status: %+v", status1)
	}
	// The run's page shows the same figures.
	runPage := j.c.get(projectPath(j.project, fmt.Sprintf("/runs/%d", run.ID)))
	wantContains(t, runPage, `data-testid="run-status">completed<`, fmt.Sprintf(`data-testid="run-done">%d<`, status1.Progress.ItemsDone))
	if s, raw := api.send("POST", runPath+"/cancel", nil, nil); s != http.StatusConflict || !strings.Contains(raw, "ended already") {
		t.Fatalf("cancel a finished run: %d %s", s, raw)
	}

	var listed struct {
		Runs       []runOut `json:"runs"`
		NextCursor *string  `json:"next_cursor"`
	}
	api.must(http.StatusOK, "GET", runs, nil, &listed)
	if len(listed.Runs) != 1 || listed.Runs[0].ID != run.ID || listed.Runs[0].Status != "completed" || listed.NextCursor != nil {
		t.Fatalf("runs: %+v", listed)
	}
	// Two more runs (of another judge, made by the store): pages of two,
	// newest first, each run once.
	other, err := j.a.db.CreateJudge(context.Background(), nil, attune.JudgePolicy{}, store.NewJudge{Name: "paging", Provider: "openai", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var made []int64
	for range 2 {
		r, err := j.a.db.CreateRun(context.Background(), nil, store.NewRun{JudgeID: other.ID, ProjectID: j.project.ID})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, r.ID)
		// One active run per judge and prompt version: end this one
		// before the next.
		if _, err := j.a.db.SetRunStatus(context.Background(), r.ID, []attune.RunStatus{attune.RunQueued}, attune.RunCancelled, "cancelled", nil); err != nil {
			t.Fatal(err)
		}
	}
	api.must(http.StatusOK, "GET", runs+"?limit=2", nil, &listed)
	if len(listed.Runs) != 2 || listed.Runs[0].ID != made[1] || listed.Runs[1].ID != made[0] || listed.NextCursor == nil {
		t.Fatalf("first page: %+v", listed)
	}
	api.must(http.StatusOK, "GET", runs+"?limit=2&cursor="+*listed.NextCursor, nil, &listed)
	if len(listed.Runs) != 1 || listed.Runs[0].ID != run.ID || listed.NextCursor != nil {
		t.Fatalf("second page: %+v", listed)
	}
	if s, raw := api.send("GET", runs+"?cursor=bogus", nil, nil); s != http.StatusUnprocessableEntity {
		t.Fatalf("a bogus cursor: %d %s", s, raw)
	}

	// The answers, a page of one at a time, each cursor leading on.
	var seen []string
	cursor := ""
	for range 5 {
		var page runItemsOut
		q := "?limit=1"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		api.must(http.StatusOK, "GET", runPath+"/items"+q, nil, &page)
		if page.Total != 3 || len(page.Items) != 1 {
			t.Fatalf("page: %+v", page)
		}
		it := page.Items[0]
		if !it.Answered || len(it.Answers) == 0 || it.Calls == 0 {
			t.Fatalf("item: %+v", it)
		}
		seen = append(seen, it.SourceID)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if strings.Join(seen, ",") != "x1,x2,x3" {
		t.Fatalf("paged through %v, want x1,x2,x3", seen)
	}
	// One item whole, as its page shows it.
	var first0 runItemsOut
	api.must(http.StatusOK, "GET", runPath+"/items?limit=1", nil, &first0)
	var detail struct {
		SourceID string `json:"source_id"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		Answers []struct {
			Key, Value, Method string
			RunID              int64 `json:"run_id"`
		} `json:"answers"`
		JudgeScore *struct {
			Score *float64 `json:"score"`
		} `json:"judge_score"`
		Calls []struct {
			RubricItem string `json:"rubric_item"`
			OK         bool   `json:"ok"`
		} `json:"calls"`
		People []any `json:"people"`
	}
	itemPath := fmt.Sprintf("%s/items/%d", runPath, first0.Items[0].ItemID)
	api.must(http.StatusOK, "GET", itemPath, nil, &detail)
	if detail.SourceID != "x1" || len(detail.Messages) != 2 || len(detail.Answers) != len(first0.Items[0].Answers) || detail.JudgeScore == nil ||
		len(detail.Calls) != first0.Items[0].Calls || detail.People == nil {
		t.Fatalf("item: %+v", detail)
	}
	for _, a := range detail.Answers {
		if a.Value != first0.Items[0].Answers[a.Key] || a.RunID != run.ID || a.Method == "" {
			t.Fatalf("answer %+v, listed %v", a, first0.Items[0].Answers)
		}
	}
	itemPage := j.c.get(projectPath(j.project, fmt.Sprintf("/runs/%d/items/%d", run.ID, first0.Items[0].ItemID)))
	wantStatus(t, itemPage, http.StatusOK)
	if n := strings.Count(itemPage.body, `data-testid="call"`); n != len(detail.Calls) {
		t.Fatalf("the page lists %d calls, the API %d", n, len(detail.Calls))
	}
	if s, _ := api.send("GET", fmt.Sprintf("%s/items/%d", runPath, first0.Items[0].ItemID+1000), nil, nil); s != http.StatusNotFound {
		t.Fatalf("an item of no run: %d", s)
	}

	var all runItemsOut
	api.must(http.StatusOK, "GET", runPath+"/items", nil, &all)
	if len(all.Items) != 3 || all.NextCursor != nil {
		t.Fatalf("one page of all: %+v", all)
	}
	api.must(http.StatusOK, "GET", runPath+"/items?errors=true", nil, &all)
	if len(all.Items) != 0 || all.Total != 0 {
		t.Fatalf("errors of a clean run: %+v", all)
	}
	// A cursor belongs to its run and filter.
	var first runItemsOut
	api.must(http.StatusOK, "GET", runPath+"/items?limit=1", nil, &first)
	for _, q := range []string{"?errors=true&cursor=" + *first.NextCursor, "?cursor=garbage", "?limit=0", "?limit=101", "?errors=maybe"} {
		if s, raw := api.send("GET", runPath+"/items"+q, nil, nil); s != http.StatusUnprocessableEntity {
			t.Errorf("items%s: %d %s", q, s, raw)
		}
	}

	// Cancel a run that has not run yet; a run of another project is not
	// found there.
	api.must(http.StatusCreated, "POST", runs, map[string]any{"judge": jd.ID, "limit": 1}, &run)
	api.must(http.StatusOK, "POST", fmt.Sprintf("%s/%d/cancel", runs, run.ID), nil, &changed)
	if changed.Run.Status != "cancelled" || changed.Message != "Cancelled. The answers so far stay." {
		t.Fatalf("cancelled: %+v", changed)
	}
	elsewhere := j.a.project(j.lead, projectOpts{name: "Elsewhere"})
	if s, _ := api.send("GET", fmt.Sprintf("/api/v1/projects/%d/runs/%d", elsewhere.ID, run.ID), nil, nil); s != http.StatusNotFound {
		t.Fatalf("a run under another project: %d", s)
	}
	// The project's annotators may not run judges; a lead of another
	// project does not see it.
	ann := j.a.user("ann-runs@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	if s, _ := j.a.apiFor(ann).send("GET", runs, nil, nil); s != http.StatusForbidden {
		t.Fatalf("an annotator of the project: %d", s)
	}
	if s, _ := j.a.apiFor(j.a.user("stranger@example.org", attune.RoleLead)).send("GET", runs, nil, nil); s != http.StatusNotFound {
		t.Fatalf("a lead of another project: %d", s)
	}
	j.noKey(t)
}

// TestRunBudgetAPI: a run started through the API with a budget stops at
// it, paused, and resuming it is refused as on its page.
func TestRunBudgetAPI(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	api := j.a.apiFor(j.lead)
	vals := j.judgeValues("Costly")
	vals.Set("price_input", "5000")
	vals.Set("price_output", "5000")
	jd := j.createJudge(t, vals)
	runs := fmt.Sprintf("/api/v1/projects/%d/runs", j.project.ID)
	var est struct {
		OverBudget bool `json:"over_budget"`
	}
	api.must(http.StatusOK, "POST", runs+"/estimate", map[string]any{"judge": jd.ID, "budget_usd": 0.5}, &est)
	if !est.OverBudget {
		t.Fatal("the estimate is not over the budget")
	}
	var run runOut
	api.must(http.StatusCreated, "POST", runs, map[string]any{"judge": jd.ID, "budget_usd": 0.5}, &run)
	if done := j.work(t, run.ID); done.Status != attune.RunPaused {
		t.Fatalf("run ended %s, want paused at its budget", done.Status)
	}
	api.must(http.StatusOK, "GET", fmt.Sprintf("%s/%d", runs, run.ID), nil, &run)
	if run.Status != "paused" || !strings.Contains(run.Reason, "budget") || run.Actions.Resume || !run.Actions.Cancel || run.SpentUSD < 0.5 {
		t.Fatalf("at its budget: %+v", run)
	}
	if s, raw := api.send("POST", fmt.Sprintf("%s/%d/resume", runs, run.ID), nil, nil); s != http.StatusConflict || !strings.Contains(raw, "spent its budget") {
		t.Fatalf("resume a spent run: %d %s", s, raw)
	}
}

// TestPromptVersionsAPI lists, reads and makes a judge's prompt versions
// for the project's rubric with a token, by the rules of the prompt
// pages, and runs a version.
func TestPromptVersionsAPI(t *testing.T) {
	t.Parallel()
	sent := &bodies{}
	j := newJudged(t, fakellm.Options{}, sent.wrap)
	api := j.a.apiFor(j.lead)
	jd := j.createJudge(t, j.judgeValues("Varied"))
	def, err := j.a.db.FindRubricByID(context.Background(), j.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("/api/v1/projects/%d/judges/%d/prompts", j.project.ID, jd.ID)
	type version struct {
		Version       int               `json:"version"`
		ParentVersion *int              `json:"parent_version"`
		Author        string            `json:"author"`
		Prompts       map[string]string `json:"prompts"`
		Changed       []string          `json:"changed"`
	}
	var list struct {
		Versions []version `json:"versions"`
		MayEdit  bool      `json:"may_edit"`
	}
	api.must(http.StatusOK, "GET", base, nil, &list)
	if len(list.Versions) != 1 || list.Versions[0].Version != 1 || !list.MayEdit {
		t.Fatalf("versions: %+v", list)
	}
	var v1 version
	api.must(http.StatusOK, "GET", base+"/1", nil, &v1)
	if len(v1.Prompts) != len(def.Items) || v1.ParentVersion != nil || len(v1.Changed) != 0 {
		t.Fatalf("v1: %+v", v1)
	}
	first := def.Items[0].Key
	if v1.Prompts[first] != def.Items[0].Prompt {
		t.Fatalf("v1's %s is not the rubric's own prompt", first)
	}

	// The same rules as the form: every item, the slot once, a change.
	edited := map[string]string{}
	for k, p := range v1.Prompts {
		edited[k] = p
	}
	status, raw := api.send("POST", base, map[string]any{"from": 1, "prompts": edited}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || !strings.Contains(e.Fields["prompts"], "Nothing changed") {
		t.Fatalf("an unchanged copy: %d %s", status, raw)
	}
	edited[first] = "Be brief and careful.\n" + v1.Prompts[first]
	delete(edited, def.Items[1].Key)
	edited["nope"] = "x " + def.Judge.Slot
	status, raw = api.send("POST", base, map[string]any{"from": 1, "prompts": edited}, nil)
	e := decodeErr(t, raw)
	if status != http.StatusUnprocessableEntity || e.Fields[attune.PromptField(def.Items[1].Key)] == "" || !strings.Contains(e.Fields["prompts"], `"nope"`) {
		t.Fatalf("a missing and an unknown item: %d %s", status, raw)
	}
	delete(edited, "nope")
	edited[def.Items[1].Key] = "no slot here"
	status, raw = api.send("POST", base, map[string]any{"from": 1, "prompts": edited}, nil)
	if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || !strings.Contains(e.Fields[attune.PromptField(def.Items[1].Key)], "exactly once") {
		t.Fatalf("a prompt without the slot: %d %s", status, raw)
	}
	edited[def.Items[1].Key] = v1.Prompts[def.Items[1].Key]
	if s, raw := api.send("POST", base, map[string]any{"from": 9, "prompts": edited}, nil); s != http.StatusUnprocessableEntity || !strings.Contains(raw, "from") {
		t.Fatalf("from a version that does not exist: %d %s", s, raw)
	}
	// Only the judge's owner or an admin makes a version.
	other := j.a.user("co-lead@example.org", attune.RoleLead)
	j.a.member(j.project, other, attune.MemberLead)
	otherAPI := j.a.apiFor(other)
	if s, raw := otherAPI.send("POST", base, map[string]any{"from": 1, "prompts": edited}, nil); s != http.StatusForbidden {
		t.Fatalf("another lead makes a version: %d %s", s, raw)
	}
	otherAPI.must(http.StatusOK, "GET", base, nil, &list)
	if list.MayEdit {
		t.Fatal("another lead may edit")
	}

	var v2 version
	api.must(http.StatusCreated, "POST", base, map[string]any{"prompts": edited}, &v2)
	if v2.Version != 2 || v2.ParentVersion == nil || *v2.ParentVersion != 1 || v2.Author != j.lead.Email ||
		len(v2.Changed) != 1 || v2.Changed[0] != first || v2.Prompts[first] != edited[first] {
		t.Fatalf("v2: %+v", v2)
	}
	var again version
	api.must(http.StatusOK, "GET", base+"/2", nil, &again)
	if again.Version != 2 || len(again.Changed) != 1 {
		t.Fatalf("v2 read back: %+v", again)
	}
	if s, _ := api.send("GET", base+"/3", nil, nil); s != http.StatusNotFound {
		t.Fatalf("v3: %d", s)
	}

	// A run of version 2 asks with its prompt.
	var run runOut
	api.must(http.StatusCreated, "POST", fmt.Sprintf("/api/v1/projects/%d/runs", j.project.ID),
		map[string]any{"judge": jd.ID, "prompt_version": 2, "limit": 1}, &run)
	if run.PromptVersion != 2 {
		t.Fatalf("run: %+v", run)
	}
	if done := j.work(t, run.ID); done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}
	if sent.count("Be brief and careful.") != 1 {
		t.Fatalf("the edited prompt was sent %d times, want once", sent.count("Be brief and careful."))
	}
	api.must(http.StatusOK, "GET", base, nil, &list)
	if len(list.Versions) != 2 {
		t.Fatalf("versions after: %+v", list.Versions)
	}
}

// TestExperimentAPI returns the experiment page's comparison as JSON: the
// figures experiment.Run computes on the same input, for the variants
// asked for, and a note when there is nothing to compare.
func TestExperimentAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := t.Context()
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	api := a.apiFor(lead)
	path := fmt.Sprintf("/api/v1/projects/%d/experiment", p.ID)
	type out struct {
		Available []struct {
			Variant    string `json:"variant"`
			AnswerSets int    `json:"answer_sets"`
		} `json:"available"`
		Compared []string           `json:"compared"`
		Note     string             `json:"note"`
		Epsilon  *float64           `json:"epsilon"`
		Result   *experiment.Result `json:"result"`
	}
	var empty out
	api.must(http.StatusOK, "GET", path, nil, &empty)
	if !strings.Contains(empty.Note, "No judge or prompt version has answered") || empty.Result != nil || len(empty.Available) != 0 {
		t.Fatalf("before any judge: %+v", empty)
	}

	var items strings.Builder
	for i := range 5 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel stuck %d"},{"role":"assistant","content":"What would help most?"}]}`+"\n", i, i)
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "items.jsonl", items.String()), http.StatusSeeOther)
	passing := map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
		"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}
	// The judges answer first: without people's labels no item has gold.
	// The people's labels come next, and settle gold as they arrive.
	var labels, people strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	people.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for i := range 5 {
		for key, v := range passing {
			want := v
			if key == "CQ8" && i >= 2 {
				want = "NO"
			}
			fmt.Fprintf(&people, "c%d,ann,human,%s,%s,\n", i, key, want)
			fmt.Fprintf(&people, "c%d,bo,human,%s,%s,\n", i, key, want)
			fmt.Fprintf(&labels, "c%d,exact,judge,%s,%s,\n", i, key, want)
			fmt.Fprintf(&labels, "c%d,lenient,judge,%s,%s,\n", i, key, v)
		}
	}
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "judges.csv", labels.String()), http.StatusSeeOther)
	var noGold out
	api.must(http.StatusOK, "GET", path, nil, &noGold)
	if !strings.Contains(noGold.Note, "No item has gold answers") || len(noGold.Available) != 2 || len(noGold.Compared) != 2 {
		t.Fatalf("before gold: %+v", noGold)
	}
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "people.csv", people.String()), http.StatusSeeOther)

	var got out
	raw := api.must(http.StatusOK, "GET", path+"?judge=lenient&judge=exact", nil, &got)
	if got.Note != "" || got.Result == nil || strings.Join(got.Compared, ",") != "lenient,exact" || got.Epsilon == nil {
		t.Fatalf("experiment: %s", raw)
	}
	vs := []experiment.Variant{{Judge: "lenient", Version: 1}, {Judge: "exact", Version: 1}}
	in, raters, err := a.db.ExperimentInput(ctx, p.ID, vs)
	if err != nil {
		t.Fatal(err)
	}
	if in.Def, err = a.db.FindRubricByID(ctx, p.RubricVersionID); err != nil {
		t.Fatal(err)
	}
	in.Bootstrap = report.DefaultBootstrap
	want, err := experiment.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	// The alt-test is the report's, as on the page.
	proj, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want, err = report.ExperimentAltTests(ctx, a.db, proj, want, raters.Variants, report.DefaultEpsilon); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got.Result)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Fatalf("the API's result differs from experiment.Run's:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if got.Result.Items != 5 || got.Result.Scores[0].Variant != "lenient" || len(got.Result.Scores[0].Gate.Misses) != 3 {
		t.Fatalf("lenient misses: %+v", got.Result.Scores[0])
	}
	// The page shows the same comparison.
	page := c.get(projectPath(p, "/experiment?judge=lenient&judge=exact"))
	wantContains(t, page, "5 frozen items, 2 variants.")

	if s, raw := api.send("GET", path+"?judge=", nil, nil); s != http.StatusUnprocessableEntity {
		t.Fatalf("an empty variant: %d %s", s, raw)
	}
	ann := a.user("ann-x@example.org", attune.RoleAnnotator)
	a.member(p, ann, attune.MemberAnnotator)
	if s, _ := a.apiFor(ann).send("GET", path, nil, nil); s != http.StatusForbidden {
		t.Fatalf("an annotator: %d", s)
	}
}
