package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
)

// GoldTrustedJudge is the method of gold that a trusted judge's answers
// decided (trust or escalate), beside automatic and adjudicated.
const GoldTrustedJudge = "trusted_judge"

// The decisions trust routing stores on an item.
const (
	TrustKept      = "kept"
	TrustEscalated = "escalated"
)

// TrustSetting is a lead's trust routing terms for one judge of a project:
// the agreement wanted on the items the judge keeps, the guarantee's error
// level, and whether routing is on. Judge is the judge rater's name.
type TrustSetting struct {
	ProjectID int64
	RaterID   int64
	Judge     string
	Target    float64
	Alpha     float64
	Enabled   bool
	UpdatedBy string // the lead's email; "" for the command line
	UpdatedAt time.Time
	RoutedAt  *time.Time // when routing last ran; nil until it has
}

// TrustRaterOf resolves a judge named as the failure map and estimates
// name it (a rater id, a rater's or a judge's name) to its earliest rater
// with answers in the project, which trust calibration reads, and its
// name. A judge with no answers there is attune.ErrNotFound.
func (db *DB) TrustRaterOf(ctx context.Context, projectID int64, judge string) (int64, string, error) {
	raters, err := db.judgeRaters(ctx, projectID, judge)
	if err != nil {
		return 0, "", err
	}
	var name string
	err = db.pool.QueryRow(ctx, `SELECT name FROM raters WHERE id = $1`, raters[0]).Scan(&name)
	return raters[0], name, mapErr(err, "trust rater", "")
}

const trustSettingColumns = `t.project_id, t.rater_id, r.name, t.target, t.alpha, t.enabled, coalesce(u.email, ''), t.updated_at, t.routed_at`

func scanTrustSetting(row pgx.Row) (TrustSetting, error) {
	var s TrustSetting
	err := row.Scan(&s.ProjectID, &s.RaterID, &s.Judge, &s.Target, &s.Alpha, &s.Enabled, &s.UpdatedBy, &s.UpdatedAt, &s.RoutedAt)
	return s, err
}

// ListTrustSettings returns the project's trust routing settings, one per
// judge that has any, by rater id.
func (db *DB) ListTrustSettings(ctx context.Context, projectID int64) ([]TrustSetting, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+trustSettingColumns+`
		FROM judge_trust t JOIN raters r ON r.id = t.rater_id LEFT JOIN users u ON u.id = t.updated_by
		WHERE t.project_id = $1 ORDER BY t.rater_id`, projectID)
	if err != nil {
		return nil, mapErr(err, "list trust settings", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TrustSetting, error) { return scanTrustSetting(r) })
	return out, mapErr(err, "list trust settings", "")
}

// FindTrustSetting returns the judge rater's trust routing setting in the
// project, or attune.ErrNotFound when the lead has set none.
func (db *DB) FindTrustSetting(ctx context.Context, projectID, raterID int64) (TrustSetting, error) {
	s, err := scanTrustSetting(db.pool.QueryRow(ctx, `SELECT `+trustSettingColumns+`
		FROM judge_trust t JOIN raters r ON r.id = t.rater_id LEFT JOIN users u ON u.id = t.updated_by
		WHERE t.project_id = $1 AND t.rater_id = $2`, projectID, raterID))
	if err == pgx.ErrNoRows {
		return s, attune.NotFound("trust routing is not set for this judge")
	}
	return s, mapErr(err, "find trust setting", "")
}

// SetTrust stores a lead's trust routing terms for a judge rater of the
// project, held to agreement.TrustOptions.Check. Turning routing on does
// not route: RouteTrust does, with the rule calibrated at these terms.
// Turning it off, or changing the terms, undoes the routing that is there
// in the same transaction (UndoTrust), so that no item stays kept under
// terms the lead no longer holds. Only one judge of a project may be on:
// another is attune.ErrConflict. The change is audited.
func (db *DB) SetTrust(ctx context.Context, actorID *int64, projectID, raterID int64, o agreement.TrustOptions, enabled bool) (TrustSetting, error) {
	if err := o.Check(); err != nil {
		field := "target"
		if o.Target > 0 && o.Target < 1 {
			field = "alpha"
		}
		return TrustSetting{}, attune.Invalid(field, err.Error())
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.import'), $1::int)`, projectID); err != nil {
			return err
		}
		var kind string
		if err := tx.QueryRow(ctx, `SELECT kind FROM raters WHERE id = $1`, raterID).Scan(&kind); err != nil {
			return err
		}
		if kind != "judge" {
			return attune.Invalid("judge", "only a judge's answers can be trusted")
		}
		if enabled {
			var other string
			err := tx.QueryRow(ctx, `SELECT r.name FROM judge_trust t JOIN raters r ON r.id = t.rater_id
				WHERE t.project_id = $1 AND t.enabled AND t.rater_id <> $2`, projectID, raterID).Scan(&other)
			if err == nil {
				return attune.Conflict(fmt.Sprintf("judge %q is trusted in this project already: turn it off first", other))
			} else if err != pgx.ErrNoRows {
				return err
			}
		}
		var changed bool
		err := tx.QueryRow(ctx, `
			WITH old AS (SELECT target, alpha FROM judge_trust WHERE project_id = $1 AND rater_id = $2)
			INSERT INTO judge_trust (project_id, rater_id, target, alpha, enabled, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (project_id, rater_id) DO UPDATE SET target = EXCLUDED.target, alpha = EXCLUDED.alpha,
				enabled = EXCLUDED.enabled, updated_by = EXCLUDED.updated_by, updated_at = now()
			RETURNING coalesce((SELECT (target, alpha) IS DISTINCT FROM ($3, $4) FROM old), false)`,
			projectID, raterID, o.Target, o.Alpha, enabled, actorID).Scan(&changed)
		if err != nil {
			return err
		}
		if !enabled || changed {
			if _, err := undoTrust(ctx, tx, projectID); err != nil {
				return err
			}
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "trust.set", ProjectID: &projectID,
			Subject: fmt.Sprintf("rater:%d", raterID),
			Details: map[string]string{"target": fmt.Sprint(o.Target), "alpha": fmt.Sprint(o.Alpha), "enabled": strconv.FormatBool(enabled)}})
	})
	if err != nil {
		return TrustSetting{}, mapErr(err, "set trust", "another judge is trusted in this project already: turn it off first")
	}
	return db.FindTrustSetting(ctx, projectID, raterID)
}

// undoTrust takes back the routing of the project's items that no person
// has labelled yet: kept items lose their trusted gold and, where routing
// held them back, go back to people's queues; the routes are forgotten.
// Escalated items stay in people's queues. Items people have labelled
// since keep their routes as a record. It returns the items whose gold
// went.
func undoTrust(ctx context.Context, tx pgx.Tx, projectID int64) ([]int64, error) {
	rows, err := tx.Query(ctx, `
		WITH gone AS (
			DELETE FROM trust_routes t USING item_counts c
			WHERE t.project_id = $1 AND c.item_id = t.item_id AND c.done = 0
			RETURNING t.item_id, t.decision, t.held),
		released AS (
			UPDATE item_counts c SET held = false FROM gone
			WHERE c.item_id = gone.item_id AND gone.held AND c.held
			RETURNING c.item_id),
		ungold AS (
			DELETE FROM gold_labels g USING gone
			WHERE g.item_id = gone.item_id AND gone.decision = 'kept' AND g.method = 'trusted_judge'
			RETURNING g.item_id)
		SELECT DISTINCT item_id FROM ungold ORDER BY 1`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// TrustRoute is trust routing's decision on one item the judge answered:
// kept, with the judge's answers as its gold (by rubric item key, every
// rubric item) and a note on each, or escalated to people's queue.
// Reason says why, in words a lead reads.
type TrustRoute struct {
	ItemID int64
	Kept   bool
	Reason string
	Gold   map[string]string
	Notes  map[string]string
}

// TrustRouted counts what RouteTrust did: items kept by the judge and
// escalated to people, and those passed over because a person holds or
// has labelled them, a lead took them out of the pool or set their gold,
// or a draw sent them to people.
type TrustRouted struct {
	Kept      int `json:"kept"`
	Escalated int `json:"escalated"`
	Skipped   int `json:"skipped"`
}

// RouteTrust applies trust routing's decisions in one transaction, for a
// judge rater whose routing is on (otherwise attune.ErrConflict): it
// first undoes the routing there is (undoTrust), then, on each item still
// open to routing (no person's answer, held by nobody, in the pool, not
// drawn, no gold a lead set), stores the route; a kept item gets the
// judge's answers as gold of method trusted_judge and is held back from
// people's queues, an escalated one is released to them. Routing is
// serialised with draws and imports. It is audited, and a change of gold
// is announced.
func (db *DB) RouteTrust(ctx context.Context, actorID *int64, projectID, raterID int64, routes []TrustRoute) (TrustRouted, error) {
	var res TrustRouted
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		res = TrustRouted{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.import'), $1::int)`, projectID); err != nil {
			return err
		}
		var on bool
		err := tx.QueryRow(ctx, `SELECT enabled FROM judge_trust WHERE project_id = $1 AND rater_id = $2 FOR UPDATE`, projectID, raterID).Scan(&on)
		if err == pgx.ErrNoRows || err == nil && !on {
			return attune.Conflict("trust routing is off for this judge: turn it on first")
		} else if err != nil {
			return err
		}
		undone, err := undoTrust(ctx, tx, projectID)
		if err != nil {
			return err
		}
		ids := make([]int64, len(routes))
		for i, r := range routes {
			ids[i] = r.ItemID
		}
		// The items open to routing, locked in id order as settle locks
		// them.
		rows, err := tx.Query(ctx, `
			SELECT c.item_id, c.held FROM item_counts c
			WHERE c.project_id = $1 AND c.item_id = ANY($2) AND NOT c.pulled AND c.done = 0 AND c.holds = 0
			  AND NOT EXISTS (SELECT 1 FROM draw_items d WHERE d.item_id = c.item_id)
			  AND NOT EXISTS (SELECT 1 FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE s.item_id = c.item_id AND r.kind = 'human')
			  AND NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.item_id = c.item_id AND g.method = 'adjudicated')
			ORDER BY c.item_id FOR NO KEY UPDATE OF c`, projectID, ids)
		if err != nil {
			return err
		}
		open := map[int64]bool{} // item → held before routing
		var id int64
		var held bool
		if _, err := pgx.ForEachRow(rows, []any{&id, &held}, func() error { open[id] = held; return nil }); err != nil {
			return err
		}
		var rvID int64
		if err := tx.QueryRow(ctx, `SELECT rubric_version_id FROM projects WHERE id = $1`, projectID).Scan(&rvID); err != nil {
			return err
		}
		var (
			rItems            []int64
			rDecisions, rWhy  []string
			rHeld             []bool
			gItems            []int64
			gKeys, gVals, gNs []string
		)
		for _, r := range routes {
			wasHeld, ok := open[r.ItemID]
			if !ok {
				res.Skipped++
				continue
			}
			rItems, rWhy = append(rItems, r.ItemID), append(rWhy, r.Reason)
			if !r.Kept {
				res.Escalated++
				rDecisions, rHeld = append(rDecisions, TrustEscalated), append(rHeld, false)
				continue
			}
			res.Kept++
			rDecisions, rHeld = append(rDecisions, TrustKept), append(rHeld, !wasHeld)
			for k, v := range r.Gold {
				gItems, gKeys, gVals, gNs = append(gItems, r.ItemID), append(gKeys, k), append(gVals, v), append(gNs, r.Notes[k])
			}
		}
		if _, err := tx.Exec(ctx, `
			WITH routed AS (
				INSERT INTO trust_routes (item_id, project_id, rater_id, decision, reason, held)
				SELECT t.i, $1, $2, t.d, t.r, t.h FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bool[]) AS t(i, d, r, h)
				ON CONFLICT (item_id) DO UPDATE SET rater_id = EXCLUDED.rater_id, decision = EXCLUDED.decision,
					reason = EXCLUDED.reason, held = EXCLUDED.held, decided_at = now()
				RETURNING item_id, decision)
			UPDATE item_counts c SET held = (routed.decision = 'kept') FROM routed
			WHERE c.item_id = routed.item_id AND c.held <> (routed.decision = 'kept')`,
			projectID, raterID, rItems, rDecisions, rWhy, rHeld); err != nil {
			return err
		}
		var written []int64
		if len(gItems) > 0 {
			rows, err := tx.Query(ctx, `
				INSERT INTO gold_labels (project_id, item_id, rubric_version_id, rubric_item_key, value, method, note)
				SELECT $1, t.i, $2, t.k, t.v, 'trusted_judge', t.n FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS t(i, k, v, n)
				ON CONFLICT (item_id, rubric_item_key) DO UPDATE SET value = EXCLUDED.value, note = EXCLUDED.note, method = 'trusted_judge', decided_at = now()
				WHERE gold_labels.method <> 'adjudicated'
				RETURNING item_id`, projectID, rvID, gItems, gKeys, gVals, gNs)
			if err != nil {
				return err
			}
			if written, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE judge_trust SET routed_at = now() WHERE project_id = $1 AND rater_id = $2`, projectID, raterID); err != nil {
			return err
		}
		if err := audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "trust.route", ProjectID: &projectID,
			Subject: fmt.Sprintf("rater:%d", raterID),
			Details: map[string]string{"kept": strconv.Itoa(res.Kept), "escalated": strconv.Itoa(res.Escalated), "skipped": strconv.Itoa(res.Skipped)}}); err != nil {
			return err
		}
		if len(undone) == 0 && len(written) == 0 {
			return nil
		}
		return db.announce(ctx, tx, projectID, attune.EventGoldChanged, map[string]any{
			"how": GoldTrustedJudge, "kept": res.Kept, "escalated": res.Escalated})
	})
	return res, mapErr(err, "route trust", "")
}

// TrustRouteRow is where routing left one item.
type TrustRouteRow struct {
	ItemID    int64
	SourceID  string
	Decision  string // TrustKept or TrustEscalated
	Reason    string
	DecidedAt time.Time
}

// ListTrustRoutes returns the project's routed items of one decision (""
// for both), by item id, at most limit of them (0 for all), and how many
// there are of each decision.
func (db *DB) ListTrustRoutes(ctx context.Context, projectID int64, decision string, limit int) (rows []TrustRouteRow, kept, escalated int, err error) {
	if err = db.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE decision = 'kept'), count(*) FILTER (WHERE decision = 'escalated')
		FROM trust_routes WHERE project_id = $1`, projectID).Scan(&kept, &escalated); err != nil {
		return nil, 0, 0, mapErr(err, "list trust routes", "")
	}
	lim := any(nil)
	if limit > 0 {
		lim = limit
	}
	q, err := db.pool.Query(ctx, `
		SELECT t.item_id, i.source_id, t.decision, t.reason, t.decided_at
		FROM trust_routes t JOIN items i ON i.id = t.item_id
		WHERE t.project_id = $1 AND ($2 = '' OR t.decision = $2)
		ORDER BY t.item_id LIMIT $3`, projectID, decision, lim)
	if err != nil {
		return nil, 0, 0, mapErr(err, "list trust routes", "")
	}
	rows, err = pgx.CollectRows(q, func(r pgx.CollectableRow) (TrustRouteRow, error) {
		var x TrustRouteRow
		return x, r.Scan(&x.ItemID, &x.SourceID, &x.Decision, &x.Reason, &x.DecidedAt)
	})
	return rows, kept, escalated, mapErr(err, "list trust routes", "")
}
