package judge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// twelveTurns is one conversation of 12 turns without crisis signals: CP1
// applies (from 3 turns), so NA there is forbidden; CP3 applies too (from
// 10), but its exception leaves NA to a rater to confirm.
func twelveTurns() string {
	var msgs []map[string]string
	for i := range 12 {
		msgs = append(msgs,
			map[string]string{"role": "user", "content": fmt.Sprintf("Here is what happened at work on day %d.", i+1)},
			map[string]string{"role": "assistant", "content": fmt.Sprintf("Thank you for telling me about day %d. What stood out?", i+1)})
	}
	b, _ := json.Marshal(map[string]any{"id": "long", "messages": msgs})
	return string(b) + "\n"
}

// answerNA makes the fake answer NA to every rubric question, the re-asks
// too unless firstOnly, as a model that ignores the rubric's conditions.
// The endpoint's probe is left alone.
func answerNA(firstOnly bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			probe := bytes.Contains(body, []byte("Is the sky blue"))
			reask := bytes.Contains(body, []byte(`"role":"assistant"`))
			if !probe && (!firstOnly || !reask) {
				r.Header.Set("X-Fake-Answer", "NA")
			}
			next.ServeHTTP(w, r)
		})
	}
}

type reasonRow struct {
	key, value, method, reason, raw string
}

func (f *fixture) reasons(t *testing.T) map[string]reasonRow {
	t.Helper()
	rows, err := f.db.Pool().Query(context.Background(), `
		SELECT l.rubric_item_key, l.value, d.method, d.reason, d.raw
		FROM labels l JOIN raters r ON r.id = l.rater_id JOIN judge_label_details d ON d.label_id = l.id
		WHERE r.judge_id = $1`, f.judge.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]reasonRow{}
	for rows.Next() {
		var l reasonRow
		if err := rows.Scan(&l.key, &l.value, &l.method, &l.reason, &l.raw); err != nil {
			t.Fatal(err)
		}
		out[l.key] = l
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForbiddenAnswerIsReaskedThenError: a judge's NA on CP1 of a 12-turn
// conversation, which a person's answer set is refused for, is re-asked
// with the rubric's reason; answered NA again, it is stored as ERROR with
// that reason, never as NA, and scores as ERROR does. NA on an item that
// never allows it is refused the same way. Answers the rule does not
// refuse are stored as given.
func TestForbiddenAnswerIsReaskedThenError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: twelveTurns(), wrap: answerNA(false)})
	run := f.run(t, 0)
	if run.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
	}
	got := f.reasons(t)
	if len(got) != len(f.def.Items) {
		t.Fatalf("%d labels, want %d", len(got), len(f.def.Items))
	}
	cp1 := got["CP1"]
	if cp1.value != "ERROR" || cp1.method != "error" {
		t.Fatalf("CP1 stored as %+v, want ERROR", cp1)
	}
	for _, want := range []string{"NA", "CP1", "this conversation has 12", "re-asked once"} {
		if !strings.Contains(cp1.reason, want) {
			t.Errorf("CP1's reason %q does not say %q", cp1.reason, want)
		}
	}
	if strings.Count(cp1.raw, "NA") < 2 {
		t.Errorf("CP1's raw %q should keep both replies", cp1.raw)
	}
	// The rule is the rubric's: the reason is the issue Validate raises.
	it, _ := f.def.Item("CP1")
	rule, _ := f.def.Forbids(it, rubric.NA, rubric.Facts{Turns: 12})
	if !strings.Contains(cp1.reason, rule) {
		t.Errorf("CP1's reason %q is not the rubric's %q", cp1.reason, rule)
	}
	// NA where the rubric's conditions leave it open (CP3's exception, CQ9
	// without crisis signals) is stored. NA where the item never allows
	// it (CP2, CQ8, answered YES or NO only) is held to the same rule as
	// CP1's: re-asked, then ERROR with the rubric's reason, as a person's
	// NA there is refused and an imported judge's is.
	for _, k := range []string{"CP3", "CQ9"} {
		if got[k].value != "NA" || got[k].reason != "" {
			t.Errorf("%s stored as %+v, want NA without a reason", k, got[k])
		}
	}
	for _, k := range []string{"CP2", "CQ8"} {
		it, _ := f.def.Item(k)
		rule, refused := f.def.JudgeRefuses(it, rubric.NA, rubric.Facts{Turns: 12})
		if got[k].value != "ERROR" || !refused || !strings.Contains(got[k].reason, rule) || !strings.Contains(got[k].reason, "re-asked once") {
			t.Errorf("%s stored as %+v, want ERROR with the reason %q", k, got[k], rule)
		}
	}
	var reasks, cp1Calls int
	if err := f.db.Pool().QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE reask), count(*) FILTER (WHERE rubric_item_key = 'CP1')
		FROM judge_calls WHERE run_id = $1`, run.ID).Scan(&reasks, &cp1Calls); err != nil {
		t.Fatal(err)
	}
	if reasks != 3 || cp1Calls != 2 {
		t.Fatalf("%d re-asks and %d CP1 calls, want one re-ask each of CP1, CP2 and CQ8", reasks, cp1Calls)
	}
	// Scored, CP1 counts as the ERROR it is, not the 1.0 of an NA.
	answers := rubric.Answers{}
	for k, l := range got {
		answers[k] = rubric.Value(l.value)
	}
	res, err := scoring.Score(f.def, answers, rubric.Facts{Turns: 12})
	if err != nil {
		t.Fatal(err)
	}
	if res.ItemScores["CP1"] != 0 {
		t.Fatalf("CP1 scored %v, want 0 for ERROR", res.ItemScores["CP1"])
	}
}

// TestForbiddenAnswerCorrectedOnReask: the re-ask names the answers left,
// and an allowed answer to it is stored, marked as re-asked.
func TestForbiddenAnswerCorrectedOnReask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: twelveTurns(), wrap: answerNA(true)})
	run := f.run(t, 0)
	if run.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
	}
	cp1 := f.reasons(t)["CP1"]
	if cp1.value != "YES" && cp1.value != "NO" || !strings.HasPrefix(cp1.method, "reasked-") || cp1.reason != "" {
		t.Fatalf("CP1 stored as %+v, want YES or NO, re-asked", cp1)
	}
	var reask string
	if err := f.db.Pool().QueryRow(context.Background(), `
		SELECT raw FROM judge_calls WHERE run_id = $1 AND reask AND rubric_item_key = 'CP1'`, run.ID).Scan(&reask); err != nil {
		t.Fatal(err)
	}
	if reask == "" {
		t.Fatal("the re-ask's reply was not recorded")
	}
}
