package judge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// Prompt is what a judge is sent for one rubric item and one dialogue.
type Prompt struct {
	Messages []Message
	// Hash is HashMessages(Messages): it identifies the exact prompt and
	// is kept with every label.
	Hash string
	// Prefix is the number of leading bytes of the user message's content
	// up to the end of the dialogue. Every item of a rubric whose prompts
	// have the same text before the slot (the built-in ones do) gives the
	// same prefix for the same dialogue, so a conversation's calls share
	// it; Request.CachePrefix takes it.
	Prefix int
}

// The prefixes written before each message of a dialogue when the rubric
// names none.
const (
	defaultUserPrefix      = "USER"
	defaultAssistantPrefix = "BOT"
	systemPrefix           = "SYSTEM"
)

// Dialog writes a dialogue as the judge prompts read it: one message per
// line, "USER: …" for the user, "BOT: …" for the assistant and
// "SYSTEM: …" for a system message (another role is written upper-cased).
// Line breaks inside a message become single spaces, so that each message
// stays on its line and no message can start a line that looks like
// another speaker's.
func Dialog(dialogue []Message) string {
	return dialog(dialogue, defaultUserPrefix, defaultAssistantPrefix)
}

func dialog(dialogue []Message, user, assistant string) string {
	var b strings.Builder
	for i, m := range dialogue {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch m.Role {
		case RoleUser:
			b.WriteString(user)
		case RoleAssistant:
			b.WriteString(assistant)
		case RoleSystem:
			b.WriteString(systemPrefix)
		default:
			b.WriteString(strings.ToUpper(m.Role))
		}
		b.WriteString(": ")
		b.WriteString(oneLine(m.Content))
	}
	return b.String()
}

// oneLine joins the lines of s with single spaces, dropping blank lines
// and the spaces around each break.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return strings.TrimSpace(s)
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// Render returns the prompt of item (an item of def) for one dialogue: the
// item's prompt text with the rubric's slot (Judge.Slot, e.g. "{{Dialog}}")
// replaced by the dialogue written as Dialog writes it, with the rubric's
// own prefixes for the user and the assistant (Judge.User and
// Judge.Assistant, USER and BOT when unset). The whole text is one user
// message, as the single-metric prompt file is meant to be sent.
//
// Render fails if the item has no prompt, the rubric no slot, the prompt
// does not hold the slot exactly once, the dialogue is empty, or a message
// has a role other than user, assistant or system.
func Render(def *rubric.Definition, item *rubric.Item, dialogue []Message) (Prompt, error) {
	fail := func(format string, args ...any) (Prompt, error) {
		return Prompt{}, fmt.Errorf("judge: render %s %s: %s", def.Ref(), item.Key, fmt.Sprintf(format, args...))
	}
	slot := def.Judge.Slot
	switch {
	case item.Prompt == "":
		return fail("the item has no judge prompt")
	case slot == "":
		return fail("the rubric names no slot for the dialogue (judge.slot)")
	case strings.Count(item.Prompt, slot) != 1:
		return fail("the prompt must hold %s exactly once", slot)
	case len(dialogue) == 0:
		return fail("the dialogue is empty")
	}
	for i, m := range dialogue {
		if m.Role != RoleUser && m.Role != RoleAssistant && m.Role != RoleSystem {
			return fail("message %d has role %q; want user, assistant or system", i+1, m.Role)
		}
	}
	user, assistant := def.Judge.User, def.Judge.Assistant
	if user == "" {
		user = defaultUserPrefix
	}
	if assistant == "" {
		assistant = defaultAssistantPrefix
	}
	before, after, _ := strings.Cut(item.Prompt, slot)
	d := dialog(dialogue, user, assistant)
	msgs := []Message{{Role: RoleUser, Content: before + d + after}}
	return Prompt{Messages: msgs, Hash: HashMessages(msgs), Prefix: len(before) + len(d)}, nil
}

// WithPrompts returns a copy of def whose items ask with prompts (by
// rubric item key) instead of the rubric's own: a judge's prompt version.
// An item without an entry keeps its own prompt. def is not changed, so a
// cached definition can be shared by runs of every version; Render then
// renders the version's template exactly as it renders the rubric's.
func WithPrompts(def *rubric.Definition, prompts map[string]string) *rubric.Definition {
	out := *def
	out.Items = make([]rubric.Item, len(def.Items))
	copy(out.Items, def.Items)
	for i := range out.Items {
		if p, ok := prompts[out.Items[i].Key]; ok {
			out.Items[i].Prompt = p
		}
	}
	return &out
}

// HashMessages returns the lower-case hex SHA-256 of the canonical encoding
// of msgs: a JSON array of objects {"role": …, "content": …}, keys in that
// order, no insignificant space, no HTML escaping, no trailing newline.
// The same messages give the same hash on every machine.
func HashMessages(msgs []Message) string {
	sum := sha256.Sum256(canonicalJSON(msgs))
	return hex.EncodeToString(sum[:])
}

// canonicalJSON encodes v as compact JSON without HTML escaping. It panics
// if v cannot be encoded, which for the values given here (messages,
// cache-key fields) is a programming error.
func canonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("judge: canonical JSON: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ReAsk returns the conversation for the one follow-up call after a reply
// that could not be parsed: the prompt's messages, the reply as the
// assistant's message, and a user message naming the problem and asking
// for one of the allowed answers. An empty reply is sent as "(no reply)",
// since endpoints refuse empty messages.
func ReAsk(prompt Prompt, reply string, pe *ParseError, allowed []rubric.Value) []Message {
	if strings.TrimSpace(reply) == "" {
		reply = "(no reply)"
	}
	problem := "the reply held no answer"
	if pe != nil && pe.Problem != "" {
		problem = pe.Problem
	}
	msgs := make([]Message, 0, len(prompt.Messages)+2)
	msgs = append(msgs, prompt.Messages...)
	msgs = append(msgs,
		Message{Role: RoleAssistant, Content: reply},
		Message{Role: RoleUser, Content: fmt.Sprintf(
			"Your reply could not be read: %s. Reply again with exactly one of %s as the answer.",
			problem, orList(allowed))},
	)
	return msgs
}

// orList writes values as "YES, NO or NA".
func orList(vs []rubric.Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
