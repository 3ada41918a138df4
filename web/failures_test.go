package web_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// failuresProject is five items of the likert rubric with their people's
// and a judge's answers on "emotion", worked by hand in
// TestFailuresAPI:
//
//	r0: 1 turn, short reply, v1; people 4 4 (agreed); judge 4 (matched)
//	r1: 3 turns, crisis words, short last reply, v1; people 5 3 (split); judge 5
//	r2: 1 turn, 700-character reply, v2; people 2 2 (agreed); judge 3 (missed)
//	r3: 1 turn, short reply, v2; one person 4; judge 4
//	r4: the judge alone: left out
func failuresProject(t *testing.T, a *app) (*attune.Project, *apiClient, *attune.User) {
	t.Helper()
	turn := func(u, r string) string {
		return fmt.Sprintf(`{"role":"user","content":%q},{"role":"assistant","content":%q}`, u, r)
	}
	long := strings.Repeat("I hear you. ", 58) + "Take care." // 706 characters
	items := strings.Join([]string{
		`{"id":"r0","messages":[` + turn("I feel low", "That sounds hard.") + `],"meta":{"system":"v1"}}`,
		`{"id":"r1","messages":[` + turn("Work is bad", "Tell me more.") + "," + turn("I think about suicide", "I'm glad you told me.") + "," + turn("Thanks", "I'm here.") + `],"meta":{"system":"v1"}}`,
		`{"id":"r2","messages":[` + turn("Exams soon", long) + `],"meta":{"system":"v2"}}`,
		`{"id":"r3","messages":[` + turn("I moved", "Moving is lonely.") + `],"meta":{"system":"v2"}}`,
		`{"id":"r4","messages":[` + turn("Hello", "Hi.") + `],"meta":{"system":"v2"}}`,
	}, "\n") + "\n"
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 2, items)
	labels := "item,rater,rater_kind,rubric_item,value\n" +
		"r0,ann,human,emotion,4\nr0,bo,human,emotion,4\nr0,@gpt,judge,emotion,4\n" +
		"r1,ann,human,emotion,5\nr1,bo,human,emotion,3\nr1,@gpt,judge,emotion,5\n" +
		"r2,ann,human,emotion,2\nr2,bo,human,emotion,2\nr2,@gpt,judge,emotion,3\n" +
		"r3,ann,human,emotion,4\nr3,@gpt,judge,emotion,4\n" +
		"r4,@gpt,judge,emotion,1\n"
	if status, body := lead.call("POST", fmt.Sprintf("/api/v1/projects/%d/labels", p.ID), labels); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("labels import: %d %v", status, body)
	}
	viewer := a.user(fmt.Sprintf("viewer-%s@example.org", strings.ToLower(t.Name())), attune.RoleLead)
	if err := a.db.AddMember(context.Background(), nil, p.ID, viewer.ID, attune.MemberLead); err != nil {
		t.Fatal(err)
	}
	return p, lead, viewer
}

// TestFailuresAPI reads the failure map of the hand-worked project through
// the API: each band's counts and shares, people's split items apart;
// then its refusals, the same as the estimates': a missing parameter
// named, an unknown judge not found, an annotator refused.
func TestFailuresAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, lead, _ := failuresProject(t, a)
	path := fmt.Sprintf("/api/v1/projects/%d/failures", p.ID)
	status, out := lead.call("GET", path+"?judge=@gpt&rubric_item=emotion", nil)
	if status != http.StatusOK {
		t.Fatalf("failures: %d %v", status, out)
	}
	if out["rubric_item"] != "emotion" {
		t.Errorf("rubric_item %v", out["rubric_item"])
	}
	got := map[string]map[string]any{}
	for _, x := range out["bands"].([]any) {
		b := x.(map[string]any)
		got[b["dimension"].(string)+"/"+b["band"].(string)] = b
	}
	for _, w := range []struct {
		band                          string
		items, agreed, matched, split float64
		single, singleMatched         float64
		share                         any
	}{
		{"people/people agreed", 2, 2, 1, 0, 0, 0, 0.5},
		{"people/people split", 1, 0, 0, 1, 0, 0, nil},
		{"people/one person", 1, 0, 0, 0, 1, 1, nil},
		{"turns/1–2 turns", 3, 2, 1, 0, 1, 1, 0.5},
		{"turns/3–5 turns", 1, 0, 0, 1, 0, 0, nil},
		{"crisis signals/present", 1, 0, 0, 1, 0, 0, nil},
		{"crisis signals/none", 3, 2, 1, 0, 1, 1, 0.5},
		{"reply length/0–199 characters", 3, 1, 1, 1, 1, 1, 1.0},
		{"reply length/600–1499 characters", 1, 1, 0, 0, 0, 0, 0.0},
		{"system/v1", 2, 1, 1, 1, 0, 0, 1.0},
		{"system/v2", 2, 1, 0, 0, 1, 1, 0.0},
	} {
		b := got[w.band]
		if b == nil {
			t.Errorf("no band %s in %v", w.band, out["bands"])
			continue
		}
		if b["items"] != w.items || b["agreed"] != w.agreed || b["matched"] != w.matched || b["split"] != w.split ||
			b["single"] != w.single || b["single_matched"] != w.singleMatched || b["share"] != w.share {
			t.Errorf("%s: %v", w.band, b)
		}
		delete(got, w.band)
	}
	if len(got) != 0 {
		t.Errorf("bands beyond the worked ones: %v", got)
	}
	split := func() map[string]any {
		for _, x := range out["bands"].([]any) {
			if b := x.(map[string]any); b["band"] == "people split" {
				return b
			}
		}
		return nil
	}()
	if split["judge_share"] != 0.5 || split["people_share"] != 0.0 {
		t.Errorf("split item: judge %v, people %v; want 0.5 and 0", split["judge_share"], split["people_share"])
	}
	// Four items with a reply and numeric answers: too few for the length
	// probe, which says so rather than show a slope.
	if l, _ := out["length"].(map[string]any); l == nil || l["defined"] != false || l["items"] != 4.0 || l["difference"] != nil ||
		!strings.Contains(fmt.Sprint(l["reason"]), "at least 10") {
		t.Errorf("length: %v", out["length"])
	}

	for _, c := range []struct {
		query  string
		status int
		names  string
	}{
		{"?rubric_item=emotion", http.StatusUnprocessableEntity, "judge"},
		{"?judge=@gpt", http.StatusUnprocessableEntity, "rubric_item"},
		{"?judge=nobody&rubric_item=emotion", http.StatusNotFound, "nobody"},
	} {
		status, body := lead.call("GET", path+c.query, nil)
		if status != c.status || !strings.Contains(fmt.Sprint(body), c.names) {
			t.Errorf("%s: %d %v, want %d naming %s", c.query, status, body, c.status, c.names)
		}
	}
	ann := a.user("ann-failures@example.org", attune.RoleAnnotator)
	if err := a.db.AddMember(context.Background(), nil, p.ID, ann.ID, attune.MemberAnnotator); err != nil {
		t.Fatal(err)
	}
	if status, body := a.apiFor(ann).call("GET", path+"?judge=@gpt&rubric_item=emotion", nil); status != http.StatusForbidden {
		t.Errorf("an annotator reading the failure map: %d %v", status, body)
	}
}

// TestBrowserFailuresPage: a lead opens the failure map from the report,
// sees the judge's agreement by kind of item with people's split items
// counted apart, changes the rubric item, and the page fits at every
// width the fit test uses.
func TestBrowserFailuresPage(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, _, viewer := failuresProject(t, a)
	ctx := signInBrowser(t, a, viewer.Email, projectPath(p, "/report"))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+projectPath(p, "/report")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=failures-link]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=failures-link]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="failures-people"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid="failures-people"] tr[data-band="people agreed"] [data-testid=band-share]').innerText`); !strings.HasPrefix(got, "50 %") {
		t.Errorf("people agreed share %q, want 50 %%", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid="failures-system"] tr[data-band="v2"] [data-testid=band-share]').innerText`); !strings.HasPrefix(got, "0 %") {
		t.Errorf("v2 share %q, want 0 %%", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid=length-none]').innerText`); !strings.Contains(got, "at least 10") {
		t.Errorf("length panel %q, want it not shown for four items", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid=trust-none]').innerText`); !strings.Contains(got, "too few labelled items") {
		t.Errorf("trust panel %q: the imported judge recorded no certainty, so nothing can be guaranteed", got)
	}
	for _, s := range fitScreens {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(a.srv.URL+projectPath(p, "/failures"))); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width))); err != nil {
			t.Fatal(err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("failures at %s px: %s", s.name, wide)
		}
		browsertest.Screenshot(t, ctx, "testdata/screenshots", "failures-"+s.name)
	}
	// Another rubric item: nobody answered it, so no band.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1366, 850),
		chromedp.Navigate(a.srv.URL+projectPath(p, "/failures")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=failures-form]`)),
		chromedp.SetValue(`select[name=rubric_item]`, "validation"),
		chromedp.Click(`[data-testid=failures-form] button`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=failures-none]`)),
	); err != nil {
		t.Fatal(err)
	}
}

// TestFailuresLength carries the length probe's hand-worked example
// (internal/failmap TestLengthBiasWorked) through the API and the page:
// replies of 2, 4, …, 1024 characters; the judge answers 2 3 2 3 3 4 3 4
// 4 5, people 3,3 on the five shortest and 3,4 on the rest. Slopes per
// doubling: judge 3/11, people 5/66, difference 13/66 with interval
// [0.0429034, 0.3510360], which excludes 0.
func TestFailuresLength(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	judge := []string{"2", "3", "2", "3", "3", "4", "3", "4", "4", "5"}
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i, j := range judge {
		fmt.Fprintf(&items, `{"id":"l%d","messages":[{"role":"user","content":"How do I cope?"},{"role":"assistant","content":%q}]}`+"\n",
			i, strings.Repeat("a", 1<<(i+1)))
		bo := "3"
		if i >= 5 {
			bo = "4"
		}
		fmt.Fprintf(&labels, "l%d,ann,human,emotion,3\nl%d,bo,human,emotion,%s\nl%d,@gpt,judge,emotion,%s\n", i, i, bo, i, j)
	}
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 2, items.String())
	if status, body := lead.call("POST", fmt.Sprintf("/api/v1/projects/%d/labels", p.ID), labels.String()); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("labels import: %d %v", status, body)
	}
	status, out := lead.call("GET", fmt.Sprintf("/api/v1/projects/%d/failures?judge=@gpt&rubric_item=emotion", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("failures: %d %v", status, out)
	}
	l, _ := out["length"].(map[string]any)
	if l == nil || l["defined"] != true || l["items"] != 10.0 || l["unit"] != "doubling of reply length" ||
		l["verdict"] != "the judge rewards longer replies more than people do" {
		t.Fatalf("length: %v", out["length"])
	}
	for k, want := range map[string]float64{"judge_slope": 3.0 / 11, "people_slope": 5.0 / 66, "difference": 13.0 / 66, "low": 0.0429034, "high": 0.3510360} {
		if got, ok := l[k].(float64); !ok || math.Abs(got-want) > 1e-6 {
			t.Errorf("length %s: %v, want %.7f", k, l[k], want)
		}
	}

	viewer := a.user("viewer-length@example.org", attune.RoleLead)
	if err := a.db.AddMember(context.Background(), nil, p.ID, viewer.ID, attune.MemberLead); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	c.mustSignIn(viewer)
	r := c.get(projectPath(p, "/failures?judge=@gpt&rubric_item=emotion"))
	wantStatus(t, r, http.StatusOK)
	for _, want := range []string{`data-testid="failures-length"`, "Judge slope +0.27 per doubling of reply length, people +0.08",
		"difference +0.20", "[+0.04, +0.35]", `data-testid="length-verdict"`, "The judge rewards longer replies more than people do."} {
		if !strings.Contains(r.body, want) {
			t.Errorf("failures page lacks %q", want)
		}
	}
}

// TestTrustAPI asks for trust or escalate on the failure project: its
// judge's answers came in by a labels import, which records no certainty,
// so nothing is calibrated and every answer is counted as such; terms out
// of range are refused naming the parameter.
func TestTrustAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, lead, _ := failuresProject(t, a)
	path := fmt.Sprintf("/api/v1/projects/%d/trust", p.ID)
	status, out := lead.call("GET", path+"?judge=@gpt&rubric_item=emotion&target=95", nil)
	if status != http.StatusOK {
		t.Fatalf("trust: %d %v", status, out)
	}
	if out["found"] != false || out["target"] != 0.95 || out["alpha"] != 0.05 || out["no_confidence"] != 5.0 || out["calibration_items"] != 0.0 {
		t.Errorf("trust: %v", out)
	}
	for _, c := range []struct{ query, names string }{
		{"?judge=@gpt&rubric_item=emotion&target=100", "target"},
		{"?judge=@gpt&rubric_item=emotion&alpha=x", "alpha"},
		{"?rubric_item=emotion", "judge"},
	} {
		if status, body := lead.call("GET", path+c.query, nil); status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body), c.names) {
			t.Errorf("%s: %d %v, want 422 naming %s", c.query, status, body, c.names)
		}
	}
}
