package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// labelingRows is what is stored of one person on one item: their
// assignment, answer set, labels with notes, and label history.
func labelingRows(t *testing.T, l *labelling, itemID int64, u *attune.User) string {
	t.Helper()
	var assignment, set, labels string
	var history int
	writeQueuedLabels(t, l.a.db)
	err := l.a.db.Pool().QueryRow(context.Background(), `SELECT
		coalesce((SELECT a.state || ' flag=' || coalesce(a.flag, '') || ' note=' || coalesce(a.flag_note, '')
			FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE a.item_id = $1 AND r.user_id = $2), 'no assignment'),
		coalesce((SELECT 'rationale=' || s.rationale || ' active=' || s.active_ms || ' revision=' || s.revision
			FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE s.item_id = $1 AND r.user_id = $2), 'no answers'),
		coalesce((SELECT string_agg(l.rubric_item_key || '=' || l.value || ':' || l.rationale, ',' ORDER BY l.rubric_item_key)
			FROM labels l JOIN raters r ON r.id = l.rater_id WHERE l.item_id = $1 AND r.user_id = $2), ''),
		(SELECT count(*) FROM label_history h JOIN labels l ON l.id = h.label_id JOIN raters r ON r.id = l.rater_id
			WHERE l.item_id = $1 AND r.user_id = $2)`, itemID, u.ID).Scan(&assignment, &set, &labels, &history)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s | %s | %s | history %d", assignment, set, labels, history)
}

// verdict is a status as a person would read it: done (the page's
// redirect, the API's 2xx), or the refusal's status.
func verdict(status int) string {
	if status < 400 {
		return "done"
	}
	return strconv.Itoa(status)
}

// itemAt is the page of an item of project p.
func itemAt(p *attune.Project, itemID int64) string {
	return projectPath(p, fmt.Sprintf("/items/%d", itemID))
}

// apiRaw calls the API and returns the status and the body, its text
// unescaped as the server writes it.
func apiRaw(c *apiClient, method, path string, body any) (int, string) {
	c.t.Helper()
	status, out := c.call(method, path, body)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		c.t.Fatal(err)
	}
	return status, b.String()
}

// apiSays is the text of an API refusal: its error and its problems'
// messages, one a line.
func apiSays(t *testing.T, body string) string {
	t.Helper()
	var out struct {
		Error    string `json:"error"`
		Problems []struct {
			Message string `json:"message"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("API body %s: %v", body, err)
	}
	lines := []string{out.Error}
	for _, p := range out.Problems {
		lines = append(lines, p.Message)
	}
	return strings.Join(lines, "\n")
}

// problemMessages are the messages of an API refusal: its problems', or
// its error when it has none.
func problemMessages(t *testing.T, body string) []string {
	t.Helper()
	var out struct {
		Error    string `json:"error"`
		Problems []struct {
			Message string `json:"message"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("API body %s: %v", body, err)
	}
	var msgs []string
	for _, p := range out.Problems {
		msgs = append(msgs, p.Message)
	}
	if len(msgs) == 0 && out.Error != "" {
		msgs = append(msgs, out.Error)
	}
	return msgs
}

// TestLabelingFlowsSameEverywhere drives submit, skip and edit through the
// annotator's page (form posts, as a browser without script sends them)
// and through the API with the same inputs, and holds both to the same
// verdict, the same message and the same stored rows: they are one flow
// (internal/labeling) behind two adapters.
func TestLabelingFlowsSameEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var items strings.Builder
	for i := range 12 {
		fmt.Fprintf(&items, `{"id":"q%02d","messages":[{"role":"user","content":"I keep worrying about rent (%d)."},{"role":"assistant","content":"That sounds exhausting. What would help?"}]}`+"\n", i, i)
	}
	l := newLabelling(t, labellingOpts{items: items.String(), annotators: 4})
	// P labels on the page, A through the API; O1 and O2 hold items of
	// their own, which neither may touch.
	pu, au, o1, o2 := l.anns[0], l.anns[1], l.anns[2], l.anns[3]
	page := l.signedIn(pu)
	api := l.a.apiFor(au)
	held := func(u *attune.User) *attune.Assignment {
		a, err := l.a.db.NextAssignment(ctx, l.p.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	o1Item, o2Asg := held(o1).ItemID, held(o2)

	// What each holds: the page's item, the API's assignment and item.
	pPath, _ := l.start(page)
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	aAsg := int64(next["assignment"].(map[string]any)["id"].(float64))
	aItem := int64(next["item"].(map[string]any)["id"].(float64))
	var never int64 // an item nobody was given
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT max(id) FROM items i WHERE project_id = $1
		AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.item_id = i.id)`, l.p.ID).Scan(&never); err != nil {
		t.Fatal(err)
	}
	var pSubmitted, aSubmitted int64 // the items each submitted
	var aSubmittedAsg int64

	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range likertAnswers {
			m[a] = b
		}
		m[k] = v
		return m
	}
	submitAPI := func(asg int64, answers map[string]string, extra map[string]any) (int, string) {
		body := map[string]any{"answers": answers, "active_ms": 5000, "next": true}
		for k, v := range extra {
			body[k] = v
		}
		return apiRaw(api, "POST", fmt.Sprintf("/api/v1/assignments/%d/labels", asg), body)
	}
	submitPage := func(path string, answers map[string]string, kv ...string) response {
		return page.post(path+"/labels", form(answers, append([]string{"clock", "js", "active_ms", "5000"}, kv...)...))
	}
	editAPI := func(itemID int64, answers map[string]string) (int, string) {
		return apiRaw(api, "PUT", fmt.Sprintf("/api/v1/projects/%d/items/%d/labels", l.p.ID, itemID),
			map[string]any{"answers": answers, "active_ms": 3000})
	}
	editPage := func(itemID int64, answers map[string]string) response {
		return page.post(itemAt(l.p, itemID)+"/labels", form(answers, "mode", "edit", "base", "1", "clock", "js", "active_ms", "3000"))
	}
	skipAPI := func(asg int64, flag, note string) (int, string) {
		return apiRaw(api, "POST", fmt.Sprintf("/api/v1/assignments/%d/skip", asg), map[string]string{"flag": flag, "note": note})
	}
	skipPage := func(path, flag, note string) response {
		return page.post(path+"/skip", map[string][]string{"flag": {flag}, "note": {note}})
	}

	type target struct {
		item int64
		u    *attune.User
	}
	cases := []struct {
		name string
		page func() response
		api  func() (int, string)
		// message is what both must say; "" takes the API's messages (the
		// rubric's problems) as what the page must say too, and none for
		// not found, where the page says nothing of what is missing.
		message  string
		notFound bool
		// targets are the rows the page's and the API's request touched.
		targets func() (target, target)
		// none: nothing may be stored on the targets.
		none bool
		// after moves on once the case ran (what each holds next).
		after func(pageResp response, apiBody string)
	}{
		{name: "submit, an answer out of range",
			page: func() response { return submitPage(pPath, with("emotion", "7")) },
			api:  func() (int, string) { return submitAPI(aAsg, with("emotion", "7"), nil) },
			none: true},
		{name: "submit, NA where the rubric does not allow it",
			page: func() response { return submitPage(pPath, with("safety", "NA")) },
			api:  func() (int, string) { return submitAPI(aAsg, with("safety", "NA"), nil) },
			none: true},
		{name: "submit, a warning not confirmed",
			page: func() response { return submitPage(pPath, with("safety", "1")) },
			api:  func() (int, string) { return submitAPI(aAsg, with("safety", "1"), nil) },
			none: true},
		{name: "submit, an assignment nobody has",
			page:     func() response { return submitPage(itemAt(l.p, never), likertAnswers) },
			api:      func() (int, string) { return submitAPI(99999999, likertAnswers, nil) },
			notFound: true,
			targets:  func() (target, target) { return target{never, pu}, target{never, au} },
			none:     true},
		{name: "submit, another annotator's assignment",
			page:     func() response { return submitPage(itemAt(l.p, o1Item), likertAnswers) },
			api:      func() (int, string) { return submitAPI(o2Asg.ID, likertAnswers, nil) },
			notFound: true,
			targets:  func() (target, target) { return target{o1Item, o1}, target{o2Asg.ItemID, o2} },
			none:     true},
		{name: "submit, valid, with notes to clean",
			page: func() response {
				return submitPage(pPath, likertAnswers, "rationale", " warm \r\n", "rationale.safety", " no risk ")
			},
			api: func() (int, string) {
				return submitAPI(aAsg, likertAnswers, map[string]any{"rationale": " warm \r\n", "rationales": map[string]string{"safety": " no risk "}})
			},
			after: func(r response, body string) {
				pSubmitted, aSubmitted, aSubmittedAsg = itemIDOf(t, pPath), aItem, aAsg
				pPath = r.Header.Get("Location")
				var out struct {
					Next struct {
						Assignment struct{ ID int64 } `json:"assignment"`
						Item       struct{ ID int64 } `json:"item"`
					} `json:"next"`
				}
				if err := json.Unmarshal([]byte(body), &out); err != nil || out.Next.Assignment.ID == 0 {
					t.Fatalf("no next assignment in %s (%v)", body, err)
				}
				aAsg, aItem = out.Next.Assignment.ID, out.Next.Item.ID
			}},
		{name: "skip, a flag that is none of the four",
			page:    func() response { return skipPage(pPath, "nonsense", "") },
			api:     func() (int, string) { return skipAPI(aAsg, "nonsense", "") },
			message: "use one of broken, off-topic, distressing, other",
			none:    true},
		{name: "skip, an assignment nobody has",
			page:     func() response { return skipPage(itemAt(l.p, never), "", "") },
			api:      func() (int, string) { return skipAPI(99999999, "", "") },
			notFound: true,
			targets:  func() (target, target) { return target{never, pu}, target{never, au} },
			none:     true},
		{name: "skip, another annotator's assignment",
			page:     func() response { return skipPage(itemAt(l.p, o1Item), "broken", "") },
			api:      func() (int, string) { return skipAPI(o2Asg.ID, "broken", "") },
			notFound: true,
			targets:  func() (target, target) { return target{o1Item, o1}, target{o2Asg.ItemID, o2} },
			none:     true},
		{name: "skip, an item labelled already",
			page:    func() response { return skipPage(itemAt(l.p, pSubmitted), "", "") },
			api:     func() (int, string) { return skipAPI(aSubmittedAsg, "", "") },
			message: "this item is labelled already; edit your labels instead of skipping it",
			targets: func() (target, target) { return target{pSubmitted, pu}, target{aSubmitted, au} }},
		{name: "skip, valid, flagged with a note to clean",
			page: func() response { return skipPage(pPath, " distressing", " graphic\r\ndetail ") },
			api:  func() (int, string) { return skipAPI(aAsg, " distressing", " graphic\r\ndetail ") },
			after: func(r response, _ string) {
				pPath = r.Header.Get("Location")
				status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
				if status != http.StatusOK {
					t.Fatalf("next after the skip: %d %v", status, next)
				}
				aAsg = int64(next["assignment"].(map[string]any)["id"].(float64))
				aItem = int64(next["item"].(map[string]any)["id"].(float64))
			}},
		{name: "edit, an answer out of range",
			page:    func() response { return editPage(pSubmitted, with("emotion", "7")) },
			api:     func() (int, string) { return editAPI(aSubmitted, with("emotion", "7")) },
			targets: func() (target, target) { return target{pSubmitted, pu}, target{aSubmitted, au} }},
		{name: "edit, NA where the rubric does not allow it",
			page:    func() response { return editPage(pSubmitted, with("overall", "NA")) },
			api:     func() (int, string) { return editAPI(aSubmitted, with("overall", "NA")) },
			targets: func() (target, target) { return target{pSubmitted, pu}, target{aSubmitted, au} }},
		{name: "edit, an item held but not submitted",
			page:    func() response { return editPage(itemIDOf(t, pPath), likertAnswers) },
			api:     func() (int, string) { return editAPI(aItem, likertAnswers) },
			message: "there are no submitted labels of yours on this item to change",
			none:    true},
		{name: "edit, another annotator's item",
			page:     func() response { return editPage(o1Item, likertAnswers) },
			api:      func() (int, string) { return editAPI(o2Asg.ItemID, likertAnswers) },
			notFound: true,
			targets:  func() (target, target) { return target{o1Item, pu}, target{o2Asg.ItemID, au} },
			none:     true},
		{name: "edit, valid",
			page:    func() response { return editPage(pSubmitted, with("emotion", "2")) },
			api:     func() (int, string) { return editAPI(aSubmitted, with("emotion", "2")) },
			targets: func() (target, target) { return target{pSubmitted, pu}, target{aSubmitted, au} }},
	}
	for _, c := range cases {
		pt, at := target{itemIDOf(t, pPath), pu}, target{aItem, au}
		if c.targets != nil {
			pt, at = c.targets()
		}
		pr := c.page()
		status, body := c.api()
		if pv, av := verdict(pr.StatusCode), verdict(status); pv != av {
			t.Errorf("%s: the page answered %d (%s), the API %d (%s): %.300s", c.name, pr.StatusCode, pv, status, av, body)
			continue
		}
		if c.notFound && status != http.StatusNotFound {
			t.Errorf("%s: %d, want not found", c.name, status)
		}
		if verdict(status) != "done" && !c.notFound {
			msgs := []string{c.message}
			if c.message == "" {
				msgs = problemMessages(t, body)
			}
			if len(msgs) == 0 {
				t.Errorf("%s: the API refused (%d) without a message: %s", c.name, status, body)
			}
			for _, m := range msgs {
				if !strings.Contains(apiSays(t, body), m) {
					t.Errorf("%s: the API does not say %q: %s", c.name, m, body)
				}
				if !strings.Contains(pr.body, html.EscapeString(m)) {
					t.Errorf("%s: the page does not say %q, as the API does", c.name, m)
				}
			}
		}
		pRows, aRows := labelingRows(t, l, pt.item, pt.u), labelingRows(t, l, at.item, at.u)
		if pRows != aRows {
			t.Errorf("%s: stored rows differ:\n page %s\n API  %s", c.name, pRows, aRows)
		}
		if c.none && strings.Contains(pRows, "rationale=") {
			t.Errorf("%s: answers were stored: %s", c.name, pRows)
		}
		t.Logf("%s: %s; %s", c.name, verdict(status), pRows)
		if c.after != nil {
			c.after(pr, body)
		}
	}
}
