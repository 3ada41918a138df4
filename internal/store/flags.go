package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// A flag is an assignment an annotator skipped with a flag reason
// (assignments.flag). Leads resolve flags; annotators never read them.

// FlagFilter selects flags of one project.
type FlagFilter struct {
	ProjectID int64
	Reason    string            // one of attune.Flags; "" for every reason
	Status    attune.FlagStatus // open or resolved; "" for both
	ItemID    int64             // one item's flags; 0 for every item's
	// Limit bounds how many flags are returned, newest first; 0 returns
	// them all.
	Limit int
}

const flagColumns = `a.id, a.project_id, a.item_id, i.source_id, coalesce(i.meta ->> p.system_key, ''), a.flag, a.flag_note, coalesce(u.email, r.name), a.finished_at,
	coalesce(a.flag_resolution, ''), coalesce(ru.email, ''), a.flag_resolved_at, a.flag_resolution_note,
	i.pulled_at IS NULL, (SELECT count(*) FROM answer_sets s WHERE s.item_id = i.id)`

const flagJoins = `FROM assignments a
	JOIN items i ON i.id = a.item_id
	JOIN projects p ON p.id = a.project_id
	JOIN raters r ON r.id = a.rater_id
	LEFT JOIN users u ON u.id = r.user_id
	LEFT JOIN users ru ON ru.id = a.flag_resolved_by`

// flagWhere selects a project's flags by reason ($2, "" for any), status
// ($3, "" for both) and item ($4, 0 for any).
const flagWhere = `WHERE a.project_id = $1 AND a.flag IS NOT NULL
	AND ($2 = '' OR a.flag = $2)
	AND ($3 = '' OR ($3 = 'open') = (a.flag_resolution IS NULL))
	AND ($4::bigint = 0 OR a.item_id = $4)`

func scanFlag(row pgx.Row, f *attune.Flag) error {
	var resolvedAt *time.Time
	err := row.Scan(&f.ID, &f.ProjectID, &f.ItemID, &f.ItemSourceID, &f.ItemSystem, &f.Reason, &f.Note, &f.Annotator, &f.FlaggedAt,
		&f.Resolution, &f.ResolvedBy, &resolvedAt, &f.ResolutionNote, &f.ItemInPool, &f.ItemLabelled)
	f.ResolvedAt = time.Time{}
	if resolvedAt != nil {
		f.ResolvedAt = *resolvedAt
	}
	return err
}

// ListFlags returns a project's flags, newest first, filtered as asked.
// Only the project's leads may be shown them: the caller checks.
func (db *DB) ListFlags(ctx context.Context, ff FlagFilter) ([]attune.Flag, error) {
	var limit *int
	if ff.Limit > 0 {
		limit = &ff.Limit
	}
	rows, err := db.pool.Query(ctx, `SELECT `+flagColumns+` `+flagJoins+` `+flagWhere+`
		ORDER BY a.finished_at DESC, a.id DESC LIMIT $5`, ff.ProjectID, ff.Reason, string(ff.Status), ff.ItemID, limit)
	if err != nil {
		return nil, mapErr(err, "list flags", "")
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.Flag, error) {
		var f attune.Flag
		err := scanFlag(r, &f)
		return f, err
	})
	return fs, mapErr(err, "list flags", "")
}

// FlagPage is one page of a project's flags, newest first: at most limit
// (1 to MaxSearchPage) after the page whose Next is cursor ("" for the first), and
// the cursor of the page after it ("" on the last). It pages by keyset,
// the flag's time and id, so a page costs the same however deep it is.
func (db *DB) FlagPage(ctx context.Context, ff FlagFilter, cursor string, limit int) ([]attune.Flag, string, error) {
	if err := checkPageLimit(limit); err != nil {
		return nil, "", err
	}
	at, afterID, err := timeCursor(cursor, "flags")
	if err != nil {
		return nil, "", err
	}
	rows, err := db.pool.Query(ctx, `SELECT `+flagColumns+` `+flagJoins+` `+flagWhere+`
		AND ($5::timestamptz IS NULL OR (a.finished_at, a.id) < ($5, $6))
		ORDER BY a.finished_at DESC, a.id DESC LIMIT $7`, ff.ProjectID, ff.Reason, string(ff.Status), ff.ItemID, at, afterID, limit+1)
	if err != nil {
		return nil, "", mapErr(err, "list flags", "")
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.Flag, error) {
		var f attune.Flag
		err := scanFlag(r, &f)
		return f, err
	})
	if err != nil {
		return nil, "", mapErr(err, "list flags", "")
	}
	var next string
	if len(fs) > limit {
		fs = fs[:limit]
		last := fs[limit-1]
		next = nextTimeCursor("flags", last.FlaggedAt, last.ID)
	}
	return fs, next, nil
}

// ExportFlags streams every flag of the project, oldest first, for the
// flags export; see the other export methods for emit's contract. It
// returns how many flags it emitted.
func (db *DB) ExportFlags(ctx context.Context, projectID int64, emit func(*attune.Flag) error) (int, error) {
	n := 0
	err := db.leadRead(ctx, ReadExport, func(tx pgx.Tx) error {
		rows, err := openCursor(ctx, tx, "export_flags", `SELECT `+flagColumns+` `+flagJoins+` `+flagWhere+`
			ORDER BY a.finished_at, a.id`, projectID, "", "", 0)
		if err != nil {
			return err
		}
		defer rows.Close()
		var f attune.Flag
		for rows.Next() {
			if err := scanFlag(rows, &f); err != nil {
				return err
			}
			if err := emit(&f); err != nil {
				return emitError{err}
			}
			n++
		}
		return rows.Err()
	})
	return n, exportErr(err, "export flags")
}

// CountFlags sums up a project's flags: open ones by reason, resolved
// ones, and the items out of the pool.
func (db *DB) CountFlags(ctx context.Context, projectID int64) (attune.FlagCounts, error) {
	c := attune.FlagCounts{OpenByReason: map[string]int{}}
	for _, f := range attune.Flags {
		c.OpenByReason[f] = 0
	}
	rows, err := db.pool.Query(ctx, `
		SELECT flag, count(*) FILTER (WHERE flag_resolution IS NULL), count(*) FILTER (WHERE flag_resolution IS NOT NULL)
		FROM assignments WHERE project_id = $1 AND flag IS NOT NULL GROUP BY flag`, projectID)
	if err != nil {
		return c, mapErr(err, "count flags", "")
	}
	defer rows.Close()
	for rows.Next() {
		var reason string
		var open, resolved int
		if err := rows.Scan(&reason, &open, &resolved); err != nil {
			return c, mapErr(err, "count flags", "")
		}
		c.OpenByReason[reason] = open
		c.Open += open
		c.Resolved += resolved
	}
	if err := rows.Err(); err != nil {
		return c, mapErr(err, "count flags", "")
	}
	err = db.pool.QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND pulled_at IS NOT NULL`, projectID).Scan(&c.Pulled)
	return c, mapErr(err, "count flags", "")
}

// FlagResolution is a lead's decision on one flag.
type FlagResolution struct {
	ActorID   int64
	ProjectID int64
	FlagID    int64
	How       attune.FlagResolution
	Note      string // optional, at most attune.MaxResolutionNote characters
}

// ResolveResult says what a resolution did.
type ResolveResult struct {
	ItemSourceID string
	Flags        int  // flags resolved: the one asked for, and for pulled and fixed every other open flag of the item
	Pulled       bool // the item left the pool
	Returned     bool // the item came back to the pool
}

// ResolveFlag settles an open flag of the project, in one transaction
// with its audit event: pulled takes the item out of the pool and fixed
// puts it back in (both resolve every open flag of the item, since they
// act on the item); dismissed closes the one flag. Who, when and how are
// stored with the flag. A flag that is not the project's is an
// attune.ErrNotFound; one resolved already is an attune.ErrConflict.
func (db *DB) ResolveFlag(ctx context.Context, fr FlagResolution) (ResolveResult, error) {
	var res ResolveResult
	if err := attune.CheckResolutionNote(fr.Note); err != nil {
		return res, err
	}
	if _, err := attune.ParseFlagResolution(string(fr.How)); err != nil {
		return res, err
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var itemID int64
		var reason string
		var done *string
		err := tx.QueryRow(ctx, `SELECT item_id, flag, flag_resolution FROM assignments
			WHERE id = $1 AND project_id = $2 AND flag IS NOT NULL FOR UPDATE`, fr.FlagID, fr.ProjectID).Scan(&itemID, &reason, &done)
		if errors.Is(err, pgx.ErrNoRows) {
			return attune.NotFound("this project has no such flag")
		}
		if err != nil {
			return err
		}
		if done != nil {
			return attune.Conflict(fmt.Sprintf("this flag was resolved already (%s)", *done))
		}
		var pulled bool
		if err := tx.QueryRow(ctx, `SELECT source_id, pulled_at IS NOT NULL FROM items WHERE id = $1 FOR UPDATE`, itemID).
			Scan(&res.ItemSourceID, &pulled); err != nil {
			return err
		}
		which := `id = $1 AND item_id = $2`
		if fr.How != attune.ResolveDismissed {
			which = `(id = $1 OR (item_id = $2 AND flag IS NOT NULL AND flag_resolution IS NULL))`
		}
		tag, err := tx.Exec(ctx, `UPDATE assignments SET flag_resolution = $3, flag_resolved_by = $4, flag_resolved_at = now(),
			flag_resolution_note = $5 WHERE `+which, fr.FlagID, itemID, string(fr.How), fr.ActorID, fr.Note)
		if err != nil {
			return err
		}
		res.Flags = int(tag.RowsAffected())
		switch {
		case fr.How == attune.ResolvePulled && !pulled:
			res.Pulled = true
			err = setPool(ctx, tx, fr.ActorID, fr.ProjectID, itemID, res.ItemSourceID, false, "flag")
		case fr.How == attune.ResolveFixed && pulled:
			res.Returned = true
			err = setPool(ctx, tx, fr.ActorID, fr.ProjectID, itemID, res.ItemSourceID, true, "flag")
		}
		if err != nil {
			return err
		}
		details := map[string]string{"how": string(fr.How), "flag": strconv.FormatInt(fr.FlagID, 10), "reason": reason,
			"flags": strconv.Itoa(res.Flags)}
		if fr.Note != "" {
			details["note"] = fr.Note
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: &fr.ActorID, Action: "flag.resolve", ProjectID: &fr.ProjectID,
			Subject: res.ItemSourceID, Details: details})
	})
	if err != nil {
		return ResolveResult{}, mapErr(err, "resolve flag", "")
	}
	return res, nil
}

// setPool takes an item out of the pool or puts it back, with its audit
// event; why says what led to it (a flag, or the lead's own choice).
func setPool(ctx context.Context, tx pgx.Tx, actorID, projectID, itemID int64, sourceID string, inPool bool, why string) error {
	action := "item.return"
	if !inPool {
		action = "item.pull"
	}
	if _, err := tx.Exec(ctx, `
		WITH counts AS (UPDATE item_counts SET pulled = NOT $2 WHERE item_id = $1)
		UPDATE items SET pulled_at = CASE WHEN $2 THEN NULL ELSE now() END,
		pulled_by = CASE WHEN $2 THEN NULL ELSE $3::bigint END WHERE id = $1`, itemID, inPool, actorID); err != nil {
		return err
	}
	return audit(ctx, tx, attune.AuditEvent{ActorID: &actorID, Action: action, ProjectID: &projectID, Subject: sourceID,
		Details: map[string]string{"via": why}})
}

// SetItemInPool puts an item of the project back into the pool (inPool
// true) or takes it out, outside any flag. It reports whether anything
// changed: an item already where it was asked to be changes nothing and
// writes no audit event. An item the project lacks is an
// attune.ErrNotFound.
func (db *DB) SetItemInPool(ctx context.Context, actorID, projectID, itemID int64, inPool bool) (changed bool, sourceID string, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var pulled bool
		err := tx.QueryRow(ctx, `SELECT source_id, pulled_at IS NOT NULL FROM items WHERE id = $1 AND project_id = $2 FOR UPDATE`,
			itemID, projectID).Scan(&sourceID, &pulled)
		if errors.Is(err, pgx.ErrNoRows) {
			return attune.NotFound("this project has no such item")
		}
		if err != nil {
			return err
		}
		if pulled != inPool {
			return nil
		}
		changed = true
		return setPool(ctx, tx, actorID, projectID, itemID, sourceID, inPool, "lead")
	})
	if err != nil {
		return false, "", mapErr(err, "set item pool", "")
	}
	return changed, sourceID, nil
}

// PulledItem is an item out of the pool.
type PulledItem struct {
	ItemID   int64
	SourceID string
	PulledAt time.Time
	PulledBy string // the lead's email
}

// ListPulledItems returns the project's items out of the pool, the most
// recently pulled first, at most limit of them (0 for all).
func (db *DB) ListPulledItems(ctx context.Context, projectID int64, limit int) ([]PulledItem, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := db.pool.Query(ctx, `
		SELECT i.id, i.source_id, i.pulled_at, coalesce(u.email, '')
		FROM items i LEFT JOIN users u ON u.id = i.pulled_by
		WHERE i.project_id = $1 AND i.pulled_at IS NOT NULL
		ORDER BY i.pulled_at DESC, i.id DESC LIMIT $2`, projectID, lim)
	if err != nil {
		return nil, mapErr(err, "list pulled items", "")
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PulledItem, error) {
		var p PulledItem
		err := r.Scan(&p.ItemID, &p.SourceID, &p.PulledAt, &p.PulledBy)
		return p, err
	})
	return items, mapErr(err, "list pulled items", "")
}
