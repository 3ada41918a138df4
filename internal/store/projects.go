package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
)

// NewProject is what CreateProject needs.
type NewProject struct {
	Name            string
	Instructions    string
	RubricVersionID int64
	Overlap         int
	Lease           time.Duration
	// Epsilon is the alt-test's ε (attune.AnnotatorPools); zero means
	// attune.DefaultEpsilon.
	Epsilon float64
	// EvidencePolicy is the project's turn evidence setting; empty means
	// rubric.EvidenceOptional.
	EvidencePolicy rubric.EvidencePolicy
	// SystemKey is the item meta key naming an item's system; "" means
	// attune.DefaultSystemKey.
	SystemKey string
	// ProbeThresholds are the project's probe thresholds; nil stores none,
	// so the project reads probe.DefaultThresholds.
	ProbeThresholds *probe.Thresholds
}

// ProjectChanges are the fields a lead may edit after creation. The rubric
// version never changes: labels point at it.
type ProjectChanges struct {
	Name         string
	Instructions string
	Overlap      int
	Lease        time.Duration
	// Epsilon is the alt-test's ε; zero leaves the stored one.
	Epsilon float64
	// EvidencePolicy is the turn evidence setting; empty leaves the
	// stored one.
	EvidencePolicy rubric.EvidencePolicy
	// SystemKey is the item meta key naming an item's system; "" leaves
	// the stored one.
	SystemKey string
	// ProbeThresholds are the project's probe thresholds; nil leaves the
	// stored ones.
	ProbeThresholds *probe.Thresholds
}

const projectColumns = `p.id, p.name, p.instructions, p.rubric_version_id, rv.key || '@' || rv.version,
	p.overlap, p.lease_seconds, p.alt_epsilon, p.evidence_policy, p.system_key, p.status, p.created_at`

func scanProject(row pgx.Row) (*attune.Project, error) {
	var p attune.Project
	var leaseSeconds int
	err := row.Scan(&p.ID, &p.Name, &p.Instructions, &p.RubricVersionID, &p.RubricRef, &p.Overlap, &leaseSeconds, &p.Epsilon, &p.EvidencePolicy, &p.SystemKey, &p.Status, &p.CreatedAt)
	p.Lease = time.Duration(leaseSeconds) * time.Second
	return &p, err
}

// CreateProject stores a project and makes its creator, when there is one
// (the command line has none), a lead of it. The settings are checked by
// attune.Project.Validate first: bad ones are an *attune.ValidationError
// and nothing is stored. A name in use is an attune.ErrConflict.
func (db *DB) CreateProject(ctx context.Context, creatorID *int64, np NewProject) (*attune.Project, error) {
	var p *attune.Project
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if np.Epsilon == 0 {
			np.Epsilon = attune.DefaultEpsilon
		}
		if np.SystemKey == "" {
			np.SystemKey = attune.DefaultSystemKey
		}
		check := attune.Project{Name: np.Name, Instructions: np.Instructions, Overlap: np.Overlap, Lease: np.Lease, Epsilon: np.Epsilon,
			EvidencePolicy: np.EvidencePolicy, SystemKey: np.SystemKey}
		if err := validateSettings(check, np.ProbeThresholds); err != nil {
			return err
		}
		thresholds := thresholdsJSON(np.ProbeThresholds)
		// Valid, so it parses: empty becomes the default.
		policy, _ := rubric.ParseEvidencePolicy(string(np.EvidencePolicy))
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO projects (name, instructions, rubric_version_id, overlap, lease_seconds, alt_epsilon, evidence_policy, system_key, probe_thresholds, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			np.Name, np.Instructions, np.RubricVersionID, np.Overlap, int(np.Lease.Seconds()), np.Epsilon, policy, np.SystemKey, thresholds, creatorID).Scan(&id)
		if err != nil {
			return err
		}
		if creatorID != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'lead')`, id, *creatorID); err != nil {
				return err
			}
		}
		p, err = scanProject(tx.QueryRow(ctx, `SELECT `+projectColumns+` FROM projects p JOIN rubric_versions rv ON rv.id = p.rubric_version_id WHERE p.id = $1`, id))
		if err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: creatorID, Action: "project.create", ProjectID: &id, Subject: np.Name,
			Details: map[string]string{"rubric": p.RubricRef, "overlap": fmt.Sprint(np.Overlap), "epsilon": fmt.Sprint(np.Epsilon),
				"evidence_policy": string(policy), "system_key": np.SystemKey, "probe_thresholds": string(thresholds)}})
	})
	if err != nil {
		return nil, mapErr(err, "create project", fmt.Sprintf("a project named %q already exists", np.Name))
	}
	return p, nil
}

// UpdateProject changes a project's editable fields, checked by
// attune.Project.Validate first (an *attune.ValidationError stores
// nothing). actorID 0 is the command line, which has no account.
func (db *DB) UpdateProject(ctx context.Context, actorID, projectID int64, c ProjectChanges) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// An empty EvidencePolicy is valid: it keeps the stored one.
		check := attune.Project{Name: c.Name, Instructions: c.Instructions, Overlap: c.Overlap, Lease: c.Lease, Epsilon: c.Epsilon,
			EvidencePolicy: c.EvidencePolicy, SystemKey: c.SystemKey}
		if c.Epsilon == 0 {
			// Checked against a valid ε: the stored one stays as it is.
			check.Epsilon = attune.DefaultEpsilon
		}
		if c.SystemKey == "" {
			// Likewise: the stored key stays.
			check.SystemKey = attune.DefaultSystemKey
		}
		if err := validateSettings(check, c.ProbeThresholds); err != nil {
			return err
		}
		thresholds := thresholdsJSON(c.ProbeThresholds)
		tag, err := tx.Exec(ctx, `UPDATE projects SET name = $2, instructions = $3, overlap = $4, lease_seconds = $5,
			alt_epsilon = COALESCE(NULLIF($6::double precision, 0), alt_epsilon),
			evidence_policy = COALESCE(NULLIF($7::text, ''), evidence_policy),
			system_key = COALESCE(NULLIF($8::text, ''), system_key),
			probe_thresholds = COALESCE($9::jsonb, probe_thresholds), updated_at = now()
			WHERE id = $1`, projectID, c.Name, c.Instructions, c.Overlap, int(c.Lease.Seconds()), c.Epsilon, string(c.EvidencePolicy), c.SystemKey, thresholds)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		var actor *int64
		if actorID != 0 {
			actor = &actorID
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actor, Action: "project.update", ProjectID: &projectID, Subject: c.Name,
			Details: map[string]string{"overlap": fmt.Sprint(c.Overlap), "lease": c.Lease.String(), "epsilon": fmt.Sprint(c.Epsilon),
				"evidence_policy": string(c.EvidencePolicy), "system_key": c.SystemKey, "probe_thresholds": string(thresholds)}})
	})
	return mapErr(err, "update project", fmt.Sprintf("a project named %q already exists", c.Name))
}

// validateSettings checks a project's settings and, when given, its probe
// thresholds, naming every bad field of both in one
// *attune.ValidationError.
func validateSettings(p attune.Project, t *probe.Thresholds) error {
	var bad map[string]string
	for _, err := range []error{p.Validate(), validThresholds(t)} {
		var v *attune.ValidationError
		if err == nil {
			continue
		}
		if !errors.As(err, &v) {
			return err
		}
		if bad == nil {
			bad = map[string]string{}
		}
		maps.Copy(bad, v.Fields)
	}
	if bad != nil {
		return &attune.ValidationError{Fields: bad}
	}
	return nil
}

func validThresholds(t *probe.Thresholds) error {
	if t == nil {
		return nil
	}
	return t.Validate()
}

// thresholdsJSON is the probe_thresholds column of t: NULL for none.
func thresholdsJSON(t *probe.Thresholds) []byte {
	if t == nil {
		return nil
	}
	b, _ := json.Marshal(t)
	return b
}

// SetProjectStatus pauses, resumes or archives a project. A paused or
// archived project hands out no work.
func (db *DB) SetProjectStatus(ctx context.Context, actorID, projectID int64, status attune.ProjectStatus) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE projects SET status = $2, updated_at = now() WHERE id = $1`, projectID, status)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: &actorID, Action: "project.set_status", ProjectID: &projectID,
			Details: map[string]string{"status": string(status)}})
	})
	return mapErr(err, "set project status", "")
}

// FindProjectByID returns a project.
func (db *DB) FindProjectByID(ctx context.Context, id int64) (*attune.Project, error) {
	p, err := scanProject(db.pool.QueryRow(ctx, `SELECT `+projectColumns+` FROM projects p JOIN rubric_versions rv ON rv.id = p.rubric_version_id WHERE p.id = $1`, id))
	return p, mapErr(err, "find project", "")
}

// FindProjectByName returns a project by its exact name.
func (db *DB) FindProjectByName(ctx context.Context, name string) (*attune.Project, error) {
	p, err := scanProject(db.pool.QueryRow(ctx, `SELECT `+projectColumns+` FROM projects p JOIN rubric_versions rv ON rv.id = p.rubric_version_id WHERE p.name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, attune.NotFound(fmt.Sprintf("no project is named %q", name))
	}
	return p, mapErr(err, "find project", "")
}

// ProjectRole returns the role user has in the project now: their member
// role as attune.EffectiveMemberRole reads it with the account's global
// role as stored at this moment (not as it was when the request began), or
// lead for an admin who is not a member. It returns attune.ErrNotFound when
// the user may not see the project at all, so that its existence is not
// revealed.
func (db *DB) ProjectRole(ctx context.Context, projectID int64, u *attune.User) (attune.MemberRole, error) {
	var global attune.Role
	var stored *string
	err := db.pool.QueryRow(ctx, `SELECT u.role, m.role FROM users u
		LEFT JOIN project_members m ON m.user_id = u.id AND m.project_id = $1
		WHERE u.id = $2`, projectID, u.ID).Scan(&global, &stored)
	if err != nil {
		return "", mapErr(err, "project role", "")
	}
	if stored == nil {
		if global != attune.RoleAdmin {
			return "", attune.NotFound("project role: not found")
		}
		if _, err := db.FindProjectByID(ctx, projectID); err != nil {
			return "", err
		}
		return attune.MemberLead, nil
	}
	return attune.EffectiveMemberRole(global, attune.MemberRole(*stored)), nil
}

// AddMember adds a person to a project, or changes their role in it. Only
// an account that leads projects can be made a project lead
// (attune.CheckMembership): otherwise it is an attune.ErrConflict. The
// account's row is share-locked, so that a demotion running at the same
// time either comes first and is seen, or waits and then turns this
// membership into an annotator's.
func (db *DB) AddMember(ctx context.Context, actorID *int64, projectID, userID int64, role attune.MemberRole) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var email string
		var global attune.Role
		var disabled bool
		if err := tx.QueryRow(ctx, `SELECT email, role, disabled_at IS NOT NULL FROM users WHERE id = $1 FOR SHARE`, userID).Scan(&email, &global, &disabled); err != nil {
			return err
		}
		if disabled {
			return attune.Conflict(email + " is disabled: enable the account before adding it to a project")
		}
		if err := attune.CheckMembership(email, global, role); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
			ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role`, projectID, userID, role); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "project.add_member", ProjectID: &projectID, Subject: email,
			Details: map[string]string{"role": string(role)}})
	})
	return mapErr(err, "add member", "")
}

// RemoveMember takes a person off a project. Their labels stay; their
// active assignments are released so the items go back to the pool.
// Removing the project's only lead is an attune.ErrConflict: the leads'
// rows are locked first, so two leads removing each other at once cannot
// both succeed.
func (db *DB) RemoveMember(ctx context.Context, actorID *int64, projectID, userID int64) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT user_id FROM project_members WHERE project_id = $1 AND role = 'lead' FOR UPDATE`, projectID)
		if err != nil {
			return err
		}
		leads, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(leads) == 1 && leads[0] == userID {
			return attune.Conflict("this is the only lead of the project: add another lead before removing them")
		}
		var email string
		err = tx.QueryRow(ctx, `DELETE FROM project_members m USING users u WHERE m.project_id = $1 AND m.user_id = $2 AND u.id = m.user_id
			RETURNING u.email`, projectID, userID).Scan(&email)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			WITH released AS (
				UPDATE assignments a SET state = 'expired', finished_at = now()
				FROM raters r WHERE r.id = a.rater_id AND r.user_id = $2 AND a.project_id = $1 AND a.state = 'active'
				RETURNING a.item_id)
			UPDATE item_counts c SET holds = c.holds - 1 FROM released WHERE c.item_id = released.item_id`, projectID, userID); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "project.remove_member", ProjectID: &projectID, Subject: email})
	})
	return mapErr(err, "remove member", "")
}

// ListMembers returns a project's members, leads first, then by email.
func (db *DB) ListMembers(ctx context.Context, projectID int64) ([]attune.Member, error) {
	return db.listMembers(ctx, projectID, make([]any, 3), nil)
}

// MemberPage is one page of a project's members in ListMembers' order: at
// most limit (1 to MaxSearchPage) after the page whose cursor is cursor
// ("" for the first), and the next page's cursor ("" on the last), by
// keyset.
func (db *DB) MemberPage(ctx context.Context, projectID int64, cursor string, limit int) ([]attune.Member, string, error) {
	return keysetList(cursor, "members", 2, limit,
		func(after []any, n int) ([]attune.Member, error) { return db.listMembers(ctx, projectID, after, &n) },
		func(m attune.Member) (int64, []string) {
			return m.UserID, []string{strconv.FormatBool(m.Role == attune.MemberAnnotator), m.Email}
		})
}

// listMembers lists the project's members after the row after (afterRow's
// arguments) in their order, at most limit (nil: all). Leads come first:
// "false" sorts before "true".
func (db *DB) listMembers(ctx context.Context, projectID int64, after []any, limit *int) ([]attune.Member, error) {
	rows, err := db.pool.Query(ctx, `SELECT u.id, u.email, u.name, m.role, m.added_at, m.paused_at IS NOT NULL, m.paused_why
		FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1 AND ($4::bigint IS NULL OR ((m.role = 'annotator')::text, u.email, u.id) > ($2, $3, $4))
		ORDER BY (m.role = 'annotator')::text, u.email, u.id LIMIT $5`, append(append([]any{projectID}, after...), limit)...)
	if err != nil {
		return nil, mapErr(err, "list members", "")
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.Member, error) {
		var m attune.Member
		err := r.Scan(&m.UserID, &m.Email, &m.Name, &m.Role, &m.AddedAt, &m.Paused, &m.PausedWhy)
		return m, err
	})
	return ms, mapErr(err, "list members", "")
}

// ListAllProjects returns every project, for the command line.
func (db *DB) ListAllProjects(ctx context.Context) ([]attune.ProjectSummary, error) {
	return db.listProjects(ctx, 0, true, make([]any, 3), nil)
}

// ListProjectsForUser returns the projects a user can open: every project
// for an admin, the projects they are a member of for anyone else.
// Each summary's MemberRole is the user's effective role in the project
// (attune.EffectiveMemberRole), "" where an admin is not a member.
func (db *DB) ListProjectsForUser(ctx context.Context, u *attune.User) ([]attune.ProjectSummary, error) {
	return db.projectsForUser(ctx, u, make([]any, 3), nil)
}

// ProjectPage is one page of the projects ListProjectsForUser lists, in
// its order: at most limit (1 to MaxSearchPage) after the page whose
// cursor is cursor ("" for the first), and the next page's cursor ("" on
// the last), by keyset.
func (db *DB) ProjectPage(ctx context.Context, u *attune.User, cursor string, limit int) ([]attune.ProjectSummary, string, error) {
	return keysetList(cursor, "projects", 2, limit,
		func(after []any, n int) ([]attune.ProjectSummary, error) {
			return db.projectsForUser(ctx, u, after, &n)
		},
		func(p attune.ProjectSummary) (int64, []string) {
			return p.ID, []string{strconv.FormatBool(p.Status == attune.ProjectArchived), p.Name}
		})
}

func (db *DB) projectsForUser(ctx context.Context, u *attune.User, after []any, limit *int) ([]attune.ProjectSummary, error) {
	ps, err := db.listProjects(ctx, u.ID, u.Role == attune.RoleAdmin, after, limit)
	for i, p := range ps {
		if p.MemberRole != "" {
			ps[i].MemberRole = string(attune.EffectiveMemberRole(u.Role, attune.MemberRole(p.MemberRole)))
		}
	}
	return ps, err
}

// listProjects lists the projects after the row after (afterRow's
// arguments) in their order, at most limit (nil: all): archived ones last
// ("false" sorts before "true"), then by name.
func (db *DB) listProjects(ctx context.Context, userID int64, all bool, after []any, limit *int) ([]attune.ProjectSummary, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT p.id, p.name, rv.key || '@' || rv.version, p.status, p.overlap,
		       coalesce(c.items, 0), coalesce(c.complete, 0), coalesce(m.role, ''), p.system_key
		FROM projects p
		JOIN rubric_versions rv ON rv.id = p.rubric_version_id
		LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = $1
		LEFT JOIN LATERAL (
			SELECT sum(g.items) AS items, sum(g.items) FILTER (WHERE g.done >= p.overlap) AS complete
			FROM project_progress g WHERE g.project_id = p.id AND NOT g.pulled) c ON true
		WHERE ($2 OR m.user_id IS NOT NULL)
		  AND ($5::bigint IS NULL OR ((p.status = 'archived')::text, p.name, p.id) > ($3, $4, $5))
		ORDER BY (p.status = 'archived')::text, p.name, p.id LIMIT $6`, append(append([]any{userID, all}, after...), limit)...)
	if err != nil {
		return nil, mapErr(err, "list projects", "")
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.ProjectSummary, error) {
		var p attune.ProjectSummary
		err := r.Scan(&p.ID, &p.Name, &p.RubricRef, &p.Status, &p.Overlap, &p.Items, &p.Complete, &p.MemberRole, &p.SystemKey)
		return p, err
	})
	return ps, mapErr(err, "list projects", "")
}

// Progress reports a project's progress: items by number of human labels,
// and each annotator's output and pace. Items out of the pool are left
// out of the item counts and counted in Pulled.
func (db *DB) Progress(ctx context.Context, projectID int64) (*attune.Progress, error) {
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		return nil, err
	}
	pr := &attune.Progress{Overlap: p.Overlap, ByLabels: make([]int, p.Overlap+1)}
	// Items out of the pool are counted apart: they will not be labelled
	// further, so they would keep the project from ever being complete.
	rows, err := db.pool.Query(ctx, `SELECT pulled, least(done, $2), count(*), sum(holds) FROM item_counts WHERE project_id = $1 GROUP BY 1, 2`,
		projectID, p.Overlap)
	if err != nil {
		return nil, mapErr(err, "progress", "")
	}
	for rows.Next() {
		var pulled bool
		var done, n, held int
		if err := rows.Scan(&pulled, &done, &n, &held); err != nil {
			return nil, mapErr(err, "progress", "")
		}
		if pulled {
			pr.Pulled += n
			continue
		}
		pr.ByLabels[done] += n
		pr.Items += n
		pr.Active += held
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "progress", "")
	}
	pr.Complete = pr.ByLabels[p.Overlap]
	rows, err = db.pool.Query(ctx, `
		SELECT u.id, u.email, u.name,
		       count(s.id), count(s.id) FILTER (WHERE s.submitted_at > now() - interval '1 hour'),
		       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY s.active_ms), 0)::bigint,
		       (SELECT count(*) FROM assignments a WHERE a.project_id = m.project_id AND a.rater_id = r.id AND a.state = 'skipped')
		FROM project_members m
		JOIN users u ON u.id = m.user_id
		JOIN raters r ON r.user_id = u.id
		LEFT JOIN answer_sets s ON s.rater_id = r.id AND s.project_id = m.project_id
		WHERE m.project_id = $1 AND m.role = 'annotator'
		GROUP BY u.id, u.email, u.name, m.project_id, r.id
		ORDER BY u.email`, projectID)
	if err != nil {
		return nil, mapErr(err, "progress", "")
	}
	pr.Annotators, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.AnnotatorProgress, error) {
		var a attune.AnnotatorProgress
		var ms int64
		err := r.Scan(&a.UserID, &a.Email, &a.Name, &a.Submitted, &a.LastHour, &ms, &a.Skipped)
		a.MedianActive = time.Duration(ms) * time.Millisecond
		return a, err
	})
	if err != nil {
		return nil, mapErr(err, "progress", "")
	}
	for _, a := range pr.Annotators {
		pr.LastHour += a.LastHour
	}
	return pr, nil
}
