package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/store"
)

// goldOn gives an item of the labelling project a lead's gold.
func (l *labelling) goldOn(t *testing.T, source string, answers map[string]string) {
	t.Helper()
	if err := l.a.db.Adjudicate(context.Background(), store.Adjudication{ProjectID: l.p.ID, ItemID: l.itemID(t, source),
		ActorID: l.lead.ID, Answers: answers}); err != nil {
		t.Fatal(err)
	}
}

var calibrationGold = map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "4"}

func TestCalibrationAPI(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{annotators: 1})
	l.goldOn(t, "r1", calibrationGold)
	lead := l.a.apiFor(l.lead)
	base := fmt.Sprintf("/api/v1/projects/%d/calibration", l.p.ID)

	status, body := lead.call("POST", base, map[string]any{"item": "r1", "explanations": map[string]string{"safety": "No risk is raised."}})
	if status != http.StatusCreated || body["source_id"] != "r1" || body["gold"].(map[string]any)["safety"] != "5" ||
		body["explanations"].(map[string]any)["safety"] != "No risk is raised." {
		t.Fatalf("add: %d %v", status, body)
	}
	for _, tt := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"item": "r2"}, "no gold for every rubric item"},
		{map[string]any{"item": "r1", "explanations": map[string]string{"warmth": "x"}}, `"warmth"`},
		{map[string]any{"item": ""}, "enter the item's id"},
	} {
		status, body := lead.call("POST", base, tt.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body), tt.want) {
			t.Errorf("%v: %d %v, want 422 naming %s", tt.body, status, body, tt.want)
		}
	}
	status, body = lead.call("GET", base, nil)
	items, _ := body["items"].([]any)
	if status != http.StatusOK || len(items) != 1 || body["pass_percent"] != 80.0 || body["qualify"] != 0.0 {
		t.Fatalf("list: %d %v", status, body)
	}
	// Annotators do not see the calibration set: it would reveal gold.
	if status, _ := l.a.apiFor(l.anns[0]).call("GET", base, nil); status != http.StatusForbidden {
		t.Fatalf("annotator: %d", status)
	}
	r1 := l.itemID(t, "r1")
	if status, body := lead.call("DELETE", fmt.Sprintf("%s/%d", base, r1), nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d %v", status, body)
	}
	if status, _ := lead.call("DELETE", fmt.Sprintf("%s/%d", base, r1), nil); status != http.StatusConflict {
		t.Fatalf("second delete: %d", status)
	}
}

func TestCalibrationPage(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{annotators: 1})
	l.goldOn(t, "r1", calibrationGold)
	lead := l.signedIn(l.lead)
	base := fmt.Sprintf("/projects/%d/calibration", l.p.ID)

	r := lead.post(base, url.Values{"item": {"r2"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="add-error"`, "no gold for every rubric item")
	r = lead.post(base, url.Values{"item": {"r1"}, "explain.helpfulness": {"It offers <no> next step."}})
	wantStatus(t, r, http.StatusSeeOther)
	page := lead.get(base)
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="calibration-item"`, "emotion=4 validation=4 helpfulness=3 safety=5 overall=4")
	list, _ := l.a.db.ListCalibration(context.Background(), l.p.ID)
	if len(list) != 1 || list[0].Explanations["helpfulness"] != "It offers <no> next step." {
		t.Fatalf("stored %+v", list)
	}

	r = lead.post(base+"/policy", url.Values{"qualify": {"2"}, "every": {"1"}, "pass": {"80"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="policy-error"`, "every must be 0")
	wantStatus(t, lead.post(base+"/policy", url.Values{"qualify": {"2"}, "every": {"20"}, "pass": {"75"}}), http.StatusSeeOther)
	if pol, _ := l.a.db.CalibrationPolicy(context.Background(), l.p.ID); pol.Qualify != 2 || pol.Every != 20 || pol.PassPercent != 75 {
		t.Fatalf("policy %+v", pol)
	}
	wantStatus(t, lead.post(base+"/remove", url.Values{"item": {"r1"}}), http.StatusSeeOther)
	wantContains(t, lead.get(base), `data-testid="calibration-empty"`)
	// The page is the leads': an annotator of the project is refused.
	if r := l.signedIn(l.anns[0]).get(base); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
		t.Fatalf("annotator: %d", r.StatusCode)
	}
}

// TestReportShowsCalibration has an annotator answer a calibration item
// through the API, a point high on emotion and far off on safety: the
// report's JSON and page give their standing as the engine grades it.
func TestReportShowsCalibration(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{annotators: 1})
	ctx := context.Background()
	l.goldOn(t, "r1", calibrationGold)
	if _, err := l.a.db.AddCalibration(ctx, &l.lead.ID, l.p.ID, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if err := l.a.db.SetCalibrationPolicy(ctx, &l.lead.ID, l.p.ID, calibration.Policy{Qualify: 1, PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	ann := l.a.apiFor(l.anns[0])
	status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != http.StatusOK || next["item"].(map[string]any)["source_id"] != "r1" {
		t.Fatalf("next: %d %v, want the calibration item", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	given := map[string]string{"emotion": "5", "validation": "4", "helpfulness": "3", "safety": "2", "overall": "4"}
	if status, resp := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": given, "confirm_warnings": true}); status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, resp)
	}

	lead := l.signedIn(l.lead)
	r := lead.get(projectPath(l.p, "/report.json"))
	wantStatus(t, r, http.StatusOK)
	var rep struct {
		Calibration []struct {
			Name       string   `json:"name"`
			Kind       string   `json:"kind"`
			N          int      `json:"n"`
			Accuracy   float64  `json:"accuracy"`
			Leniency   *float64 `json:"leniency"`
			Drifting   bool     `json:"drifting"`
			DriftingOn []string `json:"drifting_on"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatal(err)
	}
	// 4 of 5 within tolerance (safety is 3 below gold); (+1 − 3) / 5.
	if len(rep.Calibration) != 1 {
		t.Fatalf("calibration %+v, want the one annotator", rep.Calibration)
	}
	c := rep.Calibration[0]
	if c.Kind != "human" || c.N != 1 || c.Accuracy != 0.8 || c.Leniency == nil || *c.Leniency != -0.4 || c.Drifting || c.DriftingOn == nil {
		t.Errorf("calibration %+v (leniency %v), want n 1, accuracy 0.8, leniency −0.4, not drifting", c, c.Leniency)
	}
	page := lead.get(projectPath(l.p, "/report"))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="calibration-row"`, "80%", "-0.40")
	wantContains(t, page, `<span data-testid="drift-rate">with probability at most 5% over their first 1,000 calibration answers</span>`)
	csvReport := lead.get(projectPath(l.p, "/report.csv"))
	wantStatus(t, csvReport, http.StatusOK)
	wantContains(t, csvReport, ",calibration_accuracy,", ",1,0.8,,,", ",calibration_leniency,", ",1,-0.4,,,", ",calibration_drifting,", ",1,0,,,")
}

// TestCalibrationAlertAndPause has an annotator miss five calibration
// items: the project page alerts the lead, who pauses the person's queue
// with a reason the person then reads, and resumes it.
func TestCalibrationAlertAndPause(t *testing.T) {
	t.Parallel()
	var items strings.Builder
	for i := range 6 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel low, day %d."},{"role":"assistant","content":"That sounds heavy. What happened?"}]}`+"\n", i, i)
	}
	l := newLabelling(t, labellingOpts{annotators: 1, items: items.String()})
	ctx := context.Background()
	for i := range 5 {
		source := fmt.Sprintf("c%d", i)
		l.goldOn(t, source, calibrationGold)
		if _, err := l.a.db.AddCalibration(ctx, &l.lead.ID, l.p.ID, source, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.a.db.SetCalibrationPolicy(ctx, &l.lead.ID, l.p.ID, calibration.Policy{Qualify: 5, PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.a.db.CreateWebhook(ctx, &l.lead.ID, testPolicy, l.p.ID, "http://127.0.0.1:1/hook", []attune.WebhookEvent{attune.EventCalibrationAlert}); err != nil {
		t.Fatal(err)
	}
	lead := l.signedIn(l.lead)
	if page := lead.get(projectPath(l.p, "")); strings.Contains(page.body, `data-testid="calibration-alert"`) {
		t.Fatal("an alert before anyone answered")
	}
	ann := l.a.apiFor(l.anns[0])
	far := map[string]string{"emotion": "1", "validation": "1", "helpfulness": "1", "safety": "1", "overall": "1"}
	for range 5 {
		status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
		if status != http.StatusOK {
			t.Fatalf("next: %d %v", status, next)
		}
		asg := next["assignment"].(map[string]any)["id"].(float64)
		if status, resp := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": far, "confirm_warnings": true}); status != http.StatusCreated {
			t.Fatalf("submit: %d %v", status, resp)
		}
	}

	// The fifth miss raised the alert, and the webhook was told once.
	var deliveries int
	var body string
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT count(*), coalesce(max(d.body::text), '') FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE w.project_id = $1 AND d.event = 'calibration.alert'`, l.p.ID).Scan(&deliveries, &body); err != nil {
		t.Fatal(err)
	}
	if deliveries != 1 || !strings.Contains(body, "below the pass mark of 80%") || !strings.Contains(body, l.anns[0].Email) {
		t.Errorf("%d calibration.alert deliveries (%s), want one naming the annotator and the pass mark", deliveries, body)
	}
	page := lead.get(projectPath(l.p, ""))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="calibration-alert"`, "0% against gold over 5 calibration items, below the pass mark of 80%")
	// The page states the drift charts' false-alarm rate; the constants
	// (held by the calibration package's simulations) must say the same.
	const stated = `<span data-testid="drift-rate">with probability at most 5% over their first 1,000 calibration answers</span>`
	wantContains(t, page, stated)
	if calibration.FalseAlarm != 0.05 || calibration.Horizon != 1000 {
		t.Errorf("the page states 5%% over 1,000 answers; the charts hold %v over %d", calibration.FalseAlarm, calibration.Horizon)
	}

	uid := l.anns[0].ID
	queue := projectPath(l.p, fmt.Sprintf("/members/%d/queue", uid))
	wantStatus(t, lead.post(queue, url.Values{"pause": {"1"}, "why": {strings.Repeat("x", 501)}}), http.StatusSeeOther)
	wantContains(t, lead.get(projectPath(l.p, "")), "at most 500")
	wantStatus(t, lead.post(queue, url.Values{"pause": {"1"}, "why": {"Please reread the <safety> anchors."}}), http.StatusSeeOther)
	page = lead.get(projectPath(l.p, ""))
	wantContains(t, page, `data-testid="queue-paused"`, "Their queue is paused.", "Please reread the &lt;safety&gt; anchors.")
	status, refusal := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status == http.StatusOK || !strings.Contains(fmt.Sprint(refusal), "Please reread the <safety> anchors.") {
		t.Fatalf("next while paused: %d %v, want a refusal with the lead's reason", status, refusal)
	}

	wantStatus(t, lead.post(queue, url.Values{"pause": {"0"}}), http.StatusSeeOther)
	members, err := l.a.db.ListMembers(ctx, l.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.Paused {
			t.Errorf("%s still paused after resuming", m.Email)
		}
	}
	// Only annotators have a queue to pause.
	if r := lead.post(projectPath(l.p, fmt.Sprintf("/members/%d/queue", l.lead.ID)), url.Values{"pause": {"1"}}); r.StatusCode != http.StatusNotFound {
		t.Errorf("pausing a lead: %d, want 404", r.StatusCode)
	}
}

// TestReportShowsJudgeSentinels: a judge's sentinel answers, run by run,
// reach the report as a series; the run where its accuracy stepped is
// named with its date in report.json and on the page, and the runs whose
// baseline was too short to tell say so.
func TestReportShowsJudgeSentinels(t *testing.T) {
	t.Parallel()
	// Five calibration items: the fewest a step is told on.
	var items strings.Builder
	for i := range calibration.MinSentinelItems {
		items.WriteString(conversation(fmt.Sprintf("k%d", i+1), 2, ""))
	}
	l := newLabelling(t, labellingOpts{annotators: 1, items: items.String()})
	ctx := context.Background()
	db := l.a.db
	var itemIDs []int64
	for i := range calibration.MinSentinelItems {
		source := fmt.Sprintf("k%d", i+1)
		l.goldOn(t, source, calibrationGold)
		if _, err := db.AddCalibration(ctx, &l.lead.ID, l.p.ID, source, nil); err != nil {
			t.Fatal(err)
		}
		itemIDs = append(itemIDs, l.itemID(t, source))
	}
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "sentinel", Provider: "openai", Model: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	// Four runs answer as gold has it, the fifth two points off on every
	// rubric item of every item: a step at the fifth, the first run whose
	// baseline (four runs) is long enough to tell one on five items.
	off := map[string]string{}
	for k, v := range calibrationGold {
		n := int(v[0]-'0') + 2
		if n > 5 {
			n -= 4
		}
		off[k] = fmt.Sprint(n)
	}
	var runs []*attune.JudgeRun
	for i := range 5 {
		run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: l.p.ID})
		if err != nil {
			t.Fatal(err)
		}
		given := calibrationGold
		if i == 4 {
			given = off
		}
		for _, id := range itemIDs {
			if err := db.WriteSentinel(ctx, run, id, given, calibrationGold); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, run)
		if i < 4 {
			// One run of a judge is active at a time: each ends before
			// the next.
			if _, err := db.SetRunStatus(ctx, run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunCompleted, "", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := runs[4]
	// Written once per run and item: a retried job changes nothing.
	if err := db.WriteSentinel(ctx, last, itemIDs[0], calibrationGold, calibrationGold); err != nil {
		t.Fatal(err)
	}

	lead := l.signedIn(l.lead)
	r := lead.get(projectPath(l.p, "/report.json"))
	wantStatus(t, r, http.StatusOK)
	var rep struct {
		Calibration []struct {
			Kind  string `json:"kind"`
			N     int    `json:"n"`
			Runs  []calibration.RunPoint
			Steps []calibration.RunPoint `json:"steps"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Calibration) != 1 || rep.Calibration[0].Kind != "judge" || rep.Calibration[0].N != 25 || len(rep.Calibration[0].Runs) != 5 {
		t.Fatalf("calibration %+v, want the judge's five runs of five items", rep.Calibration)
	}
	c := rep.Calibration[0]
	if len(c.Steps) != 1 || c.Steps[0].Run != last.ID || c.Runs[4].Accuracy != 0 || c.Runs[0].Accuracy != 1 {
		t.Fatalf("series %+v, steps %+v, want one step at run %d", c.Runs, c.Steps, last.ID)
	}
	if s := c.Runs[4]; s.Items != 5 || s.P == nil || *s.P > calibration.StepAlpha || s.Change == nil || *s.Change != -1 || s.CannotTell {
		t.Fatalf("the step %+v, want a change of −1 on 5 items at p ≤ %v", s, calibration.StepAlpha)
	}
	for i := 1; i < 4; i++ {
		if s := c.Runs[i]; !s.CannotTell || s.Step || s.P != nil || !strings.Contains(s.Reason, "too short") {
			t.Fatalf("run %d: %+v, want cannot tell on a short baseline", i, s)
		}
	}
	page := lead.get(projectPath(l.p, "/report"))
	wantContains(t, page, `data-testid="calibration-runs"`, "100%, 100%, 100%, 100%, 0%", `data-testid="calibration-step"`,
		fmt.Sprintf("run %d (%s)", last.ID, c.Steps[0].At.UTC().Format("2006-01-02")), `data-testid="calibration-cannot-tell"`,
		fmt.Sprintf("run %d: a baseline of 1 run is too short to tell a step on 5 calibration items", runs[1].ID),
		fmt.Sprintf("run %d: a baseline of 3 runs is too short", runs[3].ID))
}
