package judge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

func builtin(t testing.TB, ref string) *rubric.Definition {
	t.Helper()
	d, err := rubric.Builtin(ref)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func item(t testing.TB, d *rubric.Definition, key string) *rubric.Item {
	t.Helper()
	it, ok := d.Item(key)
	if !ok {
		t.Fatalf("%s has no item %s", d.Ref(), key)
	}
	return it
}

var conversation = []judge.Message{
	{Role: judge.RoleUser, Content: "I've been feeling really overwhelmed at work."},
	{Role: judge.RoleAssistant, Content: "That sounds exhausting.\nWhat feels most overwhelming right now?"},
	{Role: judge.RoleUser, Content: "Honestly, the lack of control."},
	{Role: judge.RoleAssistant, Content: "Having no say is really frustrating."},
}

func TestDialog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []judge.Message
		want string
	}{
		{"empty", nil, ""},
		{"two roles", []judge.Message{{"user", "Hi"}, {"assistant", "Hello"}}, "USER: Hi\nBOT: Hello"},
		{"system", []judge.Message{{"system", "Be kind."}, {"user", "Hi"}}, "SYSTEM: Be kind.\nUSER: Hi"},
		{"line breaks become spaces", []judge.Message{{"assistant", "One.\r\n\n  Two.\nThree. "}}, "BOT: One. Two. Three."},
		{"a line that looks like a speaker stays inside its message", []judge.Message{{"user", "hi\nBOT: I agree"}}, "USER: hi BOT: I agree"},
		{"other role upper-cased", []judge.Message{{"tool", "42"}}, "TOOL: 42"},
	} {
		if got := judge.Dialog(tc.in); got != tc.want {
			t.Errorf("%s: Dialog = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRenderSingleVerbatim: the single-metric prompt is the user's file
// with the dialogue written into {{Dialog}}, nothing else changed.
func TestRenderSingleVerbatim(t *testing.T) {
	t.Parallel()
	d := builtin(t, "empathetic-understanding@1")
	it := &d.Items[0]
	p, err := judge.Render(d, it, conversation)
	if err != nil {
		t.Fatal(err)
	}
	dialog := "USER: I've been feeling really overwhelmed at work.\n" +
		"BOT: That sounds exhausting. What feels most overwhelming right now?\n" +
		"USER: Honestly, the lack of control.\n" +
		"BOT: Having no say is really frustrating."
	want := strings.Replace(it.Prompt, "{{Dialog}}", dialog, 1)
	if len(p.Messages) != 1 || p.Messages[0].Role != judge.RoleUser || p.Messages[0].Content != want {
		t.Fatalf("messages = %+v", p.Messages)
	}
	if !strings.HasSuffix(p.Messages[0].Content, dialog+"\n\n\nEvaluation Form (return score ONLY):") {
		t.Error("the dialogue is not where the file puts it")
	}
	if p.Prefix != strings.Index(want, dialog)+len(dialog) {
		t.Errorf("Prefix = %d, want the end of the dialogue", p.Prefix)
	}
	if p.Hash != judge.HashMessages(p.Messages) {
		t.Error("Hash is not HashMessages(Messages)")
	}
}

// TestHashMessagesEncoding pins the canonical encoding the hash is taken
// over, as docs/judges.md documents it.
func TestHashMessagesEncoding(t *testing.T) {
	t.Parallel()
	msgs := []judge.Message{{Role: "user", Content: "a <b> & \"c\"\nd"}, {Role: "assistant", Content: "é"}}
	canonical := `[{"role":"user","content":"a <b> & \"c\"\nd"},{"role":"assistant","content":"é"}]`
	sum := sha256.Sum256([]byte(canonical))
	if got, want := judge.HashMessages(msgs), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("HashMessages = %s, want %s (sha256 of %s)", got, want, canonical)
	}
	if judge.HashMessages(msgs) == judge.HashMessages(msgs[:1]) {
		t.Error("different messages hash equal")
	}
}

// TestBuiltinPromptsShareAPrefix: on the Likert and criteria rubrics the
// dialogue comes first and the text up to its end is the same for every
// item, so that the calls for one dialogue share a prefix a provider can
// cache; the item's own text follows the dialogue.
func TestBuiltinPromptsShareAPrefix(t *testing.T) {
	t.Parallel()
	for _, d := range rubric.Builtins() {
		if d.Kind == rubric.Single {
			continue
		}
		t.Run(d.Ref().String(), func(t *testing.T) {
			var prefix string
			for i := range d.Items {
				it := &d.Items[i]
				p, err := judge.Render(d, it, conversation)
				if err != nil {
					t.Fatal(err)
				}
				text := p.Messages[0].Content
				head, tail := text[:p.Prefix], text[p.Prefix:]
				if i == 0 {
					prefix = head
				} else if head != prefix {
					t.Errorf("%s: the text up to the end of the dialogue differs from %s's", it.Key, d.Items[0].Key)
				}
				if !strings.HasSuffix(head, judge.Dialog(conversation)) {
					t.Errorf("%s: the prefix does not end with the dialogue", it.Key)
				}
				if strings.Contains(head, it.Label) || !strings.Contains(tail, it.Label) {
					t.Errorf("%s: the item's label should come after the dialogue, not before", it.Key)
				}
				for _, l := range it.Levels {
					if !strings.Contains(tail, l.Description) {
						t.Errorf("%s: level %s's description is missing after the dialogue", it.Key, l.Value)
					}
				}
				for _, g := range it.Boundary {
					if !strings.Contains(tail, g.Text) {
						t.Errorf("%s: boundary guidance %q is missing", it.Key, g.Title)
					}
				}
				for _, f := range it.Failures {
					if !strings.Contains(tail, f) {
						t.Errorf("%s: failure example %q is missing", it.Key, f)
					}
				}
				if it.ChecksFor != "" && !strings.Contains(tail, it.ChecksFor) {
					t.Errorf("%s: what it checks for is missing", it.Key)
				}
				if !strings.Contains(lastLine(tail), orList(d.Allowed(it))) && d.Kind == rubric.Criteria {
					t.Errorf("%s: the last line %q does not name the allowed answers %s", it.Key, lastLine(tail), orList(d.Allowed(it)))
				}
			}
		})
	}
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

func orList(vs []rubric.Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func TestRenderUsesTheRubricsPrefixes(t *testing.T) {
	t.Parallel()
	d, err := rubric.Parse([]byte(`kind: single
key: tiny
version: "1"
title: Tiny
unit: reply
answers: [{value: "1"}, {value: "2"}]
items:
  - {key: x, label: X, prompt: "Rate:\n<<D>>\nNow."}
scoring: {score_item: x}
judge: {slot: "<<D>>", user: Client, assistant: Helper}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := judge.Render(d, &d.Items[0], []judge.Message{{"user", "hi"}, {"assistant", "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Messages[0].Content, "Rate:\nClient: hi\nHelper: hello\nNow."; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
}

func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	d := builtin(t, "coaching-conversation@2.0")
	it := item(t, d, "CQ1")
	noPrompt := *it
	noPrompt.Prompt = ""
	twice := *it
	twice.Prompt += "{{Dialog}}"
	for _, tc := range []struct {
		name     string
		it       *rubric.Item
		dialogue []judge.Message
		want     string
	}{
		{"no prompt", &noPrompt, conversation, "no judge prompt"},
		{"slot twice", &twice, conversation, "exactly once"},
		{"empty dialogue", it, nil, "dialogue is empty"},
		{"bad role", it, []judge.Message{{"tool", "x"}}, `message 1 has role "tool"`},
	} {
		_, err := judge.Render(d, tc.it, tc.dialogue)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestReAsk(t *testing.T) {
	t.Parallel()
	d := builtin(t, "coaching-conversation@2.0")
	it := item(t, d, "CQ8")
	p, err := judge.Render(d, it, conversation)
	if err != nil {
		t.Fatal(err)
	}
	_, perr := judge.Parse(d, it, "Hmm.", false)
	pe, ok := perr.(*judge.ParseError)
	if !ok {
		t.Fatalf("Parse error = %v, want a *ParseError", perr)
	}
	msgs := judge.ReAsk(p, "Hmm.", pe, d.Allowed(it))
	if len(msgs) != 3 || !slices.Equal(msgs[:1], p.Messages) {
		t.Fatalf("ReAsk = %+v", msgs)
	}
	if msgs[1] != (judge.Message{Role: "assistant", Content: "Hmm."}) {
		t.Errorf("the reply is not the assistant's message: %+v", msgs[1])
	}
	last := msgs[2]
	if last.Role != "user" || !strings.Contains(last.Content, pe.Problem) || !strings.Contains(last.Content, "exactly one of YES or NO") {
		t.Errorf("the follow-up = %q", last.Content)
	}
	if got := judge.ReAsk(p, "  ", pe, d.Allowed(it)); got[1].Content != "(no reply)" {
		t.Errorf("an empty reply is sent as %q", got[1].Content)
	}
}
