package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/trustfixture"
)

// TestTrustPageBrowser: in Chromium a lead opens the trust page of a judge
// whose threshold is guaranteed, sees its threshold and coverage, turns
// routing on (the judge keeps the items only it labelled whose confidence
// reaches the threshold; the other goes to people), sees the routes, and
// turns it off again, each change shown where the lead pressed it.
func TestTrustPageBrowser(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, err := trustfixture.New(context.Background(), a.db, "Routed")
	if err != nil {
		t.Fatal(err)
	}
	lead := a.user("lead-trust@example.org", attune.RoleLead)
	a.member(p, lead, attune.MemberLead)
	ctx := signInBrowser(t, a, lead.Email, projectPath(p, "/trust")+"?judge="+trustfixture.Judge)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid=trust-setting]`))); err != nil {
		t.Fatal(err)
	}
	if s := text(`[data-testid=trust-state]`); !strings.HasPrefix(s, "Off") {
		t.Fatalf("before: %q", s)
	}
	if row := text(`[data-testid=trust-criterion-understanding]`); !strings.Contains(row, "0.95") || !strings.Contains(row, "80") {
		t.Errorf("the rubric item's row: %q", row)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=trust-on]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=trust-off]`)),
	); err != nil {
		t.Fatal(err)
	}
	if s := text(`[data-testid=trust-state]`); !strings.Contains(s, "On: the judge keeps 2 items; 1 went to people.") {
		t.Errorf("turned on: %q", s)
	}
	routes := text(`[data-testid=trust-routes]`)
	if strings.Count(routes, "kept")+strings.Count(routes, "escalated") == 0 {
		t.Errorf("the routes: %q", routes)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=trust-route-row]').length`))
	if err != nil || n != trustfixture.Kept+trustfixture.Escalated {
		t.Errorf("%d route rows (%v), want %d", n, err, trustfixture.Kept+trustfixture.Escalated)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=trust-off]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid=trust-off]`)),
	); err != nil {
		t.Fatal(err)
	}
	if s := text(`[data-testid=trust-state]`); !strings.HasPrefix(s, "Off") {
		t.Errorf("turned off: %q", s)
	}
	// Off, the judge's items are people's again.
	if _, kept, escalated, err := a.db.ListTrustRoutes(context.Background(), p.ID, "", 10); err != nil || kept != 0 || escalated != 0 {
		t.Errorf("after turning off: %d kept, %d escalated (%v)", kept, escalated, err)
	}
}
