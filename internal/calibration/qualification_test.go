package calibration

import "testing"

func TestQualification(t *testing.T) {
	five := Policy{Qualify: 5, PassPercent: 80}
	tests := []struct {
		name   string
		policy Policy
		a      Attempt
		want   Qualification
	}{
		{"no qualification asked", Policy{PassPercent: 80}, Attempt{Number: 1}, QualificationNotRequired},
		{"no qualification asked, nothing left", Policy{PassPercent: 80}, Attempt{Number: 2, Left: 0}, QualificationNotRequired},
		{"new person", five, Attempt{Number: 1, Left: 5}, QualificationInProgress},
		{"passed exactly the mark", five, Attempt{Number: 1, Answered: 5, Passed: 5}, QualificationPassed},
		{"passed more than the mark", five, Attempt{Number: 1, Answered: 6, Passed: 6, Left: 2}, QualificationPassed},
		{"holding the last item", five, Attempt{Number: 1, Answered: 4, Passed: 4, Held: 1}, QualificationInProgress},
		{"items left, too few passed", five, Attempt{Number: 1, Answered: 4, Passed: 1, Left: 1}, QualificationInProgress},
		{"failed every item", five, Attempt{Number: 1, Answered: 5}, QualificationFailed},
		{"four of five", five, Attempt{Number: 1, Answered: 5, Passed: 4}, QualificationFailed},
		{"no calibration item yet", five, Attempt{Number: 1}, QualificationInProgress},
		{"fresh attempt after failing", five, Attempt{Number: 2, Left: 5}, QualificationInProgress},
		{"set too small for the mark", Policy{Qualify: 10, PassPercent: 80}, Attempt{Number: 1, Answered: 8, Passed: 5}, QualificationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Qualification(tt.a); got != tt.want {
				t.Fatalf("Qualification(%+v) = %q, want %q", tt.a, got, tt.want)
			}
			// Qualifying and Qualification never disagree on who is served
			// real items.
			qualifying := tt.policy.Qualifying(Standing{Passed: tt.a.Passed})
			realItems := tt.policy.Qualification(tt.a) == QualificationPassed || tt.policy.Qualification(tt.a) == QualificationNotRequired
			if qualifying == realItems {
				t.Fatalf("Qualifying = %v but Qualification = %q", qualifying, tt.policy.Qualification(tt.a))
			}
		})
	}
}
