package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

const userColumns = `id, email, name, role, password_hash, disabled_at, created_at, session_epoch, rubric_expanded`

// scanUser reads userColumns, and then into more the columns a query
// selects after them.
func scanUser(row pgx.Row, more ...any) (*attune.User, error) {
	var u attune.User
	err := row.Scan(append([]any{&u.ID, &u.Email, &u.Name, &u.Role, &u.PasswordHash, &u.DisabledAt, &u.CreatedAt, &u.SessionEpoch, &u.RubricExpanded}, more...)...)
	return &u, err
}

// NewUser is what CreateUser needs. PasswordHash is already hashed.
type NewUser struct {
	Email        string // normalised with attune.NormalizeEmail
	Name         string
	Role         attune.Role
	PasswordHash string
}

// CreateUser stores a new account and its rater (every person is a rater),
// and records the creation in the audit log. An email already in use is an
// attune.ErrConflict.
func (db *DB) CreateUser(ctx context.Context, actorID *int64, nu NewUser) (*attune.User, error) {
	// Every path (the admin's form, the command line) arrives here: text
	// the database cannot hold is refused by name, not left to fail.
	// A name is shown to others, so it is held to what a project's is.
	if err := attune.CheckText("email", nu.Email); err != nil {
		return nil, err
	}
	if p := attune.NameProblem(nu.Name); p != "" {
		return nil, attune.Invalid("name", p)
	}
	var u *attune.User
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `
			INSERT INTO users (email, name, role, password_hash) VALUES ($1, $2, $3, $4)
			RETURNING `+userColumns, nu.Email, nu.Name, nu.Role, nu.PasswordHash))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO raters (kind, user_id, name) VALUES ('human', $1, $2)`,
			u.ID, u.DisplayName()); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "user.create", Subject: u.Email,
			Details: map[string]string{"role": string(u.Role)}})
	})
	if err != nil {
		return nil, mapErr(err, "create user", fmt.Sprintf("an account for %s already exists", nu.Email))
	}
	return u, nil
}

// EnsureAdmin creates the given admin account unless an enabled admin
// exists. It reports whether it created one. Replicas starting together
// are serialised by an advisory lock, so at most one admin is created.
func (db *DB) EnsureAdmin(ctx context.Context, nu NewUser) (created bool, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.ensure_admin'))`); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE role = 'admin' AND disabled_at IS NULL)`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO users (email, name, role, password_hash) VALUES ($1, $2, 'admin', $3)
			RETURNING id`, nu.Email, nu.Name, nu.PasswordHash).Scan(&id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO raters (kind, user_id, name) VALUES ('human', $1, $2)`, id, nu.Email); err != nil {
			return err
		}
		created = true
		return audit(ctx, tx, attune.AuditEvent{Action: "user.create", Subject: nu.Email,
			Details: map[string]string{"role": "admin", "reason": "first start"}})
	})
	if err != nil {
		return false, mapErr(err, "ensure admin", fmt.Sprintf("an account for %s already exists but is not an enabled admin", nu.Email))
	}
	return created, nil
}

// FindUserByID returns the account with the given id.
func (db *DB) FindUserByID(ctx context.Context, id int64) (*attune.User, error) {
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	return u, mapErr(err, "find user", "")
}

// SetRubricExpanded stores whether the annotate page shows user userID
// every rubric criterion in full (on) or the compact rubric (off). It is
// the user's own preference: it changes nothing of anyone else's.
func (db *DB) SetRubricExpanded(ctx context.Context, userID int64, on bool) error {
	tag, err := db.pool.Exec(ctx, `UPDATE users SET rubric_expanded = $2 WHERE id = $1`, userID, on)
	if err != nil {
		return mapErr(err, "set rubric preference", "")
	}
	if tag.RowsAffected() == 0 {
		return attune.NotFound("set rubric preference: user not found")
	}
	return nil
}

// FindUserByEmail returns the account with the given normalised email.
func (db *DB) FindUserByEmail(ctx context.Context, email string) (*attune.User, error) {
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email))
	return u, mapErr(err, "find user", "")
}

// ListUsers returns every account, by email.
func (db *DB) ListUsers(ctx context.Context) ([]*attune.User, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY email`)
	if err != nil {
		return nil, mapErr(err, "list users", "")
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.User, error) { return scanUser(r) })
	return users, mapErr(err, "list users", "")
}

// SetUserRole changes an account's role. Demoting the last enabled admin
// is an attune.ErrConflict: someone must always be able to manage accounts.
// A role that does not lead projects (attune.Role.LeadsProjects) turns the
// account's project-lead memberships into annotator memberships in the same
// transaction, so that project pages say what the account may do; it
// returns how many projects it no longer leads. (Access checks read the
// global role through attune.EffectiveMemberRole anyway, so lead rights end
// at the account's next request either way.)
func (db *DB) SetUserRole(ctx context.Context, actorID *int64, userID int64, role attune.Role) (leadsEnded int, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		if u.Role == role {
			return nil
		}
		if u.Role == attune.RoleAdmin && !u.Disabled() {
			if err := keepOneAdmin(ctx, tx, userID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET role = $2, updated_at = now() WHERE id = $1`, userID, role); err != nil {
			return err
		}
		details := map[string]string{"from": string(u.Role), "to": string(role)}
		if !role.LeadsProjects() {
			rows, err := tx.Query(ctx, `UPDATE project_members SET role = 'annotator' WHERE user_id = $1 AND role = 'lead' RETURNING project_id`, userID)
			if err != nil {
				return err
			}
			ended, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			for _, pid := range ended {
				if err := audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "project.demote_member", ProjectID: &pid, Subject: u.Email,
					Details: map[string]string{"role": string(attune.MemberAnnotator), "why": "account role changed to " + string(role)}}); err != nil {
					return err
				}
			}
			leadsEnded = len(ended)
			details["projects_no_longer_led"] = fmt.Sprint(leadsEnded)
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "user.set_role", Subject: u.Email, Details: details})
	})
	return leadsEnded, mapErr(err, "set role", "")
}

// SetUserDisabled disables or re-enables an account. A disabled account
// cannot sign in and its sessions stop working at their next request.
// Disabling the last enabled admin is an attune.ErrConflict.
func (db *DB) SetUserDisabled(ctx context.Context, actorID *int64, userID int64, disabled bool) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		if u.Disabled() == disabled {
			return nil
		}
		if disabled && u.Role == attune.RoleAdmin {
			if err := keepOneAdmin(ctx, tx, userID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET disabled_at = CASE WHEN $2 THEN now() END, updated_at = now() WHERE id = $1`,
			userID, disabled); err != nil {
			return err
		}
		action := "user.enable"
		if disabled {
			action = "user.disable"
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: action, Subject: u.Email})
	})
	return mapErr(err, "disable user", "")
}

// PasswordChange is a new password for an account and what else changes
// with it. Every change ends the account's sessions (but one, see
// SetUserPassword); the rest is the caller's choice, shown to whoever made
// the change.
type PasswordChange struct {
	Hash string // the new password, hashed
	// RevokeTokens revokes every active API token of the account.
	RevokeTokens bool
}

// PasswordChanged reports what a password change did.
type PasswordChanged struct {
	// SessionEpoch is the account's new session epoch: every session
	// signed in under an earlier one has ended.
	SessionEpoch int64
	// TokensRevoked counts the API tokens revoked; TokensKept, the active
	// ones that still work.
	TokensRevoked, TokensKept int
	// LockoutCleared counts the failed sign-ins forgiven.
	LockoutCleared int
}

// SetUserPassword replaces an account's password hash and, in the same
// transaction, moves the account's session epoch on, so that every session
// of the account ends at its next request (a caller that keeps its own
// session stores the returned epoch in it). It forgives the failed
// sign-ins counted against the account's email, so that the new password
// works at once, revokes API tokens as c asks, and records all of it in the
// audit log.
func (db *DB) SetUserPassword(ctx context.Context, actorID *int64, userID int64, c PasswordChange) (PasswordChanged, error) {
	var done PasswordChanged
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE users SET password_hash = $2, session_epoch = session_epoch + 1, updated_at = now()
			WHERE id = $1 RETURNING session_epoch`, userID, c.Hash).Scan(&done.SessionEpoch); err != nil {
			return err
		}
		// Guesses at the old password say nothing about the new one.
		if done.LockoutCleared, err = clearFailures(ctx, tx, u.Email); err != nil {
			return err
		}
		if c.RevokeTokens {
			tag, err := tx.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, userID)
			if err != nil {
				return err
			}
			done.TokensRevoked = int(tag.RowsAffected())
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL`, userID).Scan(&done.TokensKept); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "user.set_password", Subject: u.Email,
			Details: map[string]string{
				"sessions_ended":  "all",
				"lockout_cleared": fmt.Sprint(done.LockoutCleared),
				"tokens_revoked":  fmt.Sprint(done.TokensRevoked),
				"tokens_kept":     fmt.Sprint(done.TokensKept),
			}})
	})
	return done, mapErr(err, "set password", "")
}

func lockUser(ctx context.Context, tx pgx.Tx, id int64) (*attune.User, error) {
	return scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1 FOR UPDATE`, id))
}

// keepOneAdmin refuses a change that would leave no enabled admin besides
// userID. Admin rows are locked so that two concurrent demotions cannot
// both pass the check.
func keepOneAdmin(ctx context.Context, tx pgx.Tx, userID int64) error {
	rows, err := tx.Query(ctx, `SELECT id FROM users WHERE role = 'admin' AND disabled_at IS NULL AND id <> $1 FOR UPDATE`, userID)
	if err != nil {
		return err
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(others) == 0 {
		return attune.Conflict("this is the last enabled admin: make another account admin first")
	}
	return nil
}

// audit appends an event to the audit log within tx.
func audit(ctx context.Context, tx pgx.Tx, e attune.AuditEvent) error {
	details := e.Details
	if details == nil {
		details = map[string]string{}
	}
	b, err := json.Marshal(details)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO audit_events (actor_id, action, project_id, subject, details) VALUES ($1, $2, $3, $4, $5)`,
		e.ActorID, e.Action, e.ProjectID, e.Subject, b)
	return err
}

// SignInLimits bound the failed sign-ins counted over the last Window.
//
// Failures lock an email (an account's, or one no account has, so that a
// lock tells nothing about which emails exist): PerAccount from anywhere,
// or PerAddressAccount from one client address, which then locks the email
// at that address only. PerAddress counts failures from one address at any
// email; reaching it locks nothing, it only marks the address as one whose
// failures are to be slowed (SignInStart.AddressSlowed): behind a shared
// proxy one address is everyone, and a flood of made-up emails must not
// keep anyone with the right password out.
type SignInLimits struct {
	Window            time.Duration
	PerAccount        int
	PerAddressAccount int
	PerAddress        int
}

// pendingFor is how long an attempt under way holds its place in the
// limits: longer than any password check waits for its turn, so that a
// row left by a process that died stops counting.
const pendingFor = 5 * time.Minute

// SignInVerdict is StartSignIn's decision.
type SignInVerdict int

const (
	// SignInAllowed: the password may be checked; the attempt is recorded
	// as under way and must be finished with SignInFailed, SignInSucceeded
	// or SignInAbandoned.
	SignInAllowed SignInVerdict = iota
	// SignInLocked: the email's failures from anywhere reached PerAccount.
	SignInLocked
	// SignInLockedHere: the email's failures from this address reached
	// PerAddressAccount.
	SignInLockedHere
	// SignInBusy: failures and checks under way together reach a limit,
	// failures alone do not. Nothing is wrong yet: the checks under way
	// may all be right passwords, so this is "busy, try again", not a lock.
	SignInBusy
)

// SignInStart is what StartSignIn decided and recorded.
type SignInStart struct {
	Verdict SignInVerdict
	// Attempt is the recorded attempt's id when allowed.
	Attempt int64
	// Until is when a lock ends by itself: when enough of the failures
	// behind it have left the window. A success elsewhere, a password
	// change or an admin's clearing ends it sooner.
	Until time.Time
	// AddressSlowed reports that the failures from the address reached
	// PerAddress.
	AddressSlowed bool
}

// StartSignIn decides whether the password of a sign-in as email from
// address may be checked, under lim, and when it may, records the attempt
// as under way. The email must be normalised.
//
// Deciding and recording are one step: attempts at the same email are
// serialised by a transaction-scoped advisory lock (held for the count and
// the insert, never while a password is hashed), and attempts under way
// count against the limits with the failures, so that however many guesses
// arrive at once, at most the limit of them are checked. Only failures
// lock; where attempts under way are what reach a limit, the verdict is
// SignInBusy. Failures a success, a password change or an admin cleared
// no longer count against the email, but still count against the address:
// someone who knows one password must not buy more guesses at others.
func (db *DB) StartSignIn(ctx context.Context, email, address string, lim SignInLimits) (SignInStart, error) {
	var st SignInStart
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1, hashtext($1))`, email); err != nil {
			return err
		}
		var failed, failedHere, pending, pendingHere, fromAddress int
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE NOT pending AND cleared_at IS NULL),
			       count(*) FILTER (WHERE NOT pending AND cleared_at IS NULL AND address = $2),
			       count(*) FILTER (WHERE pending AND attempted_at >= now() - $4::float8 * interval '1 microsecond'),
			       count(*) FILTER (WHERE pending AND attempted_at >= now() - $4::float8 * interval '1 microsecond' AND address = $2),
			       (SELECT count(*) FROM sign_in_attempts
			         WHERE address = $2 AND NOT succeeded AND NOT pending AND attempted_at >= now() - $3::float8 * interval '1 microsecond')
			FROM sign_in_attempts
			WHERE email = $1 AND NOT succeeded AND attempted_at >= now() - $3::float8 * interval '1 microsecond'`,
			email, address, lim.Window.Microseconds(), pendingFor.Microseconds()).Scan(&failed, &failedHere, &pending, &pendingHere, &fromAddress); err != nil {
			return err
		}
		st.AddressSlowed = fromAddress >= lim.PerAddress
		until := func(here bool, limit int) error {
			// The lock ends when the limit-th newest failure leaves the window.
			return tx.QueryRow(ctx, `
				SELECT attempted_at + $3::float8 * interval '1 microsecond' FROM sign_in_attempts
				WHERE email = $1 AND (NOT $4 OR address = $2) AND NOT succeeded AND NOT pending AND cleared_at IS NULL
				  AND attempted_at >= now() - $3::float8 * interval '1 microsecond'
				ORDER BY attempted_at DESC OFFSET $5 LIMIT 1`,
				email, address, lim.Window.Microseconds(), here, limit-1).Scan(&st.Until)
		}
		switch {
		case failed >= lim.PerAccount:
			st.Verdict = SignInLocked
			return until(false, lim.PerAccount)
		case failedHere >= lim.PerAddressAccount:
			st.Verdict = SignInLockedHere
			return until(true, lim.PerAddressAccount)
		case failed+pending >= lim.PerAccount || failedHere+pendingHere >= lim.PerAddressAccount:
			st.Verdict = SignInBusy
			return nil
		}
		return tx.QueryRow(ctx, `INSERT INTO sign_in_attempts (email, address, succeeded, pending) VALUES ($1, $2, false, true) RETURNING id`,
			email, address).Scan(&st.Attempt)
	})
	if err != nil {
		return SignInStart{}, mapErr(err, "start sign-in", "")
	}
	return st, nil
}

// SignInFailed records that the password of an attempt StartSignIn let
// through was wrong (or that its email has no account).
func (db *DB) SignInFailed(ctx context.Context, attemptID int64) error {
	tag, err := db.pool.Exec(ctx, `UPDATE sign_in_attempts SET pending = false WHERE id = $1 AND pending`, attemptID)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "record failed sign-in", "")
}

// SignInSucceeded records that the password of an attempt StartSignIn let
// through was right, and forgives the failures counted against its email,
// from every address: the account's owner is the one signing in.
func (db *DB) SignInSucceeded(ctx context.Context, attemptID int64) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var email string
		if err := tx.QueryRow(ctx, `UPDATE sign_in_attempts SET pending = false, succeeded = true WHERE id = $1 AND pending RETURNING email`,
			attemptID).Scan(&email); err != nil {
			return err
		}
		_, err := clearFailures(ctx, tx, email)
		return err
	})
	return mapErr(err, "record sign-in", "")
}

// SignInAbandoned forgets an attempt whose password was never checked (its
// client left while it waited for its turn): it is no failure.
func (db *DB) SignInAbandoned(ctx context.Context, attemptID int64) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM sign_in_attempts WHERE id = $1 AND pending`, attemptID)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "forget sign-in", "")
}

// clearFailures forgives the failed sign-ins counted against email and
// returns how many.
func clearFailures(ctx context.Context, tx pgx.Tx, email string) (int, error) {
	tag, err := tx.Exec(ctx, `UPDATE sign_in_attempts SET cleared_at = now()
		WHERE email = $1 AND NOT succeeded AND NOT pending AND cleared_at IS NULL`, email)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// ClearSignInLock forgives every failed sign-in counted against the
// account's email, from every address, so that its owner can sign in at
// once, and records it in the audit log (also when there was nothing to
// forgive). It returns how many failures it forgave. An unknown userID is
// an attune.ErrNotFound.
func (db *DB) ClearSignInLock(ctx context.Context, actorID *int64, userID int64) (int, error) {
	var n int
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		if n, err = clearFailures(ctx, tx, u.Email); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "user.clear_sign_in_lock", Subject: u.Email,
			Details: map[string]string{"failed_sign_ins_forgiven": fmt.Sprint(n)}})
	})
	return n, mapErr(err, "clear sign-in lock", "")
}

// SignInLockout is the standing of one account under the sign-in limits.
type SignInLockout struct {
	// Failures counts the failures in the window not forgiven.
	Failures int
	// Everywhere reports that they reach the per-account limit.
	Everywhere bool
	// Addresses counts the client addresses the account is locked at.
	Addresses int
}

// SignInLockouts returns, by account id, the accounts locked under lim,
// everywhere or at some address, for the admin's users page.
func (db *DB) SignInLockouts(ctx context.Context, lim SignInLimits) (map[int64]SignInLockout, error) {
	rows, err := db.pool.Query(ctx, `
		WITH f AS (
			SELECT email, address, count(*) AS n FROM sign_in_attempts
			WHERE NOT succeeded AND NOT pending AND cleared_at IS NULL AND attempted_at >= now() - $1::float8 * interval '1 microsecond'
			GROUP BY email, address)
		SELECT u.id, sum(f.n)::int, count(*) FILTER (WHERE f.n >= $3)::int
		FROM f JOIN users u USING (email)
		GROUP BY u.id
		HAVING sum(f.n) >= $2 OR count(*) FILTER (WHERE f.n >= $3) > 0`, lim.Window.Microseconds(), lim.PerAccount, lim.PerAddressAccount)
	if err != nil {
		return nil, mapErr(err, "list sign-in lockouts", "")
	}
	out := map[int64]SignInLockout{}
	var id int64
	var l SignInLockout
	_, err = pgx.ForEachRow(rows, []any{&id, &l.Failures, &l.Addresses}, func() error {
		l.Everywhere = l.Failures >= lim.PerAccount
		out[id] = l
		return nil
	})
	return out, mapErr(err, "list sign-in lockouts", "")
}

// DeleteExpiredSessions removes sessions past their expiry and reports how
// many it removed. Any replica may run it at any time.
func (db *DB) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE expiry < now()`)
	if err != nil {
		return 0, mapErr(err, "delete expired sessions", "")
	}
	return tag.RowsAffected(), nil
}
