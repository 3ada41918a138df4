package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// MaxDrillPage bounds the items one page of a drill-down lists.
const MaxDrillPage = 100

// DrillScan bounds the items of the project one page of a drill-down
// looks through, so that a page costs the same however large the project:
// where fewer items than a page match among them, the page ends early and
// the next one goes on from there.
const DrillScan = 50_000

// DrillFilter chooses the items of a drill-down: the items of one rubric
// item where side A and side B answered as the filter says. A report's
// every figure about a pair of raters, a judge or a boundary links to one.
type DrillFilter struct {
	// Key is the rubric item.
	Key string
	// A is a rater; 0 is any person.
	A int64
	// B is a rater; 0 with Gold and Consensus false is any person other
	// than A's rater. Gold compares A with the item's gold value instead;
	// Consensus with the consensus of the people other than A: their
	// median (the lower of the two middle answers of an even number) when
	// Median is set, otherwise the one answer most of them gave (an item
	// where two answers tie, or fewer than two people answered, has none).
	B         int64
	Gold      bool
	Consensus bool
	Median    bool
	// ValueA and ValueB, both set, keep exactly the items where A answered
	// ValueA and B ValueB: one cell of the pair's confusion matrix (on the
	// diagonal, the items they agree on). Otherwise the items where the
	// two sides answered differently, with A's answer ValueA or B's ValueB
	// where either is set.
	ValueA, ValueB string
	// Failing, when set, keeps instead the items where both sides gave one
	// of these answers (the rubric item's failing ones, whose turns the
	// drill-down sets side by side), alike or not; ValueA and ValueB
	// narrow each side further.
	Failing []string
	// Boundary, above 0, keeps the pairs of numeric answers that lie on
	// either side of the boundary Boundary|Boundary+1 (the lower at most
	// Boundary, the higher above it).
	Boundary int
	// NAMissing leaves NA answers out on both sides (and out of the
	// consensus), as the report does when NA is missing.
	NAMissing bool
	// Frozen keeps only the items an experiment compares variants on (see
	// ExperimentItems).
	Frozen bool
	// After is the keyset: only items whose id is above it.
	After int64
	// Limit is the page's size, 1 to MaxDrillPage (other values:
	// MaxDrillPage).
	Limit int
	// Scan is how many of the project's items the page looks through, 1
	// to DrillScan (other values: DrillScan).
	Scan int
}

// DrillPage is one page of a drill-down.
type DrillPage struct {
	Items []DrillItem
	// Next is the After of the next page, or 0 on the last one. A page
	// that looked through DrillScan items may list fewer than its Limit,
	// none even, and still have a next page.
	Next int64
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
	// Evidence is the turns the rater marked where the answer fails, as
	// the workspace numbers them; nil when none.
	Evidence []int
}

// frozenItem is the condition an item, its id the SQL expression id, meets
// to be in an experiment's frozen set: it has gold answers and the answer
// sets of at least two people. ExperimentItems and the drill-down share it
// so that a figure and the items behind it count the same items.
func frozenItem(id string) string {
	return `EXISTS (SELECT 1 FROM gold_labels fg WHERE fg.item_id = ` + id + `)
		AND (SELECT count(*) FROM answer_sets fs JOIN raters fr ON fr.id = fs.rater_id WHERE fs.item_id = ` + id + ` AND fr.kind = 'human') >= 2`
}

// drillArgs numbers a query's arguments as its text is put together.
type drillArgs []any

func (a *drillArgs) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// DrillItems returns a page of the items of the project that the filter
// keeps, by ascending item id. ERROR answers (a failed judge call) are
// never compared. A page looks through at most DrillScan of the project's
// items.
func (db *DB) DrillItems(ctx context.Context, projectID int64, f DrillFilter) (DrillPage, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return DrillPage{}, err
	}
	if f.Limit < 1 || f.Limit > MaxDrillPage {
		f.Limit = MaxDrillPage
	}
	if f.Scan < 1 || f.Scan > DrillScan {
		f.Scan = DrillScan
	}
	// Both sides are read from labels_project_key_idx in item order, the
	// rater and value included, so that merging them never visits a
	// label's row. Gold takes rater id -1, never "the same rater".
	var args drillArgs
	// after and below, the window's bounds, and the limit are set for
	// each window.
	project, after, below, key := args.add(projectID), args.add(int64(0)), args.add(int64(0)), args.add(f.Key)
	people := "ARRAY(SELECT id FROM raters WHERE kind = 'human')"
	// num is a numeric answer's number, computed under a CASE so that a
	// word is never cast.
	num := func(v string) string { return "CASE WHEN " + v + " ~ '^[0-9]{1,9}$' THEN " + v + "::int END" }
	labels := func(l string) string {
		s := fmt.Sprintf(`labels %[1]s WHERE %[1]s.project_id = %[2]s AND %[1]s.rubric_item_key = %[3]s
			AND %[1]s.item_id > %[4]s AND %[1]s.item_id < %[5]s AND %[1]s.value <> 'ERROR'`, l, project, key, after, below)
		if f.NAMissing {
			s += " AND " + l + ".value <> 'NA'"
		}
		return s
	}
	var raterA string
	sideA := "SELECT l.item_id, l.rater_id, l.value, " + num("l.value") + " AS num FROM " + labels("l")
	if f.A > 0 {
		raterA = args.add(f.A)
		sideA += " AND l.rater_id = " + raterA
	} else {
		sideA += " AND l.rater_id = ANY(" + people + ")"
	}
	others := "l.rater_id = ANY(" + people + ")"
	if raterA != "" {
		others += " AND l.rater_id <> " + raterA
	}
	var sideB string
	switch {
	case f.Gold:
		sideB = fmt.Sprintf(`SELECT g.item_id, -1::bigint AS rater_id, g.value, %s AS num FROM gold_labels g
			WHERE g.project_id = %s AND g.rubric_item_key = %s AND g.item_id > %s AND g.item_id < %s`, num("g.value"), project, key, after, below)
		if f.NAMissing {
			sideB += " AND g.value <> 'NA'"
		}
	case f.Consensus && f.Median:
		sideB = fmt.Sprintf(`SELECT m.item_id, -1::bigint AS rater_id, m.num::text AS value, m.num FROM (
				SELECT l.item_id, percentile_disc(0.5) WITHIN GROUP (ORDER BY %s) AS num, count(*) AS n
				FROM %s AND %s AND l.value ~ '^[0-9]{1,9}$' GROUP BY l.item_id) m
			WHERE m.n >= 2`, num("l.value"), labels("l"), others)
	case f.Consensus:
		// The answer most people gave: the first by count, if the runner-up
		// has fewer.
		sideB = fmt.Sprintf(`SELECT m.item_id, -1::bigint AS rater_id, m.value, %s AS num FROM (
				SELECT l.item_id, l.value, count(*) AS n, sum(count(*)) OVER (PARTITION BY l.item_id) AS answered,
				       lead(count(*)) OVER (PARTITION BY l.item_id ORDER BY count(*) DESC) AS runner_up,
				       row_number() OVER (PARTITION BY l.item_id ORDER BY count(*) DESC) AS place
				FROM %s AND %s GROUP BY l.item_id, l.value) m
			WHERE m.place = 1 AND m.answered >= 2 AND (m.runner_up IS NULL OR m.runner_up < m.n)`, num("m.value"), labels("l"), others)
	case f.B > 0:
		sideB = "SELECT l.item_id, l.rater_id, l.value, " + num("l.value") + " AS num FROM " + labels("l") + " AND l.rater_id = " + args.add(f.B)
	default:
		sideB = "SELECT l.item_id, l.rater_id, l.value, " + num("l.value") + " AS num FROM " + labels("l") + " AND l.rater_id = ANY(" + people + ")"
	}
	var where []string
	if len(f.Failing) > 0 {
		fails := args.add(f.Failing)
		where = append(where, "a.value = ANY("+fails+"::text[])", "b.value = ANY("+fails+"::text[])")
		if f.ValueA != "" {
			where = append(where, "a.value = "+args.add(f.ValueA))
		}
		if f.ValueB != "" {
			where = append(where, "b.value = "+args.add(f.ValueB))
		}
	} else if f.ValueA != "" && f.ValueB != "" {
		where = append(where, "a.value = "+args.add(f.ValueA), "b.value = "+args.add(f.ValueB))
	} else {
		where = append(where, "a.value <> b.value")
		if f.ValueA != "" {
			where = append(where, "a.value = "+args.add(f.ValueA))
		}
		if f.ValueB != "" {
			where = append(where, "b.value = "+args.add(f.ValueB))
		}
	}
	if f.Boundary > 0 {
		k := args.add(f.Boundary)
		where = append(where, "a.num IS NOT NULL AND b.num IS NOT NULL AND LEAST(a.num, b.num) <= "+k+" AND GREATEST(a.num, b.num) > "+k)
	}
	where = append(where, "EXISTS (SELECT 1 FROM items i WHERE i.id = a.item_id AND i.project_id = "+project+")")
	if f.Frozen {
		where = append(where, frozenItem("a.item_id"))
	}
	limit := args.add(0)
	query := `
		SELECT DISTINCT a.item_id
		FROM (` + sideA + `) a JOIN (` + sideB + `) b ON b.item_id = a.item_id AND b.rater_id <> a.rater_id
		WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY a.item_id LIMIT ` + limit

	// The page looks through windows of the project's items in id order,
	// a small one first (a 25th of f.Scan: 2,000 items), so that a page
	// that fills at once, the common case, reads little whatever a side
	// must gather per item, and each further one four times larger, up to
	// f.Scan items in all.
	var page DrillPage
	var ids []int64
	from, size := f.After, max(1, f.Scan/25)
	for scanned := 0; ; {
		size = min(size, f.Scan-scanned)
		// The window: the next size items after from, those below the
		// first item beyond them (none: the window reaches the end).
		var beyond int64
		err := db.pool.QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND id > $2 ORDER BY id OFFSET $3 LIMIT 1`,
			projectID, from, size).Scan(&beyond)
		end := errors.Is(err, pgx.ErrNoRows)
		switch {
		case end:
			beyond = math.MaxInt64
		case err != nil:
			return DrillPage{}, mapErr(err, "drill items", "")
		}
		args[1], args[2], args[len(args)-1] = from, beyond, f.Limit+1-len(ids)
		rows, err := db.pool.Query(ctx, query, args...)
		if err != nil {
			return DrillPage{}, mapErr(err, "drill items", "")
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return DrillPage{}, mapErr(err, "drill items", "")
		}
		ids = append(ids, found...)
		scanned += size
		if len(ids) > f.Limit {
			ids = ids[:f.Limit]
			page.Next = ids[len(ids)-1]
			break
		}
		if end {
			break
		}
		// Every item of the project below beyond was looked through.
		from = beyond - 1
		if scanned >= f.Scan {
			page.Next = from
			break
		}
		size *= 4
	}
	if len(ids) == 0 {
		return page, nil
	}
	items, err := db.drillDetails(ctx, projectID, f.Key, ids)
	page.Items = items
	return page, err
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
		       COALESCE(NULLIF(l.rationale, ''), s.rationale), COALESCE(d.method, ''), COALESCE(d.raw, ''), l.evidence
		FROM labels l JOIN raters r ON r.id = l.rater_id JOIN answer_sets s ON s.id = l.answer_set_id
		LEFT JOIN judge_label_details d ON d.label_id = l.id
		WHERE l.item_id = ANY($1) AND l.rubric_item_key = $2
		ORDER BY l.item_id, r.kind = 'judge', r.name, r.id`, ids, key)
	if err != nil {
		return nil, mapErr(err, "drill labels", "")
	}
	var itemID int64
	var lb DrillLabel
	_, err = pgx.ForEachRow(rows, []any{&itemID, &lb.RaterID, &lb.Name, &lb.Kind, &lb.Imported, &lb.Value, &lb.Rationale, &lb.Method, &lb.Raw, &lb.Evidence}, func() error {
		if i, ok := at[itemID]; ok {
			l := lb
			if len(l.Evidence) == 0 {
				l.Evidence = nil
			}
			out[i].Labels = append(out[i].Labels, l)
			lb.Evidence = nil // the next row scans into a slice of its own
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
		SELECT g.item_id, g.rubric_item_key, g.value FROM gold_labels g
		WHERE g.project_id = $1 AND g.item_id BETWEEN $2 AND $3`, projectID, minItem, maxItem)
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
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	return db.drillDetails(ctx, projectID, "", ids)
}

// FrozenItems returns which of the project's items with ids in [minItem,
// maxItem] are in an experiment's frozen set (see ExperimentItems).
func (db *DB) FrozenItems(ctx context.Context, projectID, minItem, maxItem int64) (map[int64]bool, error) {
	rows, err := db.pool.Query(ctx, `SELECT i.id FROM items i WHERE i.project_id = $1 AND i.id BETWEEN $2 AND $3 AND `+frozenItem("i.id"),
		projectID, minItem, maxItem)
	if err != nil {
		return nil, mapErr(err, "frozen items", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, mapErr(err, "frozen items", "")
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
