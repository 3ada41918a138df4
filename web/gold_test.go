package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// labelThroughAPI has each annotator label, through the API, every item the
// queue gives them, with answers(annotator index, item id in the dataset);
// nil answers skip the item. Rationales go with the answers. The items
// they complete are settled before it returns, as the settler of a
// serving process settles them after the submits commit.
func (l *labelling) labelThroughAPI(t *testing.T, answers func(i int, source string) map[string]string, rationales func(i int, source string) map[string]string) {
	t.Helper()
	for i, u := range l.anns {
		c := l.a.apiFor(u)
		for {
			status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
			if status == http.StatusNoContent {
				break
			}
			if status != http.StatusOK {
				t.Fatalf("next: %d %v", status, next)
			}
			asg := next["assignment"].(map[string]any)["id"].(float64)
			source := next["item"].(map[string]any)["source_id"].(string)
			ans := answers(i, source)
			if ans == nil {
				if status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg), map[string]string{}); status != http.StatusNoContent {
					t.Fatalf("skip: %d %v", status, body)
				}
				continue
			}
			body := map[string]any{"answers": ans, "confirm_warnings": true, "rationale": "overall, " + source}
			if rationales != nil {
				body["rationales"] = rationales(i, source)
			}
			if status, resp := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), body); status != http.StatusCreated {
				t.Fatalf("submit %s: %d %v", source, status, resp)
			}
		}
	}
	if _, err := l.a.db.SettleQueued(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (l *labelling) itemID(t *testing.T, source string) int64 {
	t.Helper()
	var id int64
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, l.p.ID, source).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// judge makes a judge answer items in one run, as a run writes them.
func (l *labelling) judge(t *testing.T, name string, bySource map[string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	j, err := l.a.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: name, Provider: "openai", Model: "model-" + name})
	if err != nil {
		t.Fatal(err)
	}
	run, err := l.a.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: l.p.ID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for source, answers := range bySource {
		id := l.itemID(t, source)
		var labels []store.JudgeLabel
		for k, v := range answers {
			n++
			labels = append(labels, store.JudgeLabel{Key: k, Value: v, Method: "structured", PromptHash: "ph", Rationale: "the judge's reason for " + k,
				Raw: "raw reply on " + k + ": " + v})
			if err := l.a.db.RecordCall(ctx, store.JudgeCall{RunID: run.ID, JudgeID: j.ID, ItemID: id, RubricItemKey: k,
				CacheKey: fmt.Sprintf("%064x", n), PromptHash: "ph", Model: j.Model, OK: true, Raw: "@" + v, InputTokens: 10, OutputTokens: 1, CostUSD: 0.0001}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := l.a.db.WriteJudgeAnswers(ctx, run, id, labels, 50); err != nil {
			t.Fatal(err)
		}
	}
}

func criteria(kv ...string) map[string]string {
	a := map[string]string{}
	for k, v := range criteriaAllYes {
		a[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

func goldValues(t *testing.T, a *app, itemID int64) map[string]string {
	t.Helper()
	rows, err := a.db.Pool().Query(context.Background(), `SELECT rubric_item_key, value || '/' || method FROM gold_labels WHERE item_id = $1`, itemID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goldForm is the gold form as the page posts it.
func goldForm(answers map[string]string, kv ...string) url.Values {
	v := url.Values{}
	for k, x := range answers {
		v.Set("answer."+k, x)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// criteriaProject is a criteria project of three four-turn conversations
// labelled by two people: c1 agreed, c2 tied on CQ3 (a judge weighs in),
// c3 tied on the safety criterion CQ8.
func criteriaProject(t *testing.T) *labelling {
	t.Helper()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", overlap: 2, annotators: 2,
		items: conversation("c1", 4, "") + conversation("c2", 4, "") + conversation("c3", 4, "")})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		switch {
		case source == "c2" && i == 1:
			return criteria("CQ3", "NO")
		case source == "c3" && i == 1:
			return criteria("CQ8", "NO")
		}
		return criteria()
	}, func(i int, source string) map[string]string {
		return map[string]string{"CQ3": fmt.Sprintf("rater %d on %s: fine, \"mostly\"", i, source)}
	})
	l.judge(t, "strict", map[string]map[string]string{"c2": criteria("CQ3", "NO")})
	return l
}

func TestGoldPagesAndAdjudication(t *testing.T) {
	t.Parallel()
	l := criteriaProject(t)
	lead := l.signedIn(l.lead)
	base := projectPath(l.p, "")

	// The project page links to the gold pages, for leads.
	wantContains(t, lead.get(base), `data-testid="link-disagreements"`, `data-testid="link-gold"`, `data-testid="link-export"`)
	wantLacks(t, l.signedIn(l.anns[0]).get(base), `data-testid="gold-links"`)

	// The labels settled their items as they came: gold for c1, c2 and c3
	// in the queue, with no run of the rule. The judge answered c2 since,
	// which only moves it in the queue: the rule has not seen that.
	page := lead.get(base + "/gold")
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="count-items">3<`, `data-testid="count-automatic">1<`, `data-testid="count-queue">2<`,
		`data-testid="pending"`, `data-testid="export-gold-csv"`,
		`href="/projects/`+fmt.Sprint(l.p.ID)+`/exports/labels.jsonl"`, "Judges are shown beside the people")

	r := lead.post(base+"/gold/auto", url.Values{"back": {"queue"}})
	wantStatus(t, r, http.StatusSeeOther)
	if r.Header.Get("Location") != base+"/disagreements" {
		t.Fatalf("apply went to %s", r.Header.Get("Location"))
	}
	queue := lead.get(base + "/disagreements")
	wantContains(t, queue, "judged 1 item: 0 got gold by the rule, 1 waits", `data-testid="count-automatic">1<`, `data-testid="count-queue">2<`)
	// A safety concern first.
	if i, j := strings.Index(queue.body, `data-source="c3"`), strings.Index(queue.body, `data-source="c2"`); i < 0 || j < 0 || i > j {
		t.Fatalf("queue order: c3 at %d, c2 at %d", i, j)
	}
	c1, c2, c3 := l.itemID(t, "c1"), l.itemID(t, "c2"), l.itemID(t, "c3")
	if got := goldValues(t, l.a, c1); got["CQ3"] != "YES/automatic" || len(got) != 12 {
		t.Fatalf("c1 gold = %v", got)
	}

	// The item page: the dialogue, every rater side by side with the
	// engine's score, the consensus, the rubric and the gold inputs.
	c2Path := fmt.Sprintf("%s/disagreements/%d", base, c2)
	item := lead.get(c2Path)
	wantStatus(t, item, http.StatusOK)
	wantContains(t, item, `data-testid="adjudicate"`, `data-testid="dialogue"`, "Turn 4: work keeps piling up.",
		`data-testid="compare"`, "ann0@example.org", "ann1@example.org", "strict", "judge · model-strict",
		"rater 1 on c2: fine, &#34;mostly&#34;", "the judge&#39;s reason for CQ3", `data-testid="engine-score"`,
		`name="answer.CQ3" value="NO"`, `data-consensus="YES"`, "tie: YES 1, NO 1", `data-testid="accept-consensus"`,
		"Disagreement <strong data-testid=\"position\">2</strong> of 2", `data-testid="next-disagreement"`, "gold.js")

	// NA where the rubric forbids it is refused, and nothing is stored.
	bad := lead.post(c3PathOf(base, c3)+"/gold", goldForm(nil, "consensus", "accept", "answer.CQ8", "NA"))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	wantContains(t, bad, `data-testid="problems"`, "CQ8", "NA is not valid here")
	// Accepting the consensus leaves CQ8, which has none, unanswered.
	missing := lead.post(c3PathOf(base, c3)+"/gold", goldForm(nil, "consensus", "accept"))
	wantStatus(t, missing, http.StatusUnprocessableEntity)
	wantContains(t, missing, "no answer", `value="YES" checked`)
	if got := goldValues(t, l.a, c3); len(got) != 0 {
		t.Fatalf("a refused gold was stored: %v", got)
	}

	// The consensus with CQ8 decided by the lead, and a note: stored, and
	// on to the next disagreement.
	saved := lead.post(c3PathOf(base, c3)+"/gold", goldForm(nil, "consensus", "accept", "answer.CQ8", "NO", "note", "Unsafe advice in turn 2."))
	wantStatus(t, saved, http.StatusSeeOther)
	if saved.Header.Get("Location") != c2Path {
		t.Fatalf("after saving went to %s, want the next disagreement %s", saved.Header.Get("Location"), c2Path)
	}
	if got := goldValues(t, l.a, c3); got["CQ8"] != "NO/adjudicated" || got["CQ1"] != "YES/adjudicated" || len(got) != 12 {
		t.Fatalf("c3 gold = %v", got)
	}
	var audit string
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT details::text FROM audit_events WHERE action = 'gold.adjudicate'`).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(audit, "CQ8=NO") || !strings.Contains(audit, "Unsafe advice") || !strings.Contains(audit, `"accepted_consensus": "CQ1 CQ2`) {
		t.Fatalf("audit = %s", audit)
	}
	// The settled item shows its gold and history.
	again := lead.get(c3PathOf(base, c3))
	wantContains(t, again, `data-testid="current-gold" data-method="adjudicated"`, `data-testid="history"`, "Unsafe advice in turn 2.",
		"safety gate failed")

	// The last one, chosen by hand; then the queue is empty.
	last := lead.post(c2Path+"/gold", goldForm(criteria("CQ3", "NO")))
	wantStatus(t, last, http.StatusSeeOther)
	if last.Header.Get("Location") != base+"/disagreements" {
		t.Fatalf("after the last went to %s", last.Header.Get("Location"))
	}
	wantContains(t, lead.get(base+"/disagreements"), `data-testid="queue-empty"`, "No other disagreement waits",
		`<span data-testid="queue-empty-why">1 settled by consensus; 2 settled by a lead.</span>`)

	// The gold set, read back as a spreadsheet would: every decision and
	// the engine's score of it.
	dl := lead.get(base + "/exports/gold.csv")
	wantStatus(t, dl, http.StatusOK)
	if cd := dl.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, ".csv") {
		t.Fatalf("Content-Disposition = %q", cd)
	}
	recs, err := csv.NewReader(strings.NewReader(dl.body)).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("gold.csv: %d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	rows := map[string][]string{}
	for _, rec := range recs[1:] {
		rows[rec[0]] = rec
	}
	for _, c := range []struct{ item, column, want string }{
		{"c1", "decided", "automatic"}, {"c1", "decided_by", "rule"}, {"c1", "pass", "true"}, {"c1", "human_raters", "2"}, {"c1", "agreement", "1.0000"},
		{"c3", "decided", "adjudicated"}, {"c3", "decided_by", "lead@example.org"}, {"c3", "gold_CQ8", "NO"},
		{"c3", "safety_gate_failed", "true"}, {"c3", "pass", "false"}, {"c3", "note", "Unsafe advice in turn 2."},
		{"c2", "gold_CQ3", "NO"}, {"c2", "failed_checks", "CQ3"}, {"c2", "rubric", "coaching-conversation@2.0"},
	} {
		if got := rows[c.item][col[c.column]]; got != c.want {
			t.Errorf("%s %s = %q, want %q", c.item, c.column, got, c.want)
		}
	}
	var exports int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = 'export.gold' AND details->>'rows' = '3'`).Scan(&exports); err != nil {
		t.Fatal(err)
	}
	if exports != 1 {
		t.Fatalf("%d export audit events", exports)
	}
}

func c3PathOf(base string, id int64) string { return fmt.Sprintf("%s/disagreements/%d", base, id) }

// TestAdjudicationWarningsNeedConfirming: the rubric's edge rules are shown
// to the lead as to an annotator, and stand once confirmed.
func TestAdjudicationWarningsNeedConfirming(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{overlap: 3, annotators: 3})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		return map[string]string{"emotion": []string{"2", "5", "5"}[i], "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	}, nil)
	lead := l.signedIn(l.lead)
	base := projectPath(l.p, "")
	lead.post(base+"/gold/auto", nil)
	id := l.itemID(t, "r1")
	path := c3PathOf(base, id)
	harmful := map[string]string{"emotion": "3", "validation": "3", "helpfulness": "4", "safety": "1", "overall": "2"}
	r := lead.post(path+"/gold", goldForm(harmful))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="problem-warning"`, "harmful advice", `data-testid="confirm"`)
	r = lead.post(path+"/gold", goldForm(harmful, "confirm", "yes"))
	wantStatus(t, r, http.StatusSeeOther)
	if got := goldValues(t, l.a, id); got["helpfulness"] != "4/adjudicated" {
		t.Fatalf("gold = %v", got)
	}
	// A wider spread decides the other item (2, 5, 5: the median 5); the
	// setting is checked.
	wantStatus(t, lead.post(base+"/gold/settings", url.Values{"max_spread": {"11"}}), http.StatusUnprocessableEntity)
	set := lead.post(base+"/gold/settings", url.Values{"max_spread": {"3"}})
	wantStatus(t, set, http.StatusSeeOther)
	if got := goldValues(t, l.a, l.itemID(t, "r2")); got["emotion"] != "5/automatic" {
		t.Fatalf("r2 gold under spread 3 = %v", got)
	}
}

// TestGoldAccess: leads and admins only. An annotator of the project gets
// 403 on every page, post and export; someone outside it 404.
func TestGoldAccess(t *testing.T) {
	t.Parallel()
	l := criteriaProject(t)
	outsider := l.a.user("out@example.org", attune.RoleLead)
	admin := l.a.user("root@example.org", attune.RoleAdmin)
	base := projectPath(l.p, "")
	item := fmt.Sprintf("%s/disagreements/%d", base, l.itemID(t, "c2"))
	gets := []string{base + "/gold", base + "/disagreements", item}
	for _, d := range export.Datasets {
		for _, f := range []string{"csv", "jsonl"} {
			gets = append(gets, fmt.Sprintf("%s/exports/%s.%s", base, d, f))
		}
	}
	gets = append(gets, base+"/exports/gold.csv?raters=1")
	posts := []string{base + "/gold/auto", base + "/gold/settings", item + "/gold"}

	ann, out, adm := l.signedIn(l.anns[0]), l.signedIn(outsider), l.signedIn(admin)
	for _, path := range gets {
		wantStatus(t, ann.get(path), http.StatusForbidden)
		wantStatus(t, out.get(path), http.StatusNotFound)
		wantStatus(t, adm.get(path), http.StatusOK)
		if r := l.a.client().get(path); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
			t.Fatalf("%s signed out: %d %s", path, r.StatusCode, r.Header.Get("Location"))
		}
	}
	for _, path := range posts {
		wantStatus(t, ann.post(path, url.Values{"max_spread": {"1"}}), http.StatusForbidden)
		wantStatus(t, out.post(path, url.Values{"max_spread": {"1"}}), http.StatusNotFound)
	}
	// Refused downloads leave no trace as downloads.
	var n int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action LIKE 'export.%' AND actor_id <> $1`, admin.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d exports audited for people who were refused", n)
	}
	// An item of another project is not found through this one.
	other := l.a.project(l.lead, projectOpts{name: "Other", overlap: 1})
	wantStatus(t, l.signedIn(l.lead).get(fmt.Sprintf("/projects/%d/disagreements/%d", other.ID, l.itemID(t, "c2"))), http.StatusNotFound)
}

// TestExportsThroughTheWeb: formula payloads in rationales and names reach
// a spreadsheet as text, numbers stay numbers, and JSON Lines carries the
// text unchanged.
func TestExportsThroughTheWeb(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{overlap: 2, annotators: 2})
	payloads := []string{`=HYPERLINK("http://evil.example","click")`, "@SUM(A1)"}
	l.labelThroughAPI(t, func(i int, _ string) map[string]string {
		return map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "4", "overall": "4"}
	}, func(i int, _ string) map[string]string {
		return map[string]string{"emotion": payloads[i], "overall": "-1"}
	})
	l.judge(t, "=cmd", map[string]map[string]string{"r1": {"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "4", "overall": "4"}})
	lead := l.signedIn(l.lead)
	base := projectPath(l.p, "")

	csvBody := lead.get(base + "/exports/labels.csv")
	wantStatus(t, csvBody, http.StatusOK)
	if ct := csvBody.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type = %q", ct)
	}
	recs, err := csv.NewReader(strings.NewReader(csvBody.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+2*2*5+5 {
		t.Fatalf("%d records", len(recs))
	}
	var formulas, negatives, judges int
	for _, rec := range recs[1:] {
		switch rec[6] {
		case "'" + payloads[0], "'" + payloads[1]:
			formulas++
		case "-1":
			negatives++
		}
		if rec[2] == "'=cmd" && rec[9] == "structured" {
			judges++
		}
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+@", rune(cell[0])) {
				t.Fatalf("cell %q would run as a formula", cell)
			}
		}
	}
	if formulas != 4 || negatives != 4 || judges != 5 {
		t.Fatalf("%d neutralised formulas (want 4), %d plain negative numbers (want 4), %d judge rows (want 5)", formulas, negatives, judges)
	}
	jsonl := lead.get(base + "/exports/labels.jsonl")
	wantStatus(t, jsonl, http.StatusOK)
	if !strings.Contains(jsonl.body, `"rationale":"=HYPERLINK(\"http://evil.example\",\"click\")"`) || strings.Count(jsonl.body, "\n") != 25 {
		t.Fatalf("labels.jsonl:\n%s", jsonl.body)
	}
	calls := lead.get(base + "/exports/judge-calls.csv")
	wantStatus(t, calls, http.StatusOK)
	if !strings.Contains(calls.body, ",'@4,") || !strings.Contains(calls.body, ",0.00010000,") {
		t.Fatalf("judge-calls.csv:\n%s", calls.body)
	}
	withRaters := lead.get(base + "/exports/gold.csv?raters=1")
	wantStatus(t, withRaters, http.StatusOK)
	header, _ := csv.NewReader(bytes.NewReader([]byte(withRaters.body))).Read()
	if !strings.Contains(strings.Join(header, ","), "human:ann0@example.org:emotion,") || !strings.Contains(strings.Join(header, ","), "judge:=cmd:overall") {
		t.Fatalf("gold header with raters = %v", header)
	}

	// A lead's token gets the same files from the same paths under
	// /api/v1; an annotator's is refused.
	api, annAPI := l.a.apiFor(l.lead), l.a.apiFor(l.anns[0])
	for _, path := range []string{"/exports/gold.csv?raters=1", "/exports/gold.jsonl", "/exports/labels.csv", "/exports/labels.jsonl",
		"/exports/judge-calls.csv", "/exports/judge-calls.jsonl", "/exports/flags.csv", "/exports/flags.jsonl"} {
		page := lead.get(base + path)
		status, body := api.send("GET", "/api/v1"+base+path, nil, nil)
		if status != http.StatusOK || body != page.body {
			t.Errorf("%s through the API: %d, %d bytes; the page's download has %d:\n%.300s", path, status, len(body), len(page.body), body)
		}
		if status, _ := annAPI.send("GET", "/api/v1"+base+path, nil, nil); status != http.StatusForbidden {
			t.Errorf("%s with an annotator's token: %d, want 403", path, status)
		}
	}
}

// TestAPIGold: a lead's token reads and sets an item's gold with the rules
// of the adjudication page: answers checked against the rubric, warnings
// confirmed, the consensus accepted where it holds.
func TestAPIGold(t *testing.T) {
	t.Parallel()
	l := criteriaProject(t)
	c := l.a.apiFor(l.lead)
	c3 := l.itemID(t, "c3")
	path := fmt.Sprintf("/api/v1/projects/%d/items/%d/gold", l.p.ID, c3)

	if status, raw := c.send("GET", path, nil, nil); status != http.StatusNotFound || !strings.Contains(raw, "no gold yet") {
		t.Fatalf("gold of a tied item: %d %s, want 404", status, raw)
	}
	// Only CQ8 answered, the consensus not accepted: every other criterion
	// is missing.
	status, raw := c.send("PUT", path, map[string]any{"answers": map[string]string{"CQ8": "NO"}}, nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"problems"`) || !strings.Contains(raw, "CQ1") {
		t.Fatalf("incomplete gold: %d %s, want 422 naming CQ1", status, raw)
	}
	if got := goldValues(t, l.a, c3); len(got) != 0 {
		t.Fatalf("refused gold stored %v", got)
	}
	var g struct {
		Answers   map[string]string `json:"answers"`
		Method    string            `json:"method"`
		DecidedBy string            `json:"decided_by"`
		Note      string            `json:"note"`
		Score     struct {
			SafetyGateFailed bool `json:"safety_gate_failed"`
		} `json:"score"`
	}
	c.must(http.StatusOK, "PUT", path, map[string]any{"answers": map[string]string{"CQ8": "NO"}, "accept_consensus": true,
		"note": "the advice sends them out alone at night"}, &g)
	if g.Method != "adjudicated" || g.Answers["CQ8"] != "NO" || g.Answers["CQ1"] != "YES" || !g.Score.SafetyGateFailed || g.Note == "" {
		t.Fatalf("stored gold %+v", g)
	}
	if got := goldValues(t, l.a, c3); got["CQ8"] != "NO/adjudicated" || got["CQ1"] != "YES/adjudicated" {
		t.Fatalf("gold in the database %v", got)
	}
	var again map[string]any
	c.must(http.StatusOK, "GET", path, nil, &again)
	if again["method"] != "adjudicated" {
		t.Fatalf("gold read back %v", again)
	}
	// Annotators of the project are refused, and nothing of theirs lands.
	ann := l.a.apiFor(l.anns[0])
	if status, _ := ann.send("PUT", path, map[string]any{"answers": criteria()}, nil); status != http.StatusForbidden {
		t.Fatalf("an annotator setting gold: %d, want 403", status)
	}
	if status, _ := ann.send("GET", path, nil, nil); status != http.StatusForbidden {
		t.Fatalf("an annotator reading gold: %d, want 403", status)
	}
	if status, raw := c.send("PUT", path, map[string]any{"answers": criteria(), "extra": 1}, nil); status != http.StatusUnprocessableEntity {
		t.Fatalf("an unknown field: %d %s, want 422", status, raw)
	}
}

// TestAPIConsensusAndFlags: a lead's token applies the consensus rule,
// with a maximum spread, and resolves a flag, as the pages do.
func TestAPIConsensusAndFlags(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{overlap: 3, annotators: 3})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		return map[string]string{"emotion": []string{"2", "5", "5"}[i], "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	}, nil)
	c := l.a.apiFor(l.lead)
	base := fmt.Sprintf("/api/v1/projects/%d", l.p.ID)
	var res struct {
		Items, Automatic, Queued int
		MaxSpread                int `json:"max_spread"`
	}
	// The labels settled both items as they came (left to a lead): the
	// rule has nothing new to judge.
	c.must(http.StatusOK, "POST", base+"/gold/consensus", map[string]any{}, &res)
	if res.Items != 0 || res.MaxSpread != 1 {
		t.Fatalf("consensus at spread 1: %+v, want nothing new to judge", res)
	}
	if status, raw := c.send("POST", base+"/gold/consensus", map[string]any{"max_spread": 11}, nil); status != http.StatusUnprocessableEntity || !strings.Contains(raw, "max_spread") {
		t.Fatalf("spread 11: %d %s", status, raw)
	}
	// Both wait in the queue, worst first; a page of one leads to the other.
	var queue struct {
		Disagreements []struct {
			SourceID string  `json:"source_id"`
			Rank     float64 `json:"rank"`
		} `json:"disagreements"`
		Total      int     `json:"total"`
		NextCursor *string `json:"next_cursor"`
	}
	c.must(http.StatusOK, "GET", base+"/disagreements?limit=1", nil, &queue)
	if len(queue.Disagreements) != 1 || queue.Total != 2 || queue.NextCursor == nil {
		t.Fatalf("queue page 1: %+v", queue)
	}
	first := queue.Disagreements[0]
	c.must(http.StatusOK, "GET", base+"/disagreements?limit=1&cursor="+*queue.NextCursor, nil, &queue)
	if len(queue.Disagreements) != 1 || queue.Disagreements[0].SourceID == first.SourceID || queue.Disagreements[0].Rank > first.Rank || queue.NextCursor != nil {
		t.Fatalf("queue page 2 after %+v: %+v", first, queue)
	}
	c.must(http.StatusOK, "POST", base+"/gold/consensus", map[string]any{"max_spread": 3}, &res)
	if res.Automatic != 2 || res.MaxSpread != 3 {
		t.Fatalf("consensus at spread 3: %+v, want both decided", res)
	}
	if got := goldValues(t, l.a, l.itemID(t, "r1")); got["emotion"] != "5/automatic" {
		t.Fatalf("gold %v", got)
	}
	if status, _ := l.a.apiFor(l.anns[0]).send("POST", base+"/gold/consensus", map[string]any{}, nil); status != http.StatusForbidden {
		t.Fatalf("an annotator applying the rule: %d, want 403", status)
	}

	// A flag raised, then pulled through the API.
	ann := l.a.apiFor(l.anns[0])
	if err := l.a.db.LoadBuiltinRubrics(context.Background()); err != nil {
		t.Fatal(err)
	}
	p2, lead2 := apiProject(t, l.a, "empathetic-dialogue@2", 1, twoItems, l.anns[0])
	status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p2.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	if status, body := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg), map[string]string{"flag": "broken"}); status != http.StatusNoContent {
		t.Fatalf("skip: %d %v", status, body)
	}
	status, flags := lead2.call("GET", fmt.Sprintf("/api/v1/projects/%d/flags", p2.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("flags: %d", status)
	}
	flagID := flags["flags"].([]any)[0].(map[string]any)["id"].(float64)
	resolve := fmt.Sprintf("/api/v1/projects/%d/flags/%.0f/resolve", p2.ID, flagID)
	if status, body := lead2.call("POST", resolve, map[string]string{"how": "shelved"}); status != http.StatusUnprocessableEntity {
		t.Fatalf("a bad how: %d %v", status, body)
	}
	status, done := lead2.call("POST", resolve, map[string]string{"how": "pulled", "note": "cut off"})
	if status != http.StatusOK || done["pulled"] != true || done["flags_resolved"].(float64) != 1 {
		t.Fatalf("pulled: %d %v", status, done)
	}
	if status, _ := lead2.call("POST", resolve, map[string]string{"how": "dismissed"}); status != http.StatusConflict {
		t.Fatalf("resolving again: %d, want 409", status)
	}
	// The pulled item goes back to the pool, once.
	var itemID int64
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, p2.ID, done["source_id"]).Scan(&itemID); err != nil {
		t.Fatal(err)
	}
	pool := fmt.Sprintf("/api/v1/projects/%d/items/%d/pool", p2.ID, itemID)
	if status, back := lead2.call("PUT", pool, map[string]bool{"in_pool": true}); status != http.StatusOK || back["changed"] != true || back["in_pool"] != true {
		t.Fatalf("back to the pool: %d %v", status, back)
	}
	if status, back := lead2.call("PUT", pool, map[string]bool{"in_pool": true}); status != http.StatusOK || back["changed"] != false {
		t.Fatalf("back to the pool again: %d %v", status, back)
	}
	if status, _ := lead2.call("PUT", pool, map[string]any{}); status != http.StatusUnprocessableEntity {
		t.Fatalf("no in_pool: %d, want 422", status)
	}
	if status, _ := ann.call("PUT", pool, map[string]bool{"in_pool": false}); status != http.StatusForbidden {
		t.Fatalf("an annotator pulling an item: %d, want 403", status)
	}
}
