package attune

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/attune/attune/internal/rubric"
)

// Project pairs a dataset with one rubric version for its whole life.
type Project struct {
	ID              int64
	Name            string
	Instructions    string // Markdown, rendered safely
	RubricVersionID int64
	RubricRef       string // key@version
	Overlap         int    // how many annotators label each item, 1–10
	Lease           time.Duration
	// Epsilon is the alt-test's ε, chosen by who the annotators are
	// (AnnotatorPools); the report uses it unless asked for another.
	Epsilon float64
	// EvidencePolicy says whether a failing answer may or must name the
	// turns where it fails (rubric.Definition.ValidateEvidence); empty is
	// the default, rubric.EvidenceOptional.
	EvidencePolicy rubric.EvidencePolicy
	// SystemKey is the item meta key that names the dialogue system that
	// produced an item's assistant turns (DefaultSystemKey unless set);
	// estimates, draws and failure maps read it when a query names none.
	SystemKey string
	Status    ProjectStatus
	CreatedAt time.Time
}

// MemberRole is what a person does in one project.
type MemberRole string

// The member roles.
const (
	MemberLead      MemberRole = "lead"
	MemberAnnotator MemberRole = "annotator"
)

// LeadsProjects reports whether an account whose global role is r may lead
// projects: admins and leads may; annotators may not, whatever their
// memberships say (see EffectiveMemberRole and CheckMembership).
func (r Role) LeadsProjects() bool { return r == RoleAdmin || r == RoleLead }

// EffectiveMemberRole is what a member may do in a project, from the role
// stored for them there and their account's global role now: the project
// role lead counts only while the account leads projects (LeadsProjects);
// otherwise the member acts as an annotator of the project. Every check of
// a member's standing goes through it, so a demotion takes effect at the
// member's next request, whatever rows are stored.
func EffectiveMemberRole(global Role, stored MemberRole) MemberRole {
	if stored == MemberLead && !global.LeadsProjects() {
		return MemberAnnotator
	}
	return stored
}

// CheckMembership returns an ErrConflict error, with a message fit to show,
// when the account (email, global role) may not be given the project role:
// only accounts that lead projects (LeadsProjects) can be made project
// leads.
func CheckMembership(email string, global Role, role MemberRole) error {
	if role == MemberLead && !global.LeadsProjects() {
		return Conflict(fmt.Sprintf("%s is an %s: only accounts whose role is lead or admin can lead a project; add them as an annotator, or ask an admin to make them a lead first", email, global))
	}
	return nil
}

// Member is a person on a project.
type Member struct {
	UserID  int64
	Email   string
	Name    string
	Role    MemberRole
	AddedAt time.Time
	// Paused says a lead paused this annotator's queue, for PausedWhy.
	Paused    bool
	PausedWhy string
}

// Message is one message of a dialogue.
type Message struct {
	Role    string `json:"role"` // user, assistant or system
	Content string `json:"content"`
}

// Item is one dialogue to label.
type Item struct {
	ID        int64
	ProjectID int64
	SourceID  string
	Kind      string // "reply" or "conversation"
	Messages  []Message
	Meta      json.RawMessage
	Turns     int
	SHA256    string
	// Sensitive is a lead's mark that the dialogue mentions suicide or
	// self-harm, beside what the word list finds.
	Sensitive bool
}

// Assignment is an item handed to an annotator until they submit, skip,
// or the lease runs out.
type Assignment struct {
	ID             int64
	ProjectID      int64
	ItemID         int64
	RaterID        int64
	State          string // active, submitted, skipped, expired
	AssignedAt     time.Time
	LeaseExpiresAt time.Time
	// Calibration marks a calibration item: its answers are held against
	// gold and kept apart from labels. Never shown to the annotator.
	Calibration bool
}

// Flags are the reasons an annotator can give when flagging an item while
// skipping it (see ValidFlag).
var Flags = []string{"broken", "off-topic", "distressing", "other"}

// Progress is how far a project has come, over the items in the pool.
type Progress struct {
	Items      int
	Overlap    int
	ByLabels   []int // ByLabels[n] = items with n human labels, n = 0..Overlap
	Complete   int
	Active     int // items currently held by someone
	Pulled     int // items out of the pool, left out of the counts above
	LastHour   int // answer sets submitted in the last hour
	Annotators []AnnotatorProgress
}

// AnnotatorProgress is one annotator's share of a project.
type AnnotatorProgress struct {
	UserID       int64
	Email        string
	Name         string
	Submitted    int
	Skipped      int
	LastHour     int
	MedianActive time.Duration // median active time per submitted item
}

// Evidence is the project's turn evidence setting, the default
// (rubric.EvidenceOptional) for a project value made without one.
func (p *Project) Evidence() rubric.EvidencePolicy {
	if policy, err := rubric.ParseEvidencePolicy(string(p.EvidencePolicy)); err == nil {
		return policy
	}
	return p.EvidencePolicy
}

// SystemKeyOr is the system key a query reads: key when it names one,
// otherwise the project's setting (DefaultSystemKey for a project value
// made without one).
func (p *Project) SystemKeyOr(key string) string {
	switch {
	case key != "":
		return key
	case p.SystemKey != "":
		return p.SystemKey
	}
	return DefaultSystemKey
}
