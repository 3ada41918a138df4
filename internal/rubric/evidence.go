package rubric

import (
	"fmt"
	"slices"
	"strconv"
)

// Evidence is, per item key, the turns a rater marked as where the item
// fails: turn numbers as the workspace shows them, from 1.
type Evidence map[string][]int

// EvidencePolicy is a project's setting for turn evidence.
type EvidencePolicy string

// The policies a project can set; the default is EvidenceOptional.
const (
	// EvidenceOff means no turns are marked; any given are refused.
	EvidenceOff EvidencePolicy = "off"
	// EvidenceOptional lets a rater mark turns on a failing answer.
	EvidenceOptional EvidencePolicy = "optional"
	// EvidenceRequired makes every failing answer name at least one turn.
	EvidenceRequired EvidencePolicy = "required"
)

// ParseEvidencePolicy reads a project's setting; empty is the default.
func ParseEvidencePolicy(s string) (EvidencePolicy, error) {
	switch p := EvidencePolicy(s); p {
	case "":
		return EvidenceOptional, nil
	case EvidenceOff, EvidenceOptional, EvidenceRequired:
		return p, nil
	}
	return "", fmt.Errorf("turn evidence %q is not a setting; choose off, optional or required", s)
}

// Fails reports whether answer v on item it is a failing answer, the only
// kind that may carry turn evidence: NO on a criterion, and a level of 2 or
// less on a Likert rubric, where 1 and 2 are the levels that say the reply
// falls short.
func (d *Definition) Fails(it *Item, v Value) bool {
	switch d.Kind {
	case Criteria:
		return v == No
	case Likert:
		n, err := strconv.Atoi(string(v))
		return err == nil && n <= 2
	}
	return false
}

// CanFail reports whether some answer allowed on item it fails (Fails):
// the rubric items on which turn evidence can be marked, and so the ones
// an agreement on evidence is reported for.
func (d *Definition) CanFail(it *Item) bool {
	for _, v := range d.Allowed(it) {
		if d.Fails(it, v) {
			return true
		}
	}
	return false
}

// ValidateEvidence checks the turns a rater (person or judge) marked
// against the answers they go with, given the dialogue's facts and the
// project's policy. Every issue blocks: evidence on an item the rubric
// does not have, on an answer that does not fail or when the project has
// evidence off; a turn outside 1..the dialogue's turn count (only the lower
// bound when the count is unknown); a turn named twice; and, where the
// project requires it, a failing answer without any turn. Form, API,
// labels import and the judge's parser all decide with this one function.
// The result is deterministic: unknown keys first, then the rubric's items
// in order.
func (d *Definition) ValidateEvidence(a Answers, e Evidence, f Facts, p EvidencePolicy) Issues {
	var out Issues
	block := func(key, msg string) {
		out = append(out, Issue{Item: key, Severity: Blocking, Message: msg})
	}
	var unknown []string
	for k, turns := range e {
		if _, ok := d.Item(k); !ok && len(turns) > 0 {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		block(k, fmt.Sprintf("turn evidence names %q, which is not an item of %s", k, d.Ref()))
	}
	for i := range d.Items {
		it := &d.Items[i]
		turns := e[it.Key]
		v := a[it.Key]
		fails := d.Fails(it, v)
		switch {
		case len(turns) > 0 && p == EvidenceOff:
			block(it.Key, it.label()+": this project does not take turn evidence; leave the turns empty")
			continue
		case len(turns) > 0 && !fails:
			block(it.Key, it.label()+": "+d.evidenceOnlyOn()+fmt.Sprintf(", and the answer is %s; leave the turns empty", describeValue(v)))
			continue
		case len(turns) == 0 && fails && p == EvidenceRequired:
			block(it.Key, it.label()+fmt.Sprintf(": this project requires the turn or turns where the item fails with answer %s; mark at least one turn", v))
			continue
		}
		seen := map[int]bool{}
		for _, t := range turns {
			switch {
			case t < 1:
				block(it.Key, it.label()+fmt.Sprintf(": turn %d does not exist; turns are numbered from 1", t))
			case f.Turns > 0 && t > f.Turns:
				block(it.Key, it.label()+fmt.Sprintf(": turn %d does not exist; this dialogue has %d turns", t, f.Turns))
			case seen[t]:
				block(it.Key, it.label()+fmt.Sprintf(": turn %d is named twice", t))
			}
			seen[t] = true
		}
	}
	return out
}

func (d *Definition) evidenceOnlyOn() string {
	if d.Kind == Likert {
		return "turn evidence goes only with a level of 2 or less"
	}
	if d.Kind == Criteria {
		return "turn evidence goes only with NO"
	}
	return "this rubric takes no turn evidence"
}

func describeValue(v Value) string {
	if v == "" {
		return "missing"
	}
	return string(v)
}
