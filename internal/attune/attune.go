// Package attune holds the nouns every other package shares — users, roles,
// projects, raters — and the kinds of error the store and the web layer agree
// on. It imports only the standard library.
package attune

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Role is what an account may do across the whole product.
type Role string

// The roles, from most to least powerful.
const (
	RoleAdmin     Role = "admin"
	RoleLead      Role = "lead"
	RoleAnnotator Role = "annotator"
)

// Roles lists every role, most powerful first.
var Roles = []Role{RoleAdmin, RoleLead, RoleAnnotator}

// ParseRole returns the role named s, or an ErrInvalid error naming the roles
// that exist.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == strings.ToLower(strings.TrimSpace(s)) {
			return r, nil
		}
	}
	return "", Invalid("role", fmt.Sprintf("unknown role %q: use admin, lead or annotator", s))
}

// AtLeast reports whether r grants everything min grants.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() }

func (r Role) rank() int {
	switch r {
	case RoleAdmin:
		return 3
	case RoleLead:
		return 2
	case RoleAnnotator:
		return 1
	}
	return 0
}

// User is an account.
type User struct {
	ID           int64
	Email        string
	Name         string
	Role         Role
	PasswordHash string
	DisabledAt   *time.Time
	CreatedAt    time.Time
	// SessionEpoch moves on whenever the account's password changes: a
	// browser session signed in under an earlier epoch has ended.
	SessionEpoch int64
	// RubricExpanded: the annotate page shows every rubric criterion in
	// full, not only the one in hand (the user's own preference).
	RubricExpanded bool
}

// Disabled reports whether the account may no longer sign in.
func (u *User) Disabled() bool { return u.DisabledAt != nil }

// DisplayName is the name to show for the user: the name, or the email
// when no name was given.
func (u *User) DisplayName() string {
	if strings.TrimSpace(u.Name) != "" {
		return u.Name
	}
	return u.Email
}

// NormalizeEmail returns the canonical form of an email address for storage
// and look-up, or an ErrInvalid error when it cannot be one.
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	if p := TextProblem(e); p != "" {
		return "", Invalid("email", "the address "+p)
	}
	at := strings.LastIndexByte(e, '@')
	if at < 1 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n<>\"") || len(e) > 254 {
		return "", Invalid("email", fmt.Sprintf("%q is not an email address", s))
	}
	return e, nil
}

// ProjectStatus is where a project stands in its life.
type ProjectStatus string

// The project statuses.
const (
	ProjectActive   ProjectStatus = "active"
	ProjectPaused   ProjectStatus = "paused"
	ProjectArchived ProjectStatus = "archived"
)

// ProjectSummary is a project as a list shows it.
type ProjectSummary struct {
	ID         int64
	Name       string
	RubricRef  string // key@version
	Status     ProjectStatus
	Overlap    int
	Items      int
	Complete   int // items with as many labels as the overlap asks for
	MemberRole string
	SystemKey  string // the item meta key that names an item's system
}

// AuditEvent is one line of the append-only audit log.
type AuditEvent struct {
	ActorID   *int64
	Action    string // dotted, e.g. "user.create"
	ProjectID *int64
	Subject   string
	Details   map[string]string
}

// The kinds of error every layer agrees on. Wrap them (with %w or the
// helpers below) and test with errors.Is.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrInvalid      = errors.New("invalid")
	ErrForbidden    = errors.New("forbidden")
	ErrUnauthorized = errors.New("unauthorized")
)

// ValidationError is a bad input: a message per field, fit to show to the
// person who typed it. It matches ErrInvalid.
type ValidationError struct {
	Fields map[string]string
}

// Invalid returns a ValidationError for one field.
func Invalid(field, message string) *ValidationError {
	return &ValidationError{Fields: map[string]string{field: message}}
}

// Error lists the field messages in a stable order.
func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Conflict returns an error matching ErrConflict with a message fit to show.
func Conflict(message string) error { return &kindError{kind: ErrConflict, message: message} }

// Forbidden returns an error matching ErrForbidden with a message fit to show.
func Forbidden(message string) error { return &kindError{kind: ErrForbidden, message: message} }

// NotFound returns an error matching ErrNotFound with a message fit to show.
func NotFound(message string) error { return &kindError{kind: ErrNotFound, message: message} }

type kindError struct {
	kind    error
	message string
}

func (e *kindError) Error() string        { return e.message }
func (e *kindError) Is(target error) bool { return target == e.kind }

// PublicMessage returns the message of err that is safe to show a user, or
// "" when err carries none (an internal error, whose text must not leak).
func PublicMessage(err error) string {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Error()
	}
	var le *LineErrors
	if errors.As(err, &le) {
		return le.Error()
	}
	var k *kindError
	if errors.As(err, &k) {
		return k.message
	}
	return ""
}

// ErrNoWork is returned when an annotator asks for the next item and the
// project has none left for them.
var ErrNoWork = errors.New("no item left to label")

// LineError is a problem at one line of an input file.
type LineError struct {
	Line    int
	Field   string // where on the line, e.g. "messages[2].role"; may be empty
	Message string
}

func (e LineError) String() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Message)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Message)
}

// LineErrors are the problems found in a file, in line order, with how
// many more were found than listed. It matches ErrInvalid.
type LineErrors struct {
	Errors []LineError
	More   int
}

func (e *LineErrors) Error() string {
	var b strings.Builder
	for i, le := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(le.String())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n… and %d more", e.More)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *LineErrors) Is(target error) bool { return target == ErrInvalid }
