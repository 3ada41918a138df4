package attune

import (
	"errors"
	"testing"
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
