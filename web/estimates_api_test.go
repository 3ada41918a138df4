package web_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestEstimatesAPI reads the prediction-powered estimates of one rubric
// item through the API, on the figures TestEstimateCommand works by hand
// (v1: λ 0.6, estimate 3.4; v2: no judge-only items, so the human figure),
// and its refusals: a missing parameter names itself, an unknown judge is
// not found, an annotator of the project may not read them.
func TestEstimatesAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	var items strings.Builder
	for i, sys := range []string{"v1", "v1", "v1", "v1", "v2", "v2", ""} {
		meta := "{}"
		if sys != "" {
			meta = fmt.Sprintf(`{"system":%q}`, sys)
		}
		fmt.Fprintf(&items, `{"id":"r%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":%s}`+"\n", i, i, meta)
	}
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 2, items.String(), ann)
	labels := "item,rater,rater_kind,rubric_item,value\n" +
		"r0,ann,human,emotion,4\nr0,bo,human,emotion,2\nr0,@gpt,judge,emotion,3\n" +
		"r1,ann,human,emotion,5\nr1,@gpt,judge,emotion,5\n" +
		"r2,@gpt,judge,emotion,4\nr3,@gpt,judge,emotion,2\n" +
		"r4,ann,human,emotion,2\nr4,@gpt,judge,emotion,2\n" +
		"r5,ann,human,emotion,4\nr5,@gpt,judge,emotion,4\n" +
		"r6,@gpt,judge,emotion,3\n"
	if status, body := lead.call("POST", fmt.Sprintf("/api/v1/projects/%d/labels", p.ID), labels); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("labels import: %d %v", status, body)
	}
	path := fmt.Sprintf("/api/v1/projects/%d/estimates", p.ID)
	status, out := lead.call("GET", path+"?judge=@gpt&rubric_item=emotion", nil)
	if status != http.StatusOK {
		t.Fatalf("estimates: %d %v", status, out)
	}
	if s, _ := out["sample"].(string); !strings.Contains(s, "random sample") {
		t.Errorf("sample = %q, want the condition said", s)
	}
	systems := map[string]map[string]any{}
	for _, x := range out["systems"].([]any) {
		m := x.(map[string]any)
		systems[m["system"].(string)] = m
	}
	num := func(m map[string]any, keys ...string) float64 {
		t.Helper()
		var v any = m
		for _, k := range keys {
			v = v.(map[string]any)[k]
		}
		f, ok := v.(float64)
		if !ok {
			t.Fatalf("%v: %v is not a number", keys, v)
		}
		return f
	}
	v1, v2 := systems["v1"], systems["v2"]
	if v1 == nil || v2 == nil {
		t.Fatalf("systems %v", out["systems"])
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"v1 lambda", num(v1, "ppi", "lambda"), 0.6},
		{"v1 ppi", num(v1, "ppi", "mean"), 3.4},
		{"v1 human", num(v1, "human", "mean"), 4},
		{"v1 labelled", num(v1, "n_labelled"), 2},
		{"v1 unlabelled", num(v1, "n_unlabelled"), 2},
		{"v2 ppi", num(v2, "ppi", "mean"), 3},
		{"v2 lambda", num(v2, "ppi", "lambda"), 0},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if d := out["differences"].([]any); len(d) != 1 || d[0].(map[string]any)["paired"] != false {
		t.Errorf("differences = %v, want one, independent", d)
	}

	if c, _ := out["conclusion"].(map[string]any); c == nil || c["summary"] == "" || out["human"] != "people" || out["rubric_item"] != "emotion" {
		t.Errorf("conclusion %v, human %v, rubric item %v", out["conclusion"], out["human"], out["rubric_item"])
	}
	// No item has gold yet: every item is unlabelled, so no system has
	// an estimate, and each (and the whole) is skipped for it.
	peopleSystems := fmt.Sprint(out["systems"])
	status, out = lead.call("GET", path+"?judge=@gpt&rubric_item=emotion&human=gold", nil)
	if status != http.StatusOK || out["human"] != "gold" || len(out["systems"].([]any)) != 0 || len(out["skipped"].([]any)) != 4 {
		t.Errorf("human=gold: %d %v", status, out)
	}

	// The report asked with a judge carries the same estimates per rubric
	// item; emotion's are the ones above.
	status, rep := lead.call("GET", fmt.Sprintf("/api/v1/projects/%d/report?estimate_judge=@gpt&replicates=0", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("report: %d %v", status, rep)
	}
	found := false
	for _, x := range rep["estimates"].([]any) {
		e := x.(map[string]any)
		if e["rubric_item"] == "emotion" {
			found = true
			if fmt.Sprint(e["systems"]) != peopleSystems {
				t.Errorf("the report's emotion estimates %v differ from GET /estimates' %v", e["systems"], peopleSystems)
			}
		}
	}
	if !found {
		t.Errorf("the report has no estimates of emotion: %v", rep["estimates"])
	}

	for _, c := range []struct {
		query  string
		status int
		names  string
	}{
		{"?rubric_item=emotion", http.StatusUnprocessableEntity, "judge"},
		{"?judge=@gpt", http.StatusUnprocessableEntity, "rubric_item"},
		{"?judge=nobody&rubric_item=emotion", http.StatusNotFound, "nobody"},
		{"?judge=@gpt&outcome=pass", http.StatusUnprocessableEntity, "outcome"},
		{"?judge=@gpt&rubric_item=emotion&human=crowd", http.StatusUnprocessableEntity, "human"},
	} {
		status, body := lead.call("GET", path+c.query, nil)
		if status != c.status || !strings.Contains(fmt.Sprint(body), c.names) {
			t.Errorf("%s: %d %v, want %d naming %s", c.query, status, body, c.status, c.names)
		}
	}
	if status, body := a.apiFor(ann).call("GET", path+"?judge=@gpt&rubric_item=emotion", nil); status != http.StatusForbidden {
		t.Errorf("an annotator reading the estimates: %d %v", status, body)
	}
}
