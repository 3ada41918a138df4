package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

// The demo judge's answers come from the fake model attune serves itself,
// which answers from a hash of the prompt unless told better. For the demo
// it is told: SimulatedJudge knows every prompt the demo judge will send
// (each demo item under each rubric item, with either prompt version) and
// the truth of each, and answers as a rater of the version's accuracy
// would. The alternative annotator test then has real work to do: the
// judge is about as good as the people, a little better with prompt v2,
// and whether it can replace one of them on a rubric item is what the
// test computes.

// Accuracy of the demo judge with each prompt version (see rater).
var judgeRaters = map[int]rater{
	1: {"demo judge v1", 0.72, 0.5},
	2: {"demo judge v2", 0.80, 0.5},
}

// v2Note is what prompt v2 adds after the dialogue in every rubric item's
// prompt: the demo's improved prompt.
const v2Note = "\n\nBefore answering, read every turn of the dialogue above and weigh what the replies do for the user, not how long they are."

// promptsV2 returns the demo judge's second prompt version for def: each
// item's prompt with v2Note after the dialogue's slot.
func promptsV2(def *rubric.Definition) map[string]string {
	out := make(map[string]string, len(def.Items))
	for _, it := range def.Items {
		out[it.Key] = strings.Replace(it.Prompt, def.Judge.Slot, def.Judge.Slot+v2Note, 1)
	}
	return out
}

type judgeAnswer struct {
	truth   rubric.Value
	allowed []rubric.Value
	version int
}

// SimulatedJudge is the answer function of the demo's fake model
// (fakellm.Options.Answer): for a prompt the demo judge sends about a demo
// item it returns the simulated judge's answer, deterministic in the
// prompt; for any other prompt, ok false. It is safe for concurrent use.
type SimulatedJudge struct {
	prompts map[[32]byte]judgeAnswer
}

// NewSimulatedJudge renders every prompt the demo judge sends, with both
// of its prompt versions, on the demo's items. It fails only if a built-in
// rubric cannot be rendered, which a test rules out.
func NewSimulatedJudge() (*SimulatedJudge, error) {
	sj := &SimulatedJudge{prompts: map[[32]byte]judgeAnswer{}}
	for _, pr := range projects {
		def, err := rubric.Builtin(pr.rubric)
		if err != nil {
			return nil, err
		}
		versions := map[int]*rubric.Definition{1: def, 2: judge.WithPrompts(def, promptsV2(def))}
		for _, it := range generate(def, pr.prefix, pr.seed) {
			msgs := make([]judge.Message, len(it.Messages))
			for i, m := range it.Messages {
				msgs[i] = judge.Message{Role: m.Role, Content: m.Content}
			}
			for v, d := range versions {
				for i := range d.Items {
					ri := &d.Items[i]
					p, err := judge.Render(d, ri, msgs)
					if err != nil {
						return nil, fmt.Errorf("demo: %w", err)
					}
					sj.prompts[sha256.Sum256([]byte(p.Messages[len(p.Messages)-1].Content))] = judgeAnswer{truth: it.truth[ri.Key], allowed: def.Allowed(ri), version: v}
				}
			}
		}
	}
	return sj, nil
}

// Answer is fakellm.Options.Answer.
func (sj *SimulatedJudge) Answer(prompt string, allowed []string) (string, bool) {
	h := sha256.Sum256([]byte(prompt))
	a, ok := sj.prompts[h]
	if !ok {
		return "", false
	}
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
	w := float64(binary.BigEndian.Uint64(h[8:16])>>11) / (1 << 53)
	return string(judgeRaters[a.version].answer(a.allowed, a.truth, u, w)), true
}
