package calibration

// Qualification is where a person stands with a project's qualification
// in their current attempt.
type Qualification string

// The qualifications, as the people page, the API and the CLI show them.
const (
	// QualificationNotRequired: the project asks for no qualification.
	QualificationNotRequired Qualification = "not required"
	// QualificationPassed: the person passed as many calibration items as
	// the project asks for, and is served real items.
	QualificationPassed Qualification = "passed"
	// QualificationInProgress: the person has still to pass some, and a
	// calibration item is held by them or left to serve them (or none was
	// ever served in this attempt: they wait for the set, not failed it).
	QualificationInProgress Qualification = "in progress"
	// QualificationFailed: the person has still to pass some and no
	// calibration item is left for them in this attempt: only a lead's
	// re-qualification (a new attempt) or more calibration items let them
	// go on.
	QualificationFailed Qualification = "failed"
)

// Attempt is what a person did in their current attempt at qualifying:
// the calibration answers of earlier attempts are kept for the record but
// count for nothing here.
type Attempt struct {
	// Number counts the person's attempts, from 1.
	Number int
	// Answered and Passed are how many calibration items they answered,
	// and passed, in this attempt.
	Answered, Passed int
	// Held is how many calibration items they hold unanswered (0 or 1).
	Held int
	// Left is how many of the project's calibration items were not yet
	// served to them in this attempt.
	Left int
}

// Qualification says where a person stands with the policy's
// qualification in their current attempt. The claim of the work queue
// (internal/store) serves real items only to a person who is not
// Qualifying, and serves calibration items while one is Left; a store
// test holds the claim to this rule.
func (p Policy) Qualification(a Attempt) Qualification {
	switch {
	case p.Qualify <= 0:
		return QualificationNotRequired
	case a.Passed >= p.Qualify:
		return QualificationPassed
	case a.Held > 0 || a.Left > 0 || a.Answered == 0:
		return QualificationInProgress
	default:
		return QualificationFailed
	}
}

// NotQualified is what a person whose qualification failed reads when
// they ask for work (a phrase: the page makes it a sentence).
const NotQualified = "you did not qualify on this project's practice items; a lead can let you try again"
