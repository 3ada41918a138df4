package probe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
)

func dialogue(labels [2]string, turns ...string) probe.Dialogue {
	d := probe.Dialogue{UserLabel: labels[0], AssistantLabel: labels[1]}
	for i, t := range turns {
		role := probe.RoleUser
		if i%2 == 1 {
			role = probe.RoleAssistant
		}
		d.Turns = append(d.Turns, attune.Message{Role: role, Content: t})
	}
	return d
}

func TestApply(t *testing.T) {
	defaults := [2]string{"USER", "BOT"}
	tests := []struct {
		name      string
		rewrite   probe.Rewrite
		in        probe.Dialogue
		turns     []string
		user, bot string
	}{
		{"normalise collapses spaces and drops blank lines", probe.Normalise,
			dialogue(defaults, "I  lost\tmy job.\n\n\nI feel   awful.", "  That sounds hard.  "),
			[]string{"I lost my job.\nI feel awful.", "That sounds hard."}, "USER", "BOT"},
		{"normalise drops emphasis, code, headings, quotes and bullets", probe.Normalise,
			dialogue(defaults, "# Help\n> **I** am _so_ tired of `work`", "- rest\n* sleep\n+ eat ~~less~~"),
			[]string{"Help\nI am so tired of work", "rest\nsleep\neat less"}, "USER", "BOT"},
		{"normalise keeps underscores and stars inside words", probe.Normalise,
			dialogue(defaults, "my file_name is 2*3", "ok"),
			[]string{"my file_name is 2*3", "ok"}, "USER", "BOT"},
		{"normalise leaves a turn of markup alone rather than empty it", probe.Normalise,
			dialogue(defaults, "**", "ok"),
			[]string{"**", "ok"}, "USER", "BOT"},
		{"rename replaces the default names", probe.Rename,
			dialogue(defaults, "hi", "hello"),
			[]string{"hi", "hello"}, "PERSON", "RESPONDER"},
		{"rename picks a pair free of the rubric's own names", probe.Rename,
			dialogue([2]string{"Person", "READER"}, "hi", "hello"),
			[]string{"hi", "hello"}, "SPEAKER", "LISTENER"},
		{"append adds the sentence to the first user turn", probe.Append,
			dialogue(defaults, "I failed the exam", "I'm sorry.", "Thanks."),
			[]string{"I failed the exam. " + probe.IrrelevantSentence, "I'm sorry.", "Thanks."}, "USER", "BOT"},
		{"append after a full stop adds only a space", probe.Append,
			dialogue(defaults, "I failed the exam!  ", "I'm sorry."),
			[]string{"I failed the exam! " + probe.IrrelevantSentence, "I'm sorry."}, "USER", "BOT"},
		{"append skips an empty user turn", probe.Append,
			probe.Dialogue{Turns: []attune.Message{{Role: probe.RoleSystem, Content: "Be kind."}, {Role: probe.RoleUser, Content: " "}, {Role: probe.RoleAssistant, Content: "Hi"}, {Role: probe.RoleUser, Content: "sad"}}},
			[]string{"Be kind.", " ", "Hi", "sad. " + probe.IrrelevantSentence}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := strings.Join(contents(tc.in), "|")
			got, err := probe.Apply(tc.rewrite, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(contents(got), "|"); g != strings.Join(tc.turns, "|") {
				t.Errorf("turns = %q; want %q", contents(got), tc.turns)
			}
			if got.UserLabel != tc.user || got.AssistantLabel != tc.bot {
				t.Errorf("labels = %q, %q; want %q, %q", got.UserLabel, got.AssistantLabel, tc.user, tc.bot)
			}
			if after := strings.Join(contents(tc.in), "|"); after != before {
				t.Errorf("the original changed: %q became %q", before, after)
			}
		})
	}
}

func contents(d probe.Dialogue) []string {
	var s []string
	for _, t := range d.Turns {
		s = append(s, t.Content)
	}
	return s
}

func TestApplyRefuses(t *testing.T) {
	assistantOnly := probe.Dialogue{Turns: []attune.Message{{Role: probe.RoleAssistant, Content: "hello"}}}
	if _, err := probe.Apply(probe.Append, assistantOnly); !errors.Is(err, probe.ErrNoUserTurn) {
		t.Errorf("append to a dialogue without a user turn: err = %v; want ErrNoUserTurn", err)
	}
	if _, err := probe.Apply("shuffle", assistantOnly); err == nil || !strings.Contains(err.Error(), `"shuffle"`) {
		t.Errorf("unknown rewrite: err = %v; want it named", err)
	}
	if _, err := probe.ParseRewrite("rename"); err != nil {
		t.Errorf("ParseRewrite(rename): %v", err)
	}
	if _, err := probe.ParseRewrite("Rename "); err == nil {
		t.Error("ParseRewrite accepted a name that is not one")
	}
}

// FuzzApply holds what makes a rewrite neutral in form: the same turns with
// the same roles in the same order, no turn emptied, and every rewrite a
// change of something only where the dialogue gives it something to change.
func FuzzApply(f *testing.F) {
	f.Add("I  lost **my** job", "That _is_ hard.\n\n", "USER", "BOT", 3)
	f.Add("", "# x", "PERSON", "RESPONDER", 2)
	f.Add("**", "`a`", "", "", 5)
	f.Fuzz(func(t *testing.T, a, b, user, bot string, n int) {
		n = 1 + abs(n)%6
		roles := []string{probe.RoleSystem, probe.RoleUser, probe.RoleAssistant}
		var d probe.Dialogue
		d.UserLabel, d.AssistantLabel = user, bot
		for i := range n {
			c := a
			if i%2 == 1 {
				c = b
			}
			d.Turns = append(d.Turns, attune.Message{Role: roles[(i+len(a))%3], Content: c})
		}
		for _, r := range probe.Rewrites {
			got, err := probe.Apply(r, d)
			if errors.Is(err, probe.ErrNoUserTurn) && r == probe.Append {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if len(got.Turns) != len(d.Turns) {
				t.Fatalf("%s: %d turns became %d", r, len(d.Turns), len(got.Turns))
			}
			for i := range d.Turns {
				if got.Turns[i].Role != d.Turns[i].Role {
					t.Fatalf("%s: turn %d's role %q became %q", r, i, d.Turns[i].Role, got.Turns[i].Role)
				}
				if strings.TrimSpace(d.Turns[i].Content) != "" && strings.TrimSpace(got.Turns[i].Content) == "" {
					t.Fatalf("%s: turn %d %q was emptied", r, i, d.Turns[i].Content)
				}
			}
			if r == probe.Rename && (strings.EqualFold(got.UserLabel, got.AssistantLabel) ||
				strings.EqualFold(got.UserLabel, user) || strings.EqualFold(got.AssistantLabel, bot)) {
				t.Fatalf("rename gave %q, %q for %q, %q", got.UserLabel, got.AssistantLabel, user, bot)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
