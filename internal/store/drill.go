package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// MaxDrillPage bounds the items one page of a drill-down lists.
const MaxDrillPage = 100

// DrillFilter chooses the items of a drill-down: the items of one rubric
// item where side A and side B answered as the filter says. A report's
// every figure about a pair of raters, a judge or a boundary links to one.
type DrillFilter struct {
	// Key is the rubric item.
	Key string
	// A is a rater; 0 is any person.
	A int64
	// B is a rater; 0 with Gold false is any person other than A's rater;
	// Gold compares A with the item's gold value instead.
	B    int64
	Gold bool
	// ValueA and ValueB, both set, keep exactly the items where A answered
	// ValueA and B ValueB: one cell of the pair's confusion matrix (on the
	// diagonal, the items they agree on). Otherwise the items where the
	// two sides answered differently, with A's answer ValueA or B's ValueB
	// where either is set.
	ValueA, ValueB string
	// Boundary, above 0, keeps the pairs of numeric answers that lie on
	// either side of the boundary Boundary|Boundary+1 (the lower at most
	// Boundary, the higher above it).
	Boundary int
	// After is the keyset: only items whose id is above it.
	After int64
	// Limit is the page's size, 1 to MaxDrillPage (other values:
	// MaxDrillPage).
	Limit int
}

// DrillItem is one item of a drill-down with every rater's answer on the
// rubric item and its gold value.
type DrillItem struct {
	ItemID   int64
	SourceID string
	Messages []attune.Message
	// Labels are every rater's on the rubric item: people first, then
	// judges, each by name.
	Labels []DrillLabel
	// Gold is the gold value and how it was decided; "" when there is none.
	Gold, GoldMethod string
}

// DrillLabel is one rater's answer in a drill-down.
type DrillLabel struct {
	RaterID int64
	Name    string
	Kind    string // human or judge
	// Imported marks a person without an account (a labels import).
	Imported bool
	Value    string
	// Rationale is the label's own, or else the answer set's.
	Rationale string
	// Method and Raw are a judge's: how the answer was reached and the
	// model's raw reply ("" for people and imported judge labels).
	Method, Raw string
}

// DrillItems returns a page of the items of the project that the filter
// keeps, by ascending item id, and whether more follow. ERROR answers (a
// failed judge call) are never compared.
func (db *DB) DrillItems(ctx context.Context, projectID int64, f DrillFilter) ([]DrillItem, bool, error) {
	if f.Limit < 1 || f.Limit > MaxDrillPage {
		f.Limit = MaxDrillPage
	}
	// The numeric value is computed under a CASE so that a word is never
	// cast; gold takes rater id -1, so that it is never "the same rater".
	rows, err := db.pool.Query(ctx, `
		WITH l AS (
			SELECT l.item_id, l.rater_id, r.kind, l.value,
			       CASE WHEN l.value ~ '^[0-9]{1,9}$' THEN l.value::int END AS num
			FROM labels l JOIN items i ON i.id = l.item_id JOIN raters r ON r.id = l.rater_id
			WHERE i.project_id = $1 AND l.rubric_item_key = $2 AND l.value <> 'ERROR' AND l.item_id > $9
		), g AS (
			SELECT g.item_id, -1::bigint AS rater_id, 'gold' AS kind, g.value,
			       CASE WHEN g.value ~ '^[0-9]{1,9}$' THEN g.value::int END AS num
			FROM gold_labels g JOIN items i ON i.id = g.item_id
			WHERE i.project_id = $1 AND g.rubric_item_key = $2 AND g.item_id > $9
		)
		SELECT DISTINCT a.item_id
		FROM l a JOIN (SELECT * FROM l UNION ALL SELECT * FROM g) b ON b.item_id = a.item_id AND b.rater_id <> a.rater_id
		WHERE CASE WHEN $3::bigint > 0 THEN a.rater_id = $3 ELSE a.kind = 'human' END
		  AND CASE WHEN $5::boolean THEN b.kind = 'gold' WHEN $4::bigint > 0 THEN b.rater_id = $4 ELSE b.kind = 'human' END
		  AND CASE WHEN $6 <> '' AND $7 <> '' THEN a.value = $6 AND b.value = $7
		           ELSE a.value <> b.value AND ($6 = '' OR a.value = $6) AND ($7 = '' OR b.value = $7) END
		  AND ($8::int <= 0 OR (a.num IS NOT NULL AND b.num IS NOT NULL AND LEAST(a.num, b.num) <= $8 AND GREATEST(a.num, b.num) > $8))
		ORDER BY a.item_id
		LIMIT $10`,
		projectID, f.Key, f.A, f.B, f.Gold, f.ValueA, f.ValueB, f.Boundary, f.After, f.Limit+1)
	if err != nil {
		return nil, false, mapErr(err, "drill items", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, false, mapErr(err, "drill items", "")
	}
	more := len(ids) > f.Limit
	if more {
		ids = ids[:f.Limit]
	}
	if len(ids) == 0 {
		return nil, false, nil
	}
	items, err := db.drillDetails(ctx, projectID, f.Key, ids)
	return items, more, err
}

// drillDetails loads the dialogue, every label on the rubric item and the
// gold value of each item of ids, in the order of ids.
func (db *DB) drillDetails(ctx context.Context, projectID int64, key string, ids []int64) ([]DrillItem, error) {
	out := make([]DrillItem, 0, len(ids))
	at := map[int64]int{}
	rows, err := db.pool.Query(ctx, `SELECT id, source_id, messages FROM items WHERE project_id = $1 AND id = ANY($2) ORDER BY id`, projectID, ids)
	if err != nil {
		return nil, mapErr(err, "drill items", "")
	}
	var it DrillItem
	var msgs []byte
	_, err = pgx.ForEachRow(rows, []any{&it.ItemID, &it.SourceID, &msgs}, func() error {
		d := DrillItem{ItemID: it.ItemID, SourceID: it.SourceID}
		if err := json.Unmarshal(msgs, &d.Messages); err != nil {
			return fmt.Errorf("item %d messages: %w", it.ItemID, err)
		}
		at[d.ItemID] = len(out)
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "drill items", "")
	}
	rows, err = db.pool.Query(ctx, `
		SELECT l.item_id, r.id, r.name, r.kind, r.kind = 'human' AND r.user_id IS NULL, l.value,
		       COALESCE(NULLIF(l.rationale, ''), s.rationale), COALESCE(d.method, ''), COALESCE(d.raw, '')
		FROM labels l JOIN raters r ON r.id = l.rater_id JOIN answer_sets s ON s.id = l.answer_set_id
		LEFT JOIN judge_label_details d ON d.label_id = l.id
		WHERE l.item_id = ANY($1) AND l.rubric_item_key = $2
		ORDER BY l.item_id, r.kind = 'judge', r.name, r.id`, ids, key)
	if err != nil {
		return nil, mapErr(err, "drill labels", "")
	}
	var itemID int64
	var lb DrillLabel
	_, err = pgx.ForEachRow(rows, []any{&itemID, &lb.RaterID, &lb.Name, &lb.Kind, &lb.Imported, &lb.Value, &lb.Rationale, &lb.Method, &lb.Raw}, func() error {
		if i, ok := at[itemID]; ok {
			out[i].Labels = append(out[i].Labels, lb)
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "drill labels", "")
	}
	rows, err = db.pool.Query(ctx, `SELECT item_id, value, method FROM gold_labels WHERE item_id = ANY($1) AND rubric_item_key = $2`, ids, key)
	if err != nil {
		return nil, mapErr(err, "drill gold", "")
	}
	var value, method string
	_, err = pgx.ForEachRow(rows, []any{&itemID, &value, &method}, func() error {
		if i, ok := at[itemID]; ok {
			out[i].Gold, out[i].GoldMethod = value, method
		}
		return nil
	})
	return out, mapErr(err, "drill gold", "")
}

// GoldSets returns the gold values of the project's items whose ids are
// in [minItem, maxItem], by item id and rubric item key.
func (db *DB) GoldSets(ctx context.Context, projectID, minItem, maxItem int64) (map[int64]map[string]string, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT g.item_id, g.rubric_item_key, g.value FROM gold_labels g JOIN items i ON i.id = g.item_id
		WHERE i.project_id = $1 AND g.item_id BETWEEN $2 AND $3`, projectID, minItem, maxItem)
	if err != nil {
		return nil, mapErr(err, "gold sets", "")
	}
	out := map[int64]map[string]string{}
	var id int64
	var key, value string
	_, err = pgx.ForEachRow(rows, []any{&id, &key, &value}, func() error {
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		out[id][key] = value
		return nil
	})
	return out, mapErr(err, "gold sets", "")
}

// DrillDialogues returns the dialogues of the project's items of ids, in
// the order of ids, without labels.
func (db *DB) DrillDialogues(ctx context.Context, projectID int64, ids []int64) ([]DrillItem, error) {
	return db.drillDetails(ctx, projectID, "", ids)
}
