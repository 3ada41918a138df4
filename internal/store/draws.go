package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// DrawRequest is a draw asked of DrawItems: K items of the project held
// back from people's queues, of the system named System under the meta
// key SystemKey ("" for any system; NoSystem for the items that name none).
type DrawRequest struct {
	ProjectID int64
	ActorID   *int64 // nil for the operator at the machine
	K         int
	SystemKey string
	System    string
}

// NoSystem asks a draw for the items whose meta names no system under the
// key (the ppi package shows them as "(none)").
const NoSystem = "(none)"

// Draw is a stored draw: who drew, from what, with which seed, and the
// items drawn, in draw order.
type Draw struct {
	ID        int64
	ProjectID int64
	ActorID   *int64
	Actor     string // the actor's email, "" when the account is gone
	Seed      uint64
	K         int
	SystemKey string
	System    string // "" for any system
	CreatedAt time.Time
	Items     []DrawnItem
}

// DrawnItem is one item of a draw.
type DrawnItem struct {
	ID       int64
	SourceID string
}

// DrawPick chooses the items of a draw from pool (every item that may be
// drawn, in id order) and says which seed reproduces the choice. An error
// stops the draw and is returned as it is.
type DrawPick func(pool []int64) (picked []int64, seed uint64, err error)

// DrawItems makes a draw in one transaction: on the project's first draw
// it turns the project to drawn queues, holding back from people's queues
// every item nobody has labelled or holds (and every item imported from
// then on); it reads the pool — held items not taken out of the pool and
// with no human label, of the system asked for — lets pick choose, stores
// the draw and its items with an audit event, and releases the drawn
// items to people's queues. Draws of a project are serialised with each
// other and with its imports, and an item is drawn at most once, so two
// concurrent draws never send the same item. Nothing is stored when pick
// fails. A project that is not there is attune.ErrNotFound.
func (db *DB) DrawItems(ctx context.Context, req DrawRequest, pick DrawPick) (Draw, error) {
	var d Draw
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.import'), $1::int)`, req.ProjectID); err != nil {
			return err
		}
		var drawn bool
		if err := tx.QueryRow(ctx, `SELECT drawn_queue FROM projects WHERE id = $1`, req.ProjectID).Scan(&drawn); err != nil {
			return err
		}
		if !drawn {
			// From now on only drawn items reach people. Items someone
			// holds or has labelled go on as they were: they are in
			// people's hands already.
			if _, err := tx.Exec(ctx, `
				WITH p AS (UPDATE projects SET drawn_queue = true WHERE id = $1)
				UPDATE item_counts c SET held = true
				WHERE c.project_id = $1 AND c.done = 0 AND c.holds = 0 AND NOT c.held
				  AND NOT EXISTS (SELECT 1 FROM draw_items d WHERE d.item_id = c.item_id)`, req.ProjectID); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `
			SELECT c.item_id FROM item_counts c JOIN items i ON i.id = c.item_id
			WHERE c.project_id = $1 AND c.held AND NOT c.pulled AND c.done = 0
			  AND ($2 = '' OR coalesce(i.meta ->> $3, $4) = $2)
			ORDER BY c.item_id`, req.ProjectID, req.System, req.SystemKey, NoSystem)
		if err != nil {
			return err
		}
		pool, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		picked, seed, err := pick(pool)
		if err != nil {
			return err
		}
		if len(picked) == 0 {
			return attune.Invalid("k", "a draw must draw at least one item")
		}
		var system *string
		if req.System != "" {
			system = &req.System
		}
		d = Draw{ProjectID: req.ProjectID, ActorID: req.ActorID, Seed: seed, K: len(picked), SystemKey: req.SystemKey, System: req.System}
		if err := tx.QueryRow(ctx, `
			INSERT INTO draws (project_id, actor_id, seed, k, system_key, system) VALUES ($1, $2, $3::text::numeric, $4, $5, $6)
			RETURNING id, created_at, coalesce((SELECT email FROM users WHERE id = $2), '')`,
			req.ProjectID, req.ActorID, strconv.FormatUint(seed, 10), len(picked), req.SystemKey, system).
			Scan(&d.ID, &d.CreatedAt, &d.Actor); err != nil {
			return err
		}
		// Only held items of the pool are released; anything else picked
		// (not in the pool, drawn already) leaves the count short and the
		// draw is undone.
		rows, err = tx.Query(ctx, `
			WITH drawn AS (
				INSERT INTO draw_items (draw_id, position, item_id)
				SELECT $1, p.ord - 1, p.id FROM unnest($2::bigint[]) WITH ORDINALITY AS p(id, ord)
				RETURNING item_id, position),
			released AS (
				UPDATE item_counts c SET held = false FROM drawn
				WHERE c.item_id = drawn.item_id AND c.project_id = $3 AND c.held
				RETURNING c.item_id)
			SELECT drawn.item_id, i.source_id FROM drawn
			JOIN released ON released.item_id = drawn.item_id
			JOIN items i ON i.id = drawn.item_id
			ORDER BY drawn.position`, d.ID, picked, req.ProjectID)
		if err != nil {
			return err
		}
		d.Items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DrawnItem, error) {
			var it DrawnItem
			return it, r.Scan(&it.ID, &it.SourceID)
		})
		if err != nil {
			return err
		}
		if len(d.Items) != len(picked) {
			return fmt.Errorf("store: draw: %d of %d picked items were held back in the project", len(d.Items), len(picked))
		}
		details := map[string]string{"k": strconv.Itoa(d.K), "seed": strconv.FormatUint(seed, 10), "system_key": req.SystemKey}
		if req.System != "" {
			details["system"] = req.System
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: req.ActorID, Action: "draw.create", ProjectID: &req.ProjectID,
			Subject: fmt.Sprintf("draw:%d", d.ID), Details: details})
	})
	if err != nil {
		return Draw{}, mapErr(err, "draw items", "an item of this draw was drawn already")
	}
	return d, nil
}

// ListDraws returns the project's draws, oldest first, each with its
// items in draw order.
func (db *DB) ListDraws(ctx context.Context, projectID int64) ([]Draw, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT d.id, d.actor_id, coalesce(u.email, ''), d.seed::text, d.k, d.system_key, coalesce(d.system, ''), d.created_at,
		       array(SELECT di.item_id FROM draw_items di WHERE di.draw_id = d.id ORDER BY di.position),
		       array(SELECT i.source_id FROM draw_items di JOIN items i ON i.id = di.item_id WHERE di.draw_id = d.id ORDER BY di.position)
		FROM draws d LEFT JOIN users u ON u.id = d.actor_id
		WHERE d.project_id = $1
		ORDER BY d.id`, projectID)
	if err != nil {
		return nil, mapErr(err, "list draws", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Draw, error) {
		d := Draw{ProjectID: projectID}
		var seed string
		var ids []int64
		var sources []string
		if err := r.Scan(&d.ID, &d.ActorID, &d.Actor, &seed, &d.K, &d.SystemKey, &d.System, &d.CreatedAt, &ids, &sources); err != nil {
			return d, err
		}
		s, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return d, fmt.Errorf("seed %q of draw %d: %w", seed, d.ID, err)
		}
		d.Seed = s
		if len(ids) != len(sources) {
			return d, fmt.Errorf("draw %d: %d items but %d source ids", d.ID, len(ids), len(sources))
		}
		d.Items = make([]DrawnItem, len(ids))
		for i := range ids {
			d.Items[i] = DrawnItem{ID: ids[i], SourceID: sources[i]}
		}
		return d, nil
	})
	return out, mapErr(err, "list draws", "")
}

// DrawPool counts the items a draw could draw now, per system under the
// meta key (NoSystem for items that name none): held back from people's
// queues, in the pool, with no human label. In a project that has not
// drawn yet nothing is held back, so it counts the items its first draw
// would hold back and draw from.
func (db *DB) DrawPool(ctx context.Context, projectID int64, systemKey string) (map[string]int, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT coalesce(i.meta ->> $2, $3), count(*)
		FROM item_counts c JOIN items i ON i.id = c.item_id JOIN projects p ON p.id = c.project_id
		WHERE c.project_id = $1 AND NOT c.pulled AND c.done = 0
		  AND (c.held OR NOT p.drawn_queue AND c.holds = 0 AND NOT EXISTS (SELECT 1 FROM draw_items d WHERE d.item_id = c.item_id))
		GROUP BY 1`, projectID, systemKey, NoSystem)
	if err != nil {
		return nil, mapErr(err, "draw pool", "")
	}
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			rows.Close()
			return nil, mapErr(err, "draw pool", "")
		}
		out[name] = n
	}
	return out, mapErr(rows.Err(), "draw pool", "")
}
