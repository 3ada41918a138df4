package annotate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/wellbeing"
)

// The rubric pane and the dialogue as the workspace lays them out, from
// the rubric and the item: the adjudication page of the gold set shows
// the same pane and dialogue, so both build them here.

// DialogueOf numbers the turns as the rubrics count them — a user
// message and the reply to it share a number (dataset.TurnNumbers) — and marks the reply a
// reply-level rubric rates: the last assistant message. found holds the
// wellbeing list's matches in each message (nil to scan them here).
func DialogueOf(def *rubric.Definition, item attune.Item, found [][]wellbeing.Match) Dialogue {
	d := Dialogue{Turns: item.Turns, Messages: make([]Message, len(item.Messages))}
	// The heading follows the rubric's unit, not the dialogue's length:
	// a conversation rubric rates the conversation even when it is one
	// exchange long.
	switch def.Unit {
	case rubric.Reply:
		d.Heading, d.Rated = "Reply", "the assistant's reply (marked)"
	case rubric.LastReply:
		d.Heading, d.Rated = "Reply, in its conversation", "the last assistant reply (marked), read in context"
	default:
		d.Heading, d.Rated = "Conversation", "the whole conversation"
	}
	rated := -1
	if def.Unit == rubric.Reply || def.Unit == rubric.LastReply {
		for i, m := range item.Messages {
			if m.Role == "assistant" {
				rated = i
			}
		}
	}
	// Numbered by the dataset's own rule, so that no message carries a
	// number past the turns the rubric counts (a trailing user message,
	// a greeting before the first one, have none).
	roles := make([]dataset.Message, len(item.Messages))
	for i, m := range item.Messages {
		roles[i] = dataset.Message{Role: m.Role}
	}
	turns := dataset.TurnNumbers(roles)
	for i, m := range item.Messages {
		var matches []wellbeing.Match
		if found != nil {
			matches = found[i]
		} else {
			matches = wellbeing.Matches(m.Content)
		}
		msg := Message{Role: m.Role, Text: m.Content, Parts: signalParts(m.Content, matches), Rated: i == rated}
		switch m.Role {
		case "user":
			msg.Turn, msg.Who = turns[i], "User"
		case "assistant":
			msg.Turn, msg.Who = turns[i], "Assistant"
		case "system":
			msg.Who = "System message"
		default:
			msg.Role, msg.Who = "other", m.Role
		}
		d.Messages[i] = msg
	}
	return d
}

// signalParts cuts a message where the wellbeing word list found a word
// (matches), for the page to highlight it; nil when it found none.
func signalParts(text string, matches []wellbeing.Match) []Part {
	if len(matches) == 0 {
		return nil
	}
	var parts []Part
	at := 0
	for _, m := range matches {
		if m.Start > at {
			parts = append(parts, Part{Text: text[at:m.Start]})
		}
		parts = append(parts, Part{Text: text[m.Start:m.End], Term: m.Term})
		at = m.End
	}
	if at < len(text) {
		parts = append(parts, Part{Text: text[at:]})
	}
	return parts
}

// RubricOf lays the rubric out for the annotator, with the form's values
// and the engine's problems beside the items they concern.
func RubricOf(def *rubric.Definition, facts rubric.Facts, answers, notes map[string]string, issues rubric.Issues) (Rubric, Problems) {
	return FillRubric(def, RubricBase(def), facts, answers, notes, issues)
}

// RubricBase lays the rubric out as every page of it shows it, before the
// form's values, the dialogue's facts and the engine's problems: it
// depends on the rubric version alone.
func RubricBase(def *rubric.Definition) Rubric {
	rv := Rubric{Ref: def.Ref().String(), Title: def.Title, Kind: string(def.Kind)}
	for _, s := range []Section{{Title: "Purpose", Text: def.Purpose}, {Title: "Scale", Text: def.Scale}, {Title: "Scope", Text: def.Scope}} {
		if s.Text != "" {
			rv.About = append(rv.About, s)
		}
	}
	for _, n := range def.Notes {
		rv.About = append(rv.About, Section{Title: n.Title, Text: n.Text})
	}
	for _, rule := range def.Rules {
		if rule.Source != "" {
			rv.About = append(rv.About, Section{Title: "Edge rule the engine checks", Text: rule.Source})
		}
	}
	var worked map[string]rubric.AssessedAnswer
	if len(def.Examples) > 0 {
		ex := def.Examples[0]
		w := &Worked{Title: cmp.Or(ex.Title, "Worked example"),
			Result: "Score: " + scoreText(ex.Score) + " → " + passWord(ex.Pass)}
		for i, t := range ex.Turns {
			w.Turns = append(w.Turns, Message{Turn: i + 1, Role: "user", Who: "User", Text: t.User},
				Message{Turn: i + 1, Role: "assistant", Who: "Assistant", Text: t.Assistant})
		}
		worked = map[string]rubric.AssessedAnswer{}
		for _, a := range ex.Answers {
			worked[a.Item] = a
			w.Answers = append(w.Answers, Section{Title: a.Item, Text: answerWhy(a)})
		}
		rv.Worked = w
	}

	itemView := func(it *rubric.Item) Item {
		iv := itemView(def, it)
		if a, ok := worked[it.Key]; ok {
			iv.Worked = answerWhy(a)
		}
		return iv
	}
	if def.Kind == rubric.Criteria && len(def.Categories) > 0 {
		for _, c := range def.Categories {
			g := Group{Title: c.Label, Weight: fmt.Sprintf("%.2f", c.Weight), Question: c.Question, Notes: c.Notes}
			if c.WeightNote != "" {
				g.Weight += " (" + c.WeightNote + ")"
			}
			for _, it := range def.CategoryItems(c.Key) {
				g.Items = append(g.Items, itemView(it))
			}
			rv.Groups = append(rv.Groups, g)
		}
		// Criteria outside every category still need answers.
		var rest Group
		for i := range def.Items {
			if def.Items[i].Category == "" {
				rest.Items = append(rest.Items, itemView(&def.Items[i]))
			}
		}
		if len(rest.Items) > 0 {
			rv.Groups = append(rv.Groups, rest)
		}
	} else {
		var g Group
		for i := range def.Items {
			g.Items = append(g.Items, itemView(&def.Items[i]))
		}
		rv.Groups = []Group{g}
	}
	return rv
}

// FillRubric is base (RubricBase of def, which it leaves as it is, for
// other pages to share) with the form's answers and notes, each item's
// condition explained with the dialogue's facts, and the engine's problems
// beside the items they concern.
func FillRubric(def *rubric.Definition, base Rubric, facts rubric.Facts, answers, notes map[string]string, issues rubric.Issues) (Rubric, Problems) {
	var probs Problems
	var byItem map[string][]rubric.Issue
	for _, is := range issues {
		if _, ok := def.Item(is.Item); !ok {
			probs.General = append(probs.General, is.Message)
			continue
		}
		if byItem == nil {
			byItem = map[string][]rubric.Issue{}
		}
		byItem[is.Item] = append(byItem[is.Item], is)
		switch is.Severity {
		case rubric.Blocking:
			probs.Errors = append(probs.Errors, Issue{Item: is.Item, Message: is.Message})
		case rubric.Warning:
			probs.Warnings = append(probs.Warnings, Issue{Item: is.Item, Message: is.Message})
		}
	}
	probs.Confirm = len(probs.Warnings) > 0 && len(probs.Errors) == 0 && len(probs.General) == 0

	rv := base
	rv.Groups = make([]Group, len(base.Groups))
	for gi, g := range base.Groups {
		g.Items = slices.Clone(g.Items)
		for i := range g.Items {
			iv := &g.Items[i]
			answer, answered := answers[iv.Key]
			it, known := def.Item(iv.Key)
			var forbidden []string
			if known {
				iv.Condition = condition(it.Conditions, facts)
				for _, o := range iv.Options {
					reason, _ := def.Forbids(it, rubric.Value(o.Value), facts)
					forbidden = append(forbidden, reason)
				}
			}
			if answered || slices.ContainsFunc(forbidden, func(r string) bool { return r != "" }) {
				iv.Options = slices.Clone(iv.Options)
				for k := range iv.Options {
					o := &iv.Options[k]
					o.Checked = answered && o.Value == answer
					if forbidden != nil && forbidden[k] != "" {
						// Not offered, so not chosen either: a disabled
						// radio is not sent, and the form must not count it
						// as an answer.
						o.Forbidden, o.Checked = forbidden[k], false
					}
				}
			}
			iv.Note = notes[iv.Key]
			for _, is := range byItem[iv.Key] {
				if is.Severity == rubric.Blocking {
					iv.Errors = append(iv.Errors, is.Message)
				} else {
					iv.Warnings = append(iv.Warnings, is.Message)
				}
			}
		}
		rv.Groups[gi] = g
	}
	return rv, probs
}

// scoreText writes a score as the rubric documents do: 1.0, 0.85.
func scoreText(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func passWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func answerWhy(a rubric.AssessedAnswer) string {
	if a.Why == "" {
		return string(a.Answer)
	}
	return string(a.Answer) + " — " + a.Why
}

// itemView is one dimension or criterion with its input: every answer the
// rubric allows, with its level description or meaning beside it.
func itemView(def *rubric.Definition, it *rubric.Item) Item {
	iv := Item{Key: it.Key, Label: it.Label, Steps: it.Steps, Failures: it.Failures, NANote: it.NANote}
	switch {
	case it.ChecksFor != "":
		iv.Text, iv.TextTitle = it.ChecksFor, "Checks for"
	case it.Definition != "":
		iv.Text, iv.TextTitle = it.Definition, "Definition"
	}
	if def.NAInvalid(it) && it.NANote != "" {
		iv.NANote = "NA is not offered: " + it.NANote
	}
	var keys, failing []string
	for _, v := range def.Allowed(it) {
		o := Option{Value: string(v), Key: shortcut(v), Fails: def.Fails(it, v)}
		if o.Fails {
			failing = append(failing, string(v))
		}
		for _, l := range it.Levels {
			if l.Value == v {
				o.Name, o.Description = l.Label, l.Description
			}
		}
		if o.Name == "" && o.Description == "" {
			for _, a := range def.Answers {
				if a.Value == v {
					o.Description = a.Meaning
				}
			}
		}
		if o.Key != "" {
			keys = append(keys, o.Key)
		}
		iv.Options = append(iv.Options, o)
	}
	iv.Keys = strings.Join(keys, " ")
	iv.FailsOn = orList(failing)
	for _, b := range it.Boundary {
		iv.Boundary = append(iv.Boundary, Section{Title: b.Title, Text: b.Text})
	}
	for _, ex := range it.Examples {
		iv.Examples = append(iv.Examples, Example{Title: ex.Title(), User: ex.User, Response: ex.Response, Why: ex.Why})
	}
	for _, c := range def.Categories {
		if c.Key == it.Category {
			iv.Category, iv.Weight = c.Label, fmt.Sprintf("%.2f", c.Weight)
		}
	}
	return iv
}

// orList writes values as a choice: "NO", "1 or 2", "1, 2 or 3".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// shortcut is the key that chooses answer v: its digit on a scale, Y, N
// and A for YES, NO and NA; none for other answers.
func shortcut(v rubric.Value) string {
	switch v {
	case rubric.Yes:
		return "Y"
	case rubric.No:
		return "N"
	case rubric.NA:
		return "A"
	}
	if len(v) == 1 && v[0] >= '0' && v[0] <= '9' {
		return string(v)
	}
	return ""
}

// condition explains when an item applies, with this dialogue's facts.
func condition(c *rubric.Conditions, facts rubric.Facts) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.MinTurns > 0 {
		s := fmt.Sprintf("Applies from %d turns; this conversation has %d", c.MinTurns, facts.Turns)
		if facts.Turns < c.MinTurns {
			s += ", so the rubric expects NA"
		}
		parts = append(parts, s+".")
	}
	if c.CrisisSignals {
		switch {
		case len(facts.Terms) > 0:
			words := make([]string, len(facts.Terms))
			for i, t := range facts.Terms {
				words[i] = "“" + t + "”"
			}
			parts = append(parts, fmt.Sprintf("Applies only when crisis signals are present, and whether they are is yours to judge. This conversation contains %s from attune's word list (highlighted): read it closely. A word is a prompt to look, not a verdict; NA says you found no crisis signals, and you will be asked to confirm it.", strings.Join(words, ", ")))
		case facts.Marked:
			parts = append(parts, "Applies only when crisis signals are present, and whether they are is yours to judge. A lead marked this conversation as mentioning suicide or self-harm: read it closely. NA says you found no crisis signals, and you will be asked to confirm it.")
		default:
			parts = append(parts, "Applies only when crisis signals are present. attune's word list found none here; if you see none either, answer NA.")
		}
	}
	if c.NAException != "" {
		parts = append(parts, "NA is also right when "+c.NAException+" (you will be asked to confirm).")
	}
	return strings.Join(parts, " ")
}
