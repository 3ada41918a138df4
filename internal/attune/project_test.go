package attune

import (
	"errors"
	"strings"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

func TestProjectLeadRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		global    Role
		stored    MemberRole
		effective MemberRole
		mayAdd    bool
	}{
		{RoleAdmin, MemberLead, MemberLead, true},
		{RoleLead, MemberLead, MemberLead, true},
		{RoleAnnotator, MemberLead, MemberAnnotator, false},
		{Role("retired"), MemberLead, MemberAnnotator, false},
		{RoleAdmin, MemberAnnotator, MemberAnnotator, true},
		{RoleLead, MemberAnnotator, MemberAnnotator, true},
		{RoleAnnotator, MemberAnnotator, MemberAnnotator, true},
	} {
		if got := EffectiveMemberRole(tc.global, tc.stored); got != tc.effective {
			t.Errorf("EffectiveMemberRole(%s, %s) = %s, want %s", tc.global, tc.stored, got, tc.effective)
		}
		err := CheckMembership("x@example.org", tc.global, tc.stored)
		if (err == nil) != tc.mayAdd {
			t.Errorf("CheckMembership(%s, %s) = %v, want allowed %v", tc.global, tc.stored, err, tc.mayAdd)
		}
		if err != nil && (!errors.Is(err, ErrConflict) || PublicMessage(err) == "") {
			t.Errorf("CheckMembership(%s, %s) = %v, want a conflict with a message to show", tc.global, tc.stored, err)
		}
	}
}

func TestProjectEpsilon(t *testing.T) {
	t.Parallel()
	base := Project{Name: "p", Overlap: 2, Lease: DefaultLease, SystemKey: DefaultSystemKey}
	for _, tc := range []struct {
		annotators, custom string
		want               float64
		readable, valid    bool
	}{
		{"experts", "", 0.2, true, true},
		{"trained", "0.9", 0.15, true, true}, // a pool's ε wins over a stale custom field
		{"crowd", "", 0.1, true, true},
		{"", "", DefaultEpsilon, true, true},
		{"custom", "0.3", 0.3, true, true},
		{"", " 0.05 ", 0.05, true, true},
		{"custom", "0", 0, true, false},
		{"custom", "1", 1, true, false},
		{"custom", "-0.1", -0.1, true, false},
		{"custom", "NaN", 0, true, false},
		{"custom", "", 0, false, false},
		{"custom", "x", 0, false, false},
		{"students", "", 0, false, false},
	} {
		e, ok, msg := ReadEpsilon(tc.annotators, tc.custom)
		if ok != tc.readable || (ok && msg != "") || (!ok && msg == "") {
			t.Errorf("ReadEpsilon(%q, %q) = %v, %v, %q", tc.annotators, tc.custom, e, ok, msg)
			continue
		}
		if !ok {
			continue
		}
		if e != tc.want && tc.custom != "NaN" {
			t.Errorf("ReadEpsilon(%q, %q) = %v, want %v", tc.annotators, tc.custom, e, tc.want)
		}
		p := base
		p.Epsilon = e
		var v *ValidationError
		err := p.Validate()
		if tc.valid != (err == nil) || (err != nil && (!errors.As(err, &v) || v.Fields["epsilon"] == "" || len(v.Fields) != 1)) {
			t.Errorf("Validate with ε %v: %v, want valid %v", e, err, tc.valid)
		}
	}
	for e, want := range map[float64]string{0.2: "experts", 0.15: "trained", 0.1: "crowd", 0.3: AnnotatorsCustom} {
		if got := PoolOfEpsilon(e); got.Key != want || got.Epsilon != e {
			t.Errorf("PoolOfEpsilon(%v) = %+v, want %s", e, got, want)
		}
	}
}

// TestNamesRefuseDirectionControls: a name with a bidirectional override
// (U+202E reverses the text after it) or isolate is refused with the code
// point named; other scripts, right-to-left ones too, are names like any.
func TestNamesRefuseDirectionControls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want string // part of the message; "" for none
	}{
		{"Wellbeing pilot", ""},
		{"מחקר רווחה", ""}, // Hebrew reads right to left by itself
		{"pilot \u202Etxt.exe", "U+202E"},
		{"\u2066isolated\u2069", "U+2066"},
		{"a\u202Ab", "U+202A"},
	} {
		got := NameProblem(tc.name)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("NameProblem(%q) = %q, want %q", tc.name, got, tc.want)
		}
		p := Project{Name: tc.name, Overlap: 2, Lease: DefaultLease, Epsilon: DefaultEpsilon, SystemKey: DefaultSystemKey}
		err := p.Validate()
		if (err != nil) != (tc.want != "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("project %q: Validate = %v", tc.name, err)
		}
	}
}

// TestProjectSystemKeyRule: Validate takes a system key of 1 to
// MaxSystemKey characters (counted as characters, not bytes) and refuses
// an empty, blank or longer one under system_key alone.
func TestProjectSystemKeyRule(t *testing.T) {
	base := Project{Name: "p", Overlap: 2, Lease: DefaultLease, Epsilon: DefaultEpsilon}
	for key, valid := range map[string]bool{
		"system": true, "arm": true, strings.Repeat("é", MaxSystemKey): true,
		"": false, "   ": false, strings.Repeat("k", MaxSystemKey+1): false, "a\x00b": false,
	} {
		p := base
		p.SystemKey = key
		err := p.Validate()
		var v *ValidationError
		if valid != (err == nil) || (err != nil && (!errors.As(err, &v) || v.Fields["system_key"] == "" || len(v.Fields) != 1)) {
			t.Errorf("Validate with system key %q: %v, want valid %v", key, err, valid)
		}
	}
	if got := (&Project{}).SystemKeyOr(""); got != DefaultSystemKey {
		t.Errorf("the key of a project value without one: %q", got)
	}
	if got := (&Project{SystemKey: "arm"}).SystemKeyOr(""); got != "arm" {
		t.Errorf("the project's key: %q", got)
	}
	if got := (&Project{SystemKey: "arm"}).SystemKeyOr("model"); got != "model" {
		t.Errorf("the key asked for: %q", got)
	}
}

// TestProjectEvidence: a project value without a turn evidence setting
// reads the default, one with a setting reads it, and an unknown one is
// read as it is (Validate refuses it) rather than as the default.
func TestProjectEvidence(t *testing.T) {
	for stored, want := range map[rubric.EvidencePolicy]rubric.EvidencePolicy{
		"": rubric.EvidenceOptional, rubric.EvidenceOff: rubric.EvidenceOff,
		rubric.EvidenceRequired: rubric.EvidenceRequired, "sometimes": "sometimes",
	} {
		if got := (&Project{EvidencePolicy: stored}).Evidence(); got != want {
			t.Errorf("Evidence of %q: %q, want %q", stored, got, want)
		}
	}
	if ProjectFieldMessage("evidence_policy") != msgEvidencePolicy {
		t.Errorf("the message for evidence_policy: %q", ProjectFieldMessage("evidence_policy"))
	}
}
