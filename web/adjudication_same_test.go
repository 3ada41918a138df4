package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// adjudicationOutcome is what one adapter did with one input: its verdict,
// the message it gave, and the rows it left.
type adjudicationOutcome struct {
	verdict string // ok, refused, forbidden
	message string
	rows    string
}

var (
	goldFlashRE   = regexp.MustCompile(`data-testid="flash">([^<]*)<`)
	goldProblemRE = regexp.MustCompile(`data-testid="(?:problem-error|spread-error)">(?:<a [^>]*>)?([^<]*)<`)
)

// adjudicationRows are the rows the gold flows write in a project: its
// maximum spread, its gold, the adjudications kept and the audit entries
// of the flows.
func adjudicationRows(t *testing.T, l *labelling) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var spread int
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT gold_max_spread FROM projects WHERE id = $1`, l.p.ID).Scan(&spread); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "spread %d\n", spread)
	for _, q := range []string{
		`SELECT i.source_id || ' ' || g.rubric_item_key || '=' || g.value || '/' || g.method || ' by ' || coalesce(u.email, 'rule')
		 FROM gold_labels g JOIN items i ON i.id = g.item_id LEFT JOIN users u ON u.id = g.decided_by WHERE g.project_id = $1 ORDER BY 1`,
		`SELECT i.source_id || ' note ' || replace(a.note, chr(10), '⏎') || ' ' || a.answers::text || ' accepted ' || a.accepted::text
		 FROM adjudications a JOIN items i ON i.id = a.item_id WHERE i.project_id = $1 ORDER BY 1`,
		`SELECT action || ' by ' || coalesce(u.email, 'nobody') || ' ' || count(*)
		 FROM audit_events e LEFT JOIN users u ON u.id = e.actor_id WHERE e.project_id = $1 AND e.action LIKE 'gold.%' GROUP BY action, u.email ORDER BY 1`,
	} {
		rows, err := l.a.db.Pool().Query(ctx, q, l.p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// goldPageOutcome reads a form post's answer: a redirect is ok, with the
// notice of the page it leads to; 422 is refused, with the problems the
// page shows.
func goldPageOutcome(t *testing.T, c *client, r response) adjudicationOutcome {
	t.Helper()
	switch r.StatusCode {
	case http.StatusSeeOther:
		next := c.get(r.Header.Get("Location"))
		m := goldFlashRE.FindStringSubmatch(next.body)
		if m == nil {
			t.Fatalf("no notice after the redirect to %s", r.Header.Get("Location"))
		}
		return adjudicationOutcome{verdict: "ok", message: html.UnescapeString(m[1])}
	case http.StatusUnprocessableEntity:
		var msgs []string
		for _, m := range goldProblemRE.FindAllStringSubmatch(r.body, -1) {
			msgs = append(msgs, html.UnescapeString(strings.TrimSpace(m[1])))
		}
		return adjudicationOutcome{verdict: "refused", message: strings.Join(msgs, "; ")}
	case http.StatusForbidden:
		return adjudicationOutcome{verdict: "forbidden"}
	}
	t.Fatalf("page answered %d: %s", r.StatusCode, r.body)
	return adjudicationOutcome{}
}

// goldAPIOutcome reads an API answer as goldPageOutcome reads a page's; an ok
// answer of the consensus rule is said as the page's notice says it, from
// the counts the API gives.
func goldAPIOutcome(t *testing.T, status int, body map[string]any) adjudicationOutcome {
	t.Helper()
	switch status {
	case http.StatusOK:
		if _, ok := body["items"]; !ok {
			return adjudicationOutcome{verdict: "ok"}
		}
		return adjudicationOutcome{verdict: "ok", message: fmt.Sprintf("items %v automatic %v queued %v spread %v",
			body["items"], body["automatic"], body["queued"], body["max_spread"])}
	case http.StatusUnprocessableEntity:
		var msgs []string
		if f, ok := body["fields"].(map[string]any); ok {
			if m, ok := f["max_spread"].(string); ok {
				msgs = append(msgs, m)
			}
		}
		if ps, ok := body["problems"].([]any); ok {
			for _, p := range ps {
				msgs = append(msgs, p.(map[string]any)["message"].(string))
			}
		}
		return adjudicationOutcome{verdict: "refused", message: strings.Join(msgs, "; ")}
	case http.StatusForbidden:
		return adjudicationOutcome{verdict: "forbidden"}
	}
	t.Fatalf("API answered %d: %v", status, body)
	return adjudicationOutcome{}
}

// TestAdjudicationFlowsSameEverywhere: adjudicating, applying the
// consensus rule and setting the maximum spread through the page's forms
// and through the API, with the same input, give the same verdict and
// message and leave the same rows (the command line's share is in
// cmd/attune's test of the same name).
func TestAdjudicationFlowsSameEverywhere(t *testing.T) {
	t.Parallel()
	valid := map[string]string{"emotion": "4", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	invalid := map[string]string{"emotion": "9", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	const invalidMsg = `emotion (Emotion Recognition): "9" is not an allowed answer; choose 1, 2, 3, 4 or 5`
	long := strings.Repeat("é", 2001)
	type input struct {
		answers   map[string]string
		note      string
		spread    string // set max spread; "" applies the rule
		annotator bool
	}
	for _, c := range []struct {
		name, flow string // adjudicate, consensus, spread
		in         input
		verdict    string
		// page is the page's message; api the API's, where it says it
		// in other words (the counts of the rule).
		page, api string
	}{
		{"adjudicate valid", "adjudicate", input{answers: valid, note: "  warm\r\nenough  "}, "ok",
			"Saved the gold of r1. Here is the next disagreement.", ""},
		{"adjudicate invalid answer", "adjudicate", input{answers: invalid}, "refused", invalidMsg, invalidMsg},
		{"adjudicate note too long", "adjudicate", input{answers: valid, note: long}, "refused",
			"Keep the note to 2000 characters or fewer (this one has 2001).", "Keep the note to 2000 characters or fewer (this one has 2001)."},
		{"adjudicate as an annotator", "adjudicate", input{answers: valid, annotator: true}, "forbidden", "", ""},
		{"apply consensus", "consensus", input{}, "ok", "The consensus rule had nothing new to judge.", "items 0 automatic 0 queued 0 spread 1"},
		{"apply consensus as an annotator", "consensus", input{annotator: true}, "forbidden", "", ""},
		{"set max spread", "spread", input{spread: "3"}, "ok",
			"The maximum spread is 3. The consensus rule judged 2 items: 0 got gold by the rule, 2 wait for a lead.", "items 2 automatic 0 queued 2 spread 3"},
		{"set max spread above the limit", "spread", input{spread: "11"}, "refused",
			"Enter a whole number from 0 to 10.", "Enter a whole number from 0 to 10."},
		{"set max spread as an annotator", "spread", input{spread: "3", annotator: true}, "forbidden", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got [2]adjudicationOutcome
			for i, adapter := range []string{"page", "api"} {
				// Each adapter on a project of its own, labelled alike:
				// two people 3 apart on emotion on both items.
				l := newLabelling(t, labellingOpts{overlap: 2, annotators: 2})
				l.labelThroughAPI(t, func(i int, source string) map[string]string {
					return map[string]string{"emotion": []string{"2", "5"}[i], "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
				}, nil)
				u := l.lead
				if c.in.annotator {
					u = l.anns[0]
				}
				item := l.itemID(t, "r1")
				before := adjudicationRows(t, l)
				var o adjudicationOutcome
				if adapter == "page" {
					pc := l.signedIn(u)
					base := projectPath(l.p, "")
					switch c.flow {
					case "adjudicate":
						form := goldForm(c.in.answers, "note", c.in.note)
						o = goldPageOutcome(t, pc, pc.post(fmt.Sprintf("%s/disagreements/%d/gold", base, item), form))
					case "consensus":
						o = goldPageOutcome(t, pc, pc.post(base+"/gold/auto", nil))
					case "spread":
						o = goldPageOutcome(t, pc, pc.post(base+"/gold/settings", url.Values{"max_spread": {c.in.spread}}))
					}
				} else {
					ac := l.a.apiFor(u)
					base := fmt.Sprintf("/api/v1/projects/%d", l.p.ID)
					switch c.flow {
					case "adjudicate":
						status, body := ac.call("PUT", fmt.Sprintf("%s/items/%d/gold", base, item), map[string]any{"answers": c.in.answers, "note": c.in.note})
						o = goldAPIOutcome(t, status, body)
					case "consensus":
						status, body := ac.call("POST", base+"/gold/consensus", map[string]any{})
						o = goldAPIOutcome(t, status, body)
					case "spread":
						var n int
						if _, err := fmt.Sscan(c.in.spread, &n); err != nil {
							t.Fatal(err)
						}
						status, body := ac.call("POST", base+"/gold/consensus", map[string]any{"max_spread": n})
						o = goldAPIOutcome(t, status, body)
					}
				}
				o.rows = adjudicationRows(t, l)
				if o.verdict != "ok" && o.rows != before {
					t.Errorf("%s: a %s input changed rows:\n%s\nwas\n%s", adapter, o.verdict, o.rows, before)
				}
				got[i] = o
			}
			page, api := got[0], got[1]
			if page.verdict != c.verdict || api.verdict != c.verdict {
				t.Fatalf("verdicts: page %s, API %s, want %s", page.verdict, api.verdict, c.verdict)
			}
			if c.page != "" && page.message != c.page {
				t.Errorf("page message %q, want %q", page.message, c.page)
			}
			if c.api != "" && api.message != c.api {
				t.Errorf("API message %q, want %q", api.message, c.api)
			}
			if c.verdict == "refused" && (page.message == "" || page.message != api.message) {
				t.Errorf("refusals differ: page %q, API %q", page.message, api.message)
			}
			if page.rows != api.rows {
				t.Errorf("rows differ:\npage\n%s\nAPI\n%s", page.rows, api.rows)
			}
			if c.name == "adjudicate valid" && !strings.Contains(page.rows, "r1 note warm⏎enough {") {
				t.Errorf("the adjudication's note is not stored cleaned:\n%s", page.rows)
			}
		})
	}
}
