package probe

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
)

// The project settings' names of the thresholds: the fields of the project
// form, the project API and the settings corpus, and the fields
// Thresholds.Validate names. Each is "probe_" and the threshold's JSON name.
const (
	FieldRetestChange = "probe_retest_change"
	FieldPerturbMove  = "probe_perturb_move"
	FieldMinItems     = "probe_min_items"
	FieldLengthSlope  = "probe_length_slope"
)

// ThresholdFields are the thresholds' setting names in the order the
// forms show them.
var ThresholdFields = []string{FieldRetestChange, FieldPerturbMove, FieldMinItems, FieldLengthSlope}

// MaxLengthSlope is the largest length threshold: a difference of slopes
// beyond ten points per doubling of the reply passes any judge.
const MaxLengthSlope = 10

// The messages of the thresholds, the same for a value out of range and one
// that is not a number, on every path.
var thresholdMessages = map[string]string{
	FieldRetestChange: "Enter the retest threshold as a share from 0 up to (not including) 1, such as 0.1: the most items whose answer may change across the asks.",
	FieldPerturbMove:  "Enter the perturbation threshold as a share from 0 up to (not including) 1, such as 0.1: the most items whose answer may move under one rewrite.",
	FieldMinItems:     "Enter the fewest items a probe judges on as a whole number of at least 2.",
	FieldLengthSlope:  fmt.Sprintf("Enter the length threshold as a difference of slopes from 0 to %d per doubling of the reply's length, such as 0.1.", MaxLengthSlope),
}

// ThresholdMessage is the message of a threshold's field (a name of
// ThresholdFields) that is out of range or cannot be read; "" for any other
// field.
func ThresholdMessage(field string) string { return thresholdMessages[field] }

// Validate says which thresholds are out of range: nil, or an
// *attune.ValidationError with ThresholdMessage for each bad field of
// ThresholdFields. Every path that stores thresholds (the store) calls it.
func (t Thresholds) Validate() error {
	errs := map[string]string{}
	if !(t.RetestChange >= 0 && t.RetestChange < 1) {
		errs[FieldRetestChange] = thresholdMessages[FieldRetestChange]
	}
	if !(t.PerturbMove >= 0 && t.PerturbMove < 1) {
		errs[FieldPerturbMove] = thresholdMessages[FieldPerturbMove]
	}
	if t.MinItems < 2 {
		errs[FieldMinItems] = thresholdMessages[FieldMinItems]
	}
	if !(t.LengthSlope >= 0 && t.LengthSlope <= MaxLengthSlope) {
		errs[FieldLengthSlope] = thresholdMessages[FieldLengthSlope]
	}
	if len(errs) > 0 {
		return &attune.ValidationError{Fields: errs}
	}
	return nil
}

// Setting is the threshold of a field of ThresholdFields as the forms
// show it.
func (t Thresholds) Setting(field string) string {
	switch field {
	case FieldRetestChange:
		return strconv.FormatFloat(t.RetestChange, 'f', -1, 64)
	case FieldPerturbMove:
		return strconv.FormatFloat(t.PerturbMove, 'f', -1, 64)
	case FieldMinItems:
		return strconv.Itoa(t.MinItems)
	case FieldLengthSlope:
		return strconv.FormatFloat(t.LengthSlope, 'f', -1, 64)
	}
	return ""
}

// ReadThresholds lays the thresholds typed (by setting name; a field left
// out keeps t's) over t. It returns what they come to and, for each typed
// field that is not a number (an empty one included), ThresholdMessage; the
// range is Validate's to check.
func ReadThresholds(t Thresholds, typed map[string]string) (Thresholds, map[string]string) {
	unread := map[string]string{}
	for _, f := range ThresholdFields {
		s, ok := typed[f]
		if !ok {
			continue
		}
		s = strings.TrimSpace(s)
		if f == FieldMinItems {
			n, err := strconv.Atoi(s)
			if err != nil {
				unread[f] = thresholdMessages[f]
				continue
			}
			t.MinItems = n
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			unread[f] = thresholdMessages[f]
			continue
		}
		switch f {
		case FieldRetestChange:
			t.RetestChange = x
		case FieldPerturbMove:
			t.PerturbMove = x
		case FieldLengthSlope:
			t.LengthSlope = x
		}
	}
	return t, unread
}
