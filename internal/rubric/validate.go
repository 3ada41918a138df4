package rubric

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Answers is one rater's answer set for one labelled item: item key → value.
type Answers map[string]Value

// Presence is whether something is known to be present.
type Presence int8

// The states of a Presence.
const (
	Unknown Presence = iota
	Absent
	// Present is known for sure, as when a caller states it.
	Present
	// Signalled is pointed at but not known: a word of the wellbeing list
	// or a lead's mark suggests crisis signals, and whether they are there
	// is the rater's judgement. Rules about them warn; none blocks.
	Signalled
)

// Facts are what is known about the labelled item, independent of any
// rater. FactsOf works them out from an item; every path that validates or
// scores an answer set for an item uses it.
type Facts struct {
	// Turns is the number of turns (one user message with the assistant
	// reply to it); 0 means unknown, and turn conditions are then not
	// checked.
	Turns int
	// Crisis says whether crisis signals are present in the dialogue.
	Crisis Presence
	// Terms are the words of the wellbeing list found in the dialogue, in
	// their documented spelling and the order they first occur.
	Terms []string
	// Marked is true when a lead marked the item as mentioning suicide or
	// self-harm.
	Marked bool
}

// signals describes what points at crisis signals, for a message: the
// words found and the lead's mark.
func (f Facts) signals() string {
	var parts []string
	if len(f.Terms) > 0 {
		q := make([]string, len(f.Terms))
		for i, t := range f.Terms {
			q[i] = strconv.Quote(t)
		}
		word := "word"
		if len(q) > 1 {
			word = "words"
		}
		parts = append(parts, fmt.Sprintf("the dialogue contains the wellbeing list's %s %s", word, andList(q)))
	}
	if f.Marked {
		parts = append(parts, "a lead marked it as mentioning suicide or self-harm")
	}
	if len(parts) == 0 {
		return "something points at crisis signals"
	}
	return strings.Join(parts, ", and ")
}

// Options say whose answers are validated.
type Options struct {
	// AllowError accepts ERROR, the value a failed judge call records. Set
	// it for judges; a person can never answer ERROR.
	AllowError bool
}

// Severity says whether an Issue blocks.
type Severity string

// The severities of an Issue.
const (
	// Blocking issues must be corrected before the answers are accepted.
	Blocking Severity = "error"
	// Warning issues are shown for a person to confirm or correct.
	Warning Severity = "warning"
)

// Issue is one problem found in an answer set.
type Issue struct {
	// Item is the key of the item the issue is about, for showing it next
	// to that item; it may name an item the rubric does not have.
	Item     string   `json:"item"`
	Severity Severity `json:"severity"`
	// Message is a full sentence for people; it names the item by key and
	// label and explains with the item's facts.
	Message string `json:"message"`
}

// Issues is the result of validating an answer set, in a stable order:
// unknown items (by key), then the rubric's items in order, then its rules
// in order.
type Issues []Issue

// Errors returns the blocking issues.
func (is Issues) Errors() Issues { return is.only(Blocking) }

// Warnings returns the issues a person can confirm.
func (is Issues) Warnings() Issues { return is.only(Warning) }

func (is Issues) only(s Severity) Issues {
	var out Issues
	for _, i := range is {
		if i.Severity == s {
			out = append(out, i)
		}
	}
	return out
}

// Verdict is what becomes of an answer set, whichever way it comes.
type Verdict string

// The verdicts on an answer set.
const (
	// Accepted answers are stored.
	Accepted Verdict = "accepted"
	// NeedsConfirmation answers draw warnings a person has not confirmed;
	// they are stored once confirmed.
	NeedsConfirmation Verdict = "needs confirmation"
	// Refused answers have a blocking issue and are never stored.
	Refused Verdict = "refused"
)

// Verdict says what becomes of the answer set these issues were found in:
// refused while an issue blocks, needing confirmation while warnings are
// not confirmed, accepted otherwise. It also returns the issues behind the
// verdict: the blocking ones, the unconfirmed warnings, or none. Every
// path that stores answers (form, API, import, consensus, adjudication)
// decides with it.
func (is Issues) Verdict(confirmed bool) (Verdict, Issues) {
	if errs := is.Errors(); len(errs) > 0 {
		return Refused, errs
	}
	if warns := is.Warnings(); len(warns) > 0 && !confirmed {
		return NeedsConfirmation, warns
	}
	return Accepted, nil
}

// Err returns nil if no issue blocks, and otherwise an error listing the
// blocking messages.
func (is Issues) Err() error {
	var errs []error
	for _, i := range is.Errors() {
		errs = append(errs, errors.New(i.Message))
	}
	return errors.Join(errs...)
}

// Validate checks one rater's answer set against the definition, given the
// facts of the labelled item. Blocking issues are unknown or missing items,
// answers the item does not allow (NA where the rubric forbids it, ERROR
// from a person) and NA on a conditional item whose condition holds.
// Warnings are answers against a condition the rubric allows an exception
// to, YES or NO where the condition does not hold, and the rubric's edge
// rules. The result is deterministic.
func (d *Definition) Validate(a Answers, f Facts, o Options) Issues {
	var out Issues
	block := func(it *Item, format string, args ...any) {
		out = append(out, Issue{Item: it.Key, Severity: Blocking, Message: it.label() + ": " + fmt.Sprintf(format, args...)})
	}
	warn := func(it *Item, format string, args ...any) {
		out = append(out, Issue{Item: it.Key, Severity: Warning, Message: it.label() + ": " + fmt.Sprintf(format, args...)})
	}

	var unknown []string
	for k := range a {
		if _, ok := d.Item(k); !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		out = append(out, Issue{Item: k, Severity: Blocking,
			Message: fmt.Sprintf("%q is not an item of %s; its items are %s", k, d.Ref(), d.itemKeys())})
	}

	for i := range d.Items {
		it := &d.Items[i]
		v, ok := a[it.Key]
		switch {
		case !ok || v == "":
			if o.AllowError {
				block(it, "no answer; a missing answer counts as ERROR")
			} else {
				block(it, "no answer; choose %s", orList(d.Allowed(it)))
			}
			continue
		case v == Error:
			if !o.AllowError {
				block(it, "ERROR records a failed judge call and is not an answer a person gives; choose %s", orList(d.Allowed(it)))
			}
			continue
		case !d.Allows(it, v):
			block(it, "%s", d.notAllowed(it, v))
			continue
		}
		d.conditions(it, v, f, block, warn)
	}

	for _, r := range d.Rules {
		if msg, ok := d.fires(r, a, f); ok {
			it, _ := d.Item(r.Item)
			warn(it, "%s (%s)", r.Warning, msg)
		}
	}
	return out
}

// Forbids reports whether the facts of the item rule out answer v on item
// it, which the item allows in general: NA on an item whose condition holds
// (the conversation is long enough, crisis signals are present) when the
// rubric grants no exception a rater may confirm. The reason is the
// blocking issue's message, naming the item. No confirmation lifts it: a
// person's answer set is refused, the form does not offer the answer, and a
// judge's answer is not stored. Validate raises the same issue, so every
// path decides with this one rule.
func (d *Definition) Forbids(it *Item, v Value, f Facts) (reason string, forbidden bool) {
	msgs := d.refusals(it, v, f)
	if len(msgs) == 0 {
		return "", false
	}
	return it.label() + ": " + strings.Join(msgs, "; and "), true
}

// JudgeRefuses reports whether a judge may not give answer v on item it of
// a dialogue with facts f, and why (the blocking issue a person's answer
// set would get, naming the item): an answer the item does not allow (NA
// on a criterion answered YES or NO only, anything off the scale) or one
// the facts rule out (Forbids). ERROR is what a failed call records, not an
// answer a judge gives, and is never refused here. The runner re-asks a
// refused answer and then records ERROR with the reason; an import of a
// judge's answers refuses the line. Every path that takes a judge's answer
// decides with this one rule.
func (d *Definition) JudgeRefuses(it *Item, v Value, f Facts) (reason string, refused bool) {
	if v == Error {
		return "", false
	}
	if !d.Allows(it, v) {
		return it.label() + ": " + d.notAllowed(it, v), true
	}
	return d.Forbids(it, v, f)
}

// notAllowed says, without the item's label, why v is not an answer item
// it allows.
func (d *Definition) notAllowed(it *Item, v Value) string {
	if v == NA && d.NAInvalid(it) {
		why := ""
		if it.NANote != "" {
			why = ": " + strings.TrimSuffix(lowerFirst(it.NANote), ".")
		}
		return fmt.Sprintf("NA is not valid here%s; NA on this item scores as a failure; choose %s", why, orList(d.Allowed(it)))
	}
	return fmt.Sprintf("%q is not an allowed answer; choose %s", v, orList(d.Allowed(it)))
}

// Permitted returns the answers a rater may give on item it for an item
// with facts f, in display order: Allowed without those Forbids rules out.
func (d *Definition) Permitted(it *Item, f Facts) []Value {
	var out []Value
	for _, v := range d.Allowed(it) {
		if _, no := d.Forbids(it, v, f); !no {
			out = append(out, v)
		}
	}
	return out
}

// refusals returns the messages (without the item's label) of the blocking
// issues the item's conditions raise against answer v, given the facts.
func (d *Definition) refusals(it *Item, v Value, f Facts) []string {
	c := it.Conditions
	if c == nil || v != NA || c.NAException != "" {
		return nil
	}
	var out []string
	if c.MinTurns > 0 && f.Turns >= c.MinTurns {
		out = append(out, fmt.Sprintf("NA is for conversations under %d turns: the item applies from %d turns and this conversation has %d; choose %s",
			c.MinTurns, c.MinTurns, f.Turns, orList(without(d.Allowed(it), NA))))
	}
	if c.CrisisSignals && f.Crisis == Present {
		out = append(out, fmt.Sprintf("NA is for conversations without crisis signals, and this one has crisis signals; choose %s",
			orList(without(d.Allowed(it), NA))))
	}
	return out
}

// conditions checks an allowed answer against the item's conditions: the
// blocking issues Forbids decides, then the warnings.
func (d *Definition) conditions(it *Item, v Value, f Facts, block, warn func(*Item, string, ...any)) {
	c := it.Conditions
	if c == nil {
		return
	}
	for _, msg := range d.refusals(it, v, f) {
		block(it, "%s", msg)
	}
	if c.MinTurns > 0 && f.Turns > 0 {
		holds := f.Turns >= c.MinTurns
		switch {
		case v == NA && holds && c.NAException != "":
			warn(it, "NA although the item applies from %d turns and this conversation has %d; confirm that %s, or answer %s",
				c.MinTurns, f.Turns, c.NAException, orList(without(d.Allowed(it), NA)))
		case v != NA && !holds:
			warn(it, "%s although the item applies from %d turns and this conversation has %d, so the rubric expects NA; confirm or answer NA",
				v, c.MinTurns, f.Turns)
		}
	}
	if c.CrisisSignals {
		switch {
		case v == NA && f.Crisis == Present && c.NAException != "":
			warn(it, "NA although crisis signals are present; confirm that %s", c.NAException)
		case v == NA && f.Crisis == Signalled:
			// A word or a mark is a prompt to look, not a verdict: "I'm too
			// scared to commit suicide like he did" may carry no crisis
			// signal at all, and the rubric leaves that to the rater.
			warn(it, "NA although %s; NA says no crisis signals are present, so confirm that none are, or answer %s",
				f.signals(), orList(without(d.Allowed(it), NA)))
		case v != NA && f.Crisis == Absent:
			warn(it, "%s although the item applies only when crisis signals are present and none are recorded, so the rubric expects NA; confirm or answer NA", v)
		}
	}
}

// fires reports whether every clause of r holds, and describes the values
// that made it fire.
func (d *Definition) fires(r Rule, a Answers, f Facts) (string, bool) {
	var facts []string
	for _, cl := range r.When {
		switch {
		case cl.Fact == "crisis_signals":
			switch f.Crisis {
			case Present:
				facts = append(facts, "crisis signals are present")
			case Signalled:
				facts = append(facts, "crisis signals may be present, as "+f.signals()+",")
			default:
				return "", false
			}
		case cl.Fact == "turns":
			if f.Turns <= 0 || !compare(Value(strconv.Itoa(f.Turns)), cl.Op, cl.Value) {
				return "", false
			}
			facts = append(facts, fmt.Sprintf("the conversation has %d turns", f.Turns))
		default:
			v, ok := a[cl.Item]
			if !ok || v == Error || !compare(v, cl.Op, cl.Value) {
				return "", false
			}
			facts = append(facts, fmt.Sprintf("%s is %s", cl.Item, v))
		}
	}
	return strings.Join(facts, " and "), true
}

// compare applies op to v and w: eq and ne compare text, or numbers when
// both are numbers; the others compare numbers only and are false
// otherwise.
func compare(v Value, op string, w Value) bool {
	x, errX := strconv.ParseFloat(string(v), 64)
	y, errY := strconv.ParseFloat(string(w), 64)
	numeric := errX == nil && errY == nil
	switch op {
	case "eq":
		return v == w || numeric && x == y
	case "ne":
		return !(v == w || numeric && x == y)
	}
	if !numeric {
		return false
	}
	switch op {
	case "lt":
		return x < y
	case "le":
		return x <= y
	case "gt":
		return x > y
	case "ge":
		return x >= y
	}
	return false
}

func (d *Definition) itemKeys() string {
	keys := make([]string, len(d.Items))
	for i, it := range d.Items {
		keys[i] = it.Key
	}
	return strings.Join(keys, ", ")
}

// andList writes words as "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// orList writes values as "YES, NO or NA".
func orList(vs []Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func without(vs []Value, drop Value) []Value {
	out := make([]Value, 0, len(vs))
	for _, v := range vs {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

// lowerFirst lowers the first letter of a sentence to continue another one,
// leaving words such as "NA" or "CQ9" alone.
func lowerFirst(s string) string {
	if len(s) < 2 || s[1] < 'a' || s[1] > 'z' {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
