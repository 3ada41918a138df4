package web_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
)

// evidenceJSONL is six four-turn dialogues, t0 … t5.
func evidenceJSONL() string {
	var b strings.Builder
	for i := range 6 {
		var msgs []string
		for k := 1; k <= 4; k++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"worry %d in t%d"},{"role":"assistant","content":"reply %d"}`, k, i, k))
		}
		fmt.Fprintf(&b, `{"id":"t%d","messages":[%s]}`+"\n", i, strings.Join(msgs, ","))
	}
	return b.String()
}

// evidenceTurns are the turns each rater marked on CQ1, answered NO on
// every item: the people agree on t0–t3, one holds the other's on t4 and
// they part on t5; the judge marks t0 and t1 only. The second person's
// name is markup, to be shown as text.
var evidenceTurns = map[string][]string{
	"Ann":        {"2", "2", "2", "2", "1;2", "3"},
	"<b>Bo</b>":  {"2", "2", "2", "2", "2", "4"},
	"turn-judge": {"2", "2", "", "", "", ""},
}

// evidenceApp is a project of evidenceJSONL labelled with evidenceTurns,
// its lead signed in.
func evidenceApp(t *testing.T) (*app, *attune.Project, *client) {
	t.Helper()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "long.jsonl", evidenceJSONL()), http.StatusSeeOther)
	var b strings.Builder
	b.WriteString("item,rater,rater_kind,rubric_item,value,rationale,evidence\n")
	for _, rater := range []string{"Ann", "<b>Bo</b>", "turn-judge"} {
		kind := "human"
		if rater == "turn-judge" {
			kind = "judge"
		}
		for i, turns := range evidenceTurns[rater] {
			fmt.Fprintf(&b, "t%d,%s,%s,CQ1,NO,,%s\n", i, rater, kind, turns)
			fmt.Fprintf(&b, "t%d,%s,%s,CQ2,YES,,\n", i, rater, kind)
		}
	}
	r := c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "turns.csv", b.String())
	wantStatus(t, r, http.StatusSeeOther)
	return a, p, c
}

// TestReportEvidence: the report gives, for CQ1, the people's share of
// pairs naming a common turn and their MASI alpha over the six items, as
// the pure functions give them on the stored turns, with the counts
// beside them; the judge, on two items, is "too few" with its counts, in
// the page and in report.json alike. CQ2, never failed, has no pairs.
func TestReportEvidence(t *testing.T) {
	t.Parallel()
	_, p, c := evidenceApp(t)

	var people [][]agreement.TurnSet
	for i := range 6 {
		var sets []agreement.TurnSet
		for _, rater := range []string{"Ann", "<b>Bo</b>"} {
			var s agreement.TurnSet
			for _, x := range strings.Split(evidenceTurns[rater][i], ";") {
				var n int
				fmt.Sscan(x, &n)
				s = append(s, n)
			}
			sets = append(sets, s)
		}
		people = append(people, sets)
	}
	wantAlpha := agreement.EvidenceAlpha(people)
	if !wantAlpha.Defined {
		t.Fatalf("the fixture's alpha is undefined: %+v", wantAlpha)
	}

	r := c.get(projectPath(p, "/report.json"))
	wantStatus(t, r, http.StatusOK)
	type figures struct {
		Rater        int64 `json:"rater"`
		Items        int   `json:"n_items"`
		Pairs        int   `json:"n_pairs"`
		Overlapping  int   `json:"n_overlapping"`
		TooFew       bool  `json:"too_few"`
		MinItems     int   `json:"min_items"`
		OverlapShare struct {
			Value  *float64 `json:"value"`
			Reason string   `json:"reason"`
		} `json:"overlap_share"`
		Alpha struct {
			Value  *float64 `json:"value"`
			Reason string   `json:"reason"`
		} `json:"masi_alpha"`
	}
	var rep struct {
		RubricItems []struct {
			Key      string `json:"key"`
			Evidence *struct {
				People figures   `json:"people"`
				Judges []figures `json:"judges"`
			} `json:"evidence"`
		} `json:"rubric_items"`
	}
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]int{}
	for i, it := range rep.RubricItems {
		byKey[it.Key] = i
	}
	cq1 := rep.RubricItems[byKey["CQ1"]].Evidence
	if cq1 == nil {
		t.Fatalf("CQ1 has no evidence: %.600s", r.body)
	}
	pe := cq1.People
	if pe.Items != 6 || pe.Pairs != 6 || pe.Overlapping != 5 || pe.TooFew || pe.MinItems != agreement.MinEvidenceItems ||
		pe.OverlapShare.Value == nil || math.Abs(*pe.OverlapShare.Value-5.0/6) > 1e-12 ||
		pe.Alpha.Value == nil || math.Abs(*pe.Alpha.Value-wantAlpha.Value) > 1e-12 {
		t.Errorf("people on CQ1: %+v, want 6 items, 6 pairs, 5 overlapping, share 5/6, alpha %v", pe, wantAlpha.Value)
	}
	if len(cq1.Judges) != 1 {
		t.Fatalf("judges on CQ1: %+v", cq1.Judges)
	}
	je := cq1.Judges[0]
	if je.Items != 2 || je.Pairs != 4 || je.Overlapping != 4 || !je.TooFew || je.OverlapShare.Value != nil || je.Alpha.Value != nil ||
		je.OverlapShare.Reason != agreement.ReasonFewEvidenceItems {
		t.Errorf("the judge on CQ1: %+v, want 2 items, 4 pairs, too few", je)
	}
	if cq2 := rep.RubricItems[byKey["CQ2"]].Evidence; cq2 == nil || cq2.People.Pairs != 0 || !cq2.People.TooFew {
		t.Errorf("CQ2, never failed: %+v", cq2)
	}

	r = c.get(projectPath(p, "/report?item=CQ1"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="evidence"`, `data-testid="explain-evidence"`,
		"6 items, 6 pairs, 5 with a turn in common", `>0.83<`, fmt.Sprintf(">%.2f<", wantAlpha.Value),
		"turn-judge (judge) against the people", "2 items, 4 pairs, 4 with a turn in common",
		`data-testid="evidence-too-few">too few: 2 items where two both marked turns, 5 needed<`,
		fmt.Sprintf(`/report/items?a=people&amp;b=people&amp;fails=1&amp;item=CQ1`))
	if n := strings.Count(r.body, `data-testid="evidence-row"`); n != 2 {
		t.Errorf("%d rows of evidence, want the people's and the judge's", n)
	}
}

// TestReportDrillEvidence: the items both sides call failing list each
// dialogue turn by turn with a column per rater who failed it, their
// answer, their turns in words and a mark on each turn they named; the
// markup in a rater's name is text.
func TestReportDrillEvidence(t *testing.T) {
	t.Parallel()
	_, p, c := evidenceApp(t)
	r := c.get(projectPath(p, "/report/items?item=CQ1&a=people&b=people&fails=1"))
	wantStatus(t, r, http.StatusOK)
	if n := strings.Count(r.body, `data-testid="drill-item"`); n != 6 {
		t.Fatalf("%d items, want the six both people failed: %.1500s", n, r.body)
	}
	wantContains(t, r, "Items where the people and another person both gave a failing answer (NO).",
		`data-testid="drill-evidence"`, "worry 3 in t5", `<input type="hidden" name="fails" value="1">`,
		`data-testid="drill-evidence-turns">turns 1, 2<`, `data-testid="drill-evidence-turns">turn 3<`,
		`data-testid="drill-evidence-turns">turn 4<`, `data-testid="drill-evidence-turns">none marked<`,
		"&lt;b&gt;Bo&lt;/b&gt; (imported) marks turn 4")
	wantLacks(t, r, "<b>Bo</b>")
	// A row per turn; a mark per turn named: Ann 7, Bo 6, the judge 2.
	if n := strings.Count(r.body, `data-testid="drill-turn"`); n != 24 {
		t.Errorf("%d turn rows, want 6 items × 4 turns", n)
	}
	if n := strings.Count(r.body, `data-testid="drill-evidence-mark"`); n != 15 {
		t.Errorf("%d marks, want 15", n)
	}
	// The last item, side by side: Ann's column marks turn 3, Bo's turn 4.
	last := r.body[strings.LastIndex(r.body, `data-testid="drill-item"`):]
	for _, want := range []string{"Ann (imported) marks turn 3", "&lt;b&gt;Bo&lt;/b&gt; (imported) marks turn 4"} {
		if !strings.Contains(last, want) {
			t.Errorf("t5 lacks %q", want)
		}
	}
	if strings.Contains(last, "Ann (imported) marks turn 4") {
		t.Error("t5 marks turn 4 for Ann, who named 3")
	}
	// A rubric item that cannot fail is refused; so is a bad fails.
	wantStatus(t, c.get(projectPath(p, "/report/items?item=CQ1&fails=yes")), http.StatusUnprocessableEntity)
}
