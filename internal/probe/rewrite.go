// Package probe holds the robustness probes of a judge: the neutral
// rewrites of a dialogue that must not move a sound judge's answer, and the
// statistics that tell a stable judge from one that answers by chance or is
// swayed by surface features. It is pure: the flow that asks the judge lives
// in internal/judge.
package probe

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/attune/attune/internal/attune"
)

// Roles of a turn, as the judge prompts know them.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Dialogue is what a judge reads of one item: the turns and the names the
// prompt writes before the user's and the assistant's turns ("USER" and
// "BOT" unless the rubric names others). The names are part of what the
// judge sees, so the rename rewrite changes them and nothing else.
type Dialogue struct {
	Turns          []attune.Message `json:"turns"`
	UserLabel      string           `json:"user_label"`
	AssistantLabel string           `json:"assistant_label"`
}

// Rewrite names one neutral rewrite.
type Rewrite string

// The three neutral rewrites. Each leaves what was said, by whom and in
// which order as it was; a judge that reads the dialogue for its meaning
// answers the rewrite as it answered the original.
const (
	// Normalise collapses runs of white space and drops markdown markup
	// (emphasis, inline code, headings, quote marks, list bullets).
	Normalise Rewrite = "normalise"
	// Rename writes other, equally neutral speaker names before the turns;
	// the roles stay.
	Rename Rewrite = "rename"
	// Append adds IrrelevantSentence to the end of the first user turn.
	Append Rewrite = "append"
)

// Rewrites are all rewrites, in the order the probe runs and shows them.
var Rewrites = []Rewrite{Normalise, Rename, Append}

// Describe says in plain words what a rewrite does, for the pages.
func (r Rewrite) Describe() string {
	switch r {
	case Normalise:
		return "white space and markdown normalised"
	case Rename:
		return "speaker names replaced"
	case Append:
		return "one irrelevant sentence added to a user turn"
	}
	return string(r)
}

// ParseRewrite reads a rewrite's name.
func ParseRewrite(s string) (Rewrite, error) {
	for _, r := range Rewrites {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("probe: unknown rewrite %q; want normalise, rename or append", s)
}

// IrrelevantSentence is the sentence Append adds: about nothing the
// dialogue is about, with no feeling in it, so that no rubric item has a
// reason to answer differently for it. It is fixed so that a probe is
// reproducible and two runs compare.
const IrrelevantSentence = "The bus timetable changes next month."

// renamePairs are the neutral speaker names Rename uses: the first pair
// that shares no name with the dialogue's own, so the rename is always a
// change; with three pairs one is always free of the dialogue's two names.
// Each name is one upper-case word, as the default ones are, so that a
// line still reads as a speaker's line.
var renamePairs = [][2]string{{"PERSON", "RESPONDER"}, {"WRITER", "READER"}, {"SPEAKER", "LISTENER"}}

// ErrNoUserTurn is returned by Append for a dialogue without a user turn
// with text: there is nowhere to add the sentence without adding a turn.
var ErrNoUserTurn = errors.New("probe: the dialogue has no user turn to add a sentence to")

// Apply returns the rewrite r of d. d is not changed. The result has as
// many turns as d, with the same roles in the same order.
func Apply(r Rewrite, d Dialogue) (Dialogue, error) {
	out := Dialogue{Turns: make([]attune.Message, len(d.Turns)), UserLabel: d.UserLabel, AssistantLabel: d.AssistantLabel}
	copy(out.Turns, d.Turns)
	switch r {
	case Normalise:
		for i := range out.Turns {
			out.Turns[i].Content = normalise(out.Turns[i].Content)
		}
	case Rename:
		for _, p := range renamePairs {
			if !sameName(p[0], d.UserLabel, d.AssistantLabel) && !sameName(p[1], d.UserLabel, d.AssistantLabel) {
				out.UserLabel, out.AssistantLabel = p[0], p[1]
				break
			}
		}
	case Append:
		i := firstUserTurn(d.Turns)
		if i < 0 {
			return Dialogue{}, ErrNoUserTurn
		}
		c := strings.TrimRight(out.Turns[i].Content, " \t\r\n")
		out.Turns[i].Content = c + sentenceJoint(c) + IrrelevantSentence
	default:
		return Dialogue{}, fmt.Errorf("probe: unknown rewrite %q", r)
	}
	return out, nil
}

func sameName(name string, labels ...string) bool {
	for _, l := range labels {
		if strings.EqualFold(strings.TrimSpace(l), name) {
			return true
		}
	}
	return false
}

// firstUserTurn is the turn Append changes: the first user turn with text.
// The first rather than the last because the last user turn is what the
// assistant's reply answers, and a sentence there sits closest to what
// most rubric items read.
func firstUserTurn(turns []attune.Message) int {
	for i, t := range turns {
		if t.Role == RoleUser && strings.TrimSpace(t.Content) != "" {
			return i
		}
	}
	return -1
}

// sentenceJoint is what goes between a turn's text and the added sentence:
// a full stop when the text ends without one, so the sentence stands on
// its own rather than running on from the user's last words.
func sentenceJoint(c string) string {
	if c == "" {
		return ""
	}
	if strings.ContainsRune(".!?…\"')", rune(c[len(c)-1])) {
		return " "
	}
	return ". "
}

var (
	// markdown that carries no words: emphasis and inline-code marks.
	emphasis = regexp.MustCompile("\\*\\*|__|`+|~~")
	// single-character emphasis around a word: *word* and _word_.
	singleEmphasis = regexp.MustCompile(`(^|[\s(])[*_]([^\s*_][^*_]*?[^\s*_]|[^\s*_])[*_]($|[\s).,;:!?])`)
	// a line's heading, quote or bullet mark.
	lineMark = regexp.MustCompile(`^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+)`)
	spaces   = regexp.MustCompile(`[ \t\f\v\x{00a0}]+`)
)

// normalise drops markdown markup and collapses white space: spaces within
// a line become one, blank lines go, lines lose leading and trailing
// space. The words stay as they were. A turn whose text would vanish (it
// held nothing but markup) is left as it was, so no turn becomes empty.
func normalise(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		l = lineMark.ReplaceAllString(l, "")
		l = emphasis.ReplaceAllString(l, "")
		l = singleEmphasis.ReplaceAllString(l, "$1$2$3")
		l = strings.TrimSpace(spaces.ReplaceAllString(l, " "))
		if l != "" {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, "\n")
	if out == "" {
		return s
	}
	return out
}
