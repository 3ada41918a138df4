package demo

import (
	"math"
	"slices"
	"testing"

	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

// TestSimulatedJudgeKnowsEveryPrompt: every prompt the demo judge sends,
// with either version, is answered by the simulated judge with an allowed
// answer that matches the truth about as often as the version's accuracy
// says (NA, a fact of the dialogue, always); a prompt it was not built for
// is left to the fake.
func TestSimulatedJudgeKnowsEveryPrompt(t *testing.T) {
	sj, err := NewSimulatedJudge()
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[int]float64{1: judgeRaters[1].accuracy, 2: judgeRaters[2].accuracy} {
		hits, n := 0, 0
		for _, pr := range projects {
			def, err := rubric.Builtin(pr.rubric)
			if err != nil {
				t.Fatal(err)
			}
			d := def
			if v == 2 {
				d = judge.WithPrompts(def, promptsV2(def))
			}
			for _, it := range generate(def, pr.prefix, pr.seed) {
				var msgs []judge.Message
				for _, m := range it.Messages {
					msgs = append(msgs, judge.Message{Role: m.Role, Content: m.Content})
				}
				for i := range d.Items {
					ri := &d.Items[i]
					p, err := judge.Render(d, ri, msgs)
					if err != nil {
						t.Fatal(err)
					}
					var allowed []string
					for _, a := range def.Allowed(ri) {
						allowed = append(allowed, string(a))
					}
					got, ok := sj.Answer(p.Messages[0].Content, allowed)
					if !ok || !slices.Contains(allowed, got) {
						t.Fatalf("v%d %s %s: answer %q, %v", v, it.ID, ri.Key, got, ok)
					}
					if it.truth[ri.Key] == rubric.NA {
						if got != "NA" {
							t.Fatalf("v%d %s %s: %q where the truth is NA", v, it.ID, ri.Key, got)
						}
						continue
					}
					n++
					if rubric.Value(got) == it.truth[ri.Key] {
						hits++
					}
				}
			}
		}
		// 1,000-odd answers: the share is within 0.05 of the accuracy
		// (more than three standard errors).
		if got := float64(hits) / float64(n); math.Abs(got-want) > 0.05 {
			t.Errorf("v%d: %d of %d answers are the truth (%.2f), want about %.2f", v, hits, n, got, want)
		}
	}
	if _, ok := sj.Answer("Rate this: USER: hello", []string{"1", "2"}); ok {
		t.Error("the simulated judge answered a prompt it was not built for")
	}
}
