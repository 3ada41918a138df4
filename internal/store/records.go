package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/attune/attune/internal/export"
)

// ExportRecords streams the project's items for the dataset export: one
// Record per item in import order, with its dialogue, its gold and every
// rater's answers, for rubric items keys (the project's rubric, in rubric
// order). With export.WhichGold only items with some gold are read (the
// writer keeps those with gold on every rubric item). It returns how many
// records it emitted; emit must not keep the record, and an error from
// emit is returned as it is.
//
// Three ordered streams are read side by side and merged by item id: the
// items with their dialogue, each item's copy of its gold, and every
// rater's answer set with its copy of its answers (one row per rater and
// item).
// Each is a plain index-ordered scan on its own connection, so PostgreSQL
// neither sorts nor aggregates, works on up to three cores, and sends rows
// as they are read; the connections share one snapshot
// (pg_export_snapshot), so the streams agree as if read by one query.
// Nothing holds more than an item at a time.
func (db *DB) ExportRecords(ctx context.Context, projectID int64, keys []string, which export.Which, emit func(*export.Record) error) (int, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // the turns of answer sets submitted a moment ago (pending.go)
		return 0, err
	}
	n, err := db.exportRecords(ctx, projectID, keys, which, emit)
	return n, exportErr(db.timedOut(ctx, ReadExport, err), "export records")
}

// keyedAnswer is one answer of a JSON object of answers: the rubric
// item's place in the export's keys and the value.
type keyedAnswer struct {
	key   int
	value string
}

// maxAnswerObjects bounds the distinct objects of answers an export
// remembers: 4,096 take well under a megabyte.
const maxAnswerObjects = 4096

// recordConns is how many connections a dataset export holds.
const recordConns = 3

// The dataset export's three streams, each in item order.
const (
	// The items with their dialogue.
	// The last column is the item's system, its meta under the project's
	// system key (looked up once, as an init plan).
	recordItemsSQL = `SELECT i.id, i.source_id, i.messages::text, i.meta::text, i.meta ->> (SELECT p.system_key FROM projects p WHERE p.id = $1)
		FROM items i WHERE i.project_id = $1 ORDER BY i.id`
	// Only the items with gold: a merge join with the ids of the gold's
	// copy (migration 00039), read in the same order.
	recordGoldItemsSQL = `SELECT i.id, i.source_id, i.messages::text, i.meta::text, i.meta ->> (SELECT p.system_key FROM projects p WHERE p.id = $1)
		FROM items i JOIN item_gold g ON g.item_id = i.id AND g.project_id = $1
		WHERE i.project_id = $1
		ORDER BY i.id`
	// Each item's copy of its gold: one row per item.
	recordGoldSQL = `
		SELECT g.item_id, 0::bigint, g.gold, CASE WHEN g.adjudicated THEN 'adjudicated' WHEN g.trusted THEN 'trusted_judge' ELSE 'automatic' END
		FROM item_gold g
		WHERE g.project_id = $1
		ORDER BY g.item_id`
	// Each answer set's copy of its labels (migration 00038): one row per
	// rater and item. Raters are put in order per item as they are read.
	// The set's turn evidence comes beside its answers from the same row,
	// which every writer keeps (00055), as its JSON object, or null when
	// it has none, as most sets: no label is visited.
	recordAnswersSQL = `
		SELECT s.item_id, s.rater_id, s.answers, NULLIF(s.evidence::text, '{}')
		FROM answer_sets s
		WHERE s.project_id = $1
		ORDER BY s.item_id`
	// recordPlanSettings hold the planner to the streams' design: each a
	// scan of its project's index, in order, sent as it is read. Left to
	// itself it read the items of a project that was not the database's
	// first through the primary key, every other project's items filtered
	// out on the way (its cost model takes the project index's heap reads
	// for random ones), and sorted the other two streams after a bitmap
	// or sequential scan. The export reads what is cached or on SSD, where
	// a page out of order costs little more than the next one.
	recordPlanSettings = `SET LOCAL random_page_cost = 1.1; SET LOCAL enable_sort = off`
)

func (db *DB) exportRecords(ctx context.Context, projectID int64, keys []string, which export.Which, emit func(*export.Record) error) (int, error) {
	// The export's connections are lead-read slots, taken together
	// before it starts (all of them when there are fewer), so that
	// exports waiting for a second connection can never hold the pool
	// between them, and annotators keep the rest.
	if db.pool.Config().MaxConns < recordConns {
		return 0, fmt.Errorf("the dataset export needs a pool of at least %d connections", recordConns)
	}
	_, release, err := db.takeReads(ctx, ReadExport, recordConns, recordConns)
	if err != nil {
		return 0, err
	}
	defer release()
	conns := make([]*pgxpool.Conn, 0, recordConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range recordConns {
		c, err := db.pool.Acquire(ctx)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	txs := make([]pgx.Tx, 0, recordConns)
	defer func() {
		for _, tx := range txs {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	begin := func(snapshot string) (pgx.Tx, error) {
		tx, err := conns[len(txs)].BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return nil, err
		}
		txs = append(txs, tx)
		sql := recordPlanSettings
		if snapshot != "" {
			sql = "SET TRANSACTION SNAPSHOT " + quoteLiteral(snapshot) + "; " + sql
		}
		if _, err = tx.Exec(ctx, sql); err != nil {
			return nil, err
		}
		// After the snapshot, which must come first.
		return tx, setReadTimeout(ctx, tx, db.readLimits.ExportTimeout)
	}
	main, err := begin("")
	if err != nil {
		return 0, err
	}
	var snapshot string
	if err := main.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return 0, err
	}
	raters, err := recordRaters(ctx, main, projectID)
	if err != nil {
		return 0, err
	}
	goldTx, err := begin(snapshot)
	if err != nil {
		return 0, err
	}
	labelTx, err := begin(snapshot)
	if err != nil {
		return 0, err
	}

	itemsSQL := recordItemsSQL
	if which == export.WhichGold {
		itemsSQL = recordGoldItemsSQL
	}
	items, err := openCursor(ctx, main, "export_items", itemsSQL, projectID)
	if err != nil {
		return 0, err
	}
	defer items.Close()
	gold, err := openAnswerStream(ctx, goldTx, "export_gold", recordGoldSQL, projectID)
	if err != nil {
		return 0, err
	}
	defer gold.rows.Close()
	labels, err := openAnswerStream(ctx, labelTx, "export_answers", recordAnswersSQL, projectID)
	if err != nil {
		return 0, err
	}
	defer labels.rows.Close()

	keyIndex := make(map[string]int, len(keys))
	for i, k := range keys {
		keyIndex[k] = i
	}
	// Answer values and methods are few; each is made a string once.
	interned := map[string]string{}
	intern := func(b []byte) string {
		if s, ok := interned[string(b)]; ok {
			return s
		}
		s := string(b)
		interned[s] = s
		return s
	}
	// The answers of a project's answer sets, and its gold, repeat the same
	// few JSON objects over and over: each is read once, into the rubric
	// items' places and the values' strings, and looked up after that,
	// which costs a fifth of reading it again. The cache stops growing at
	// maxAnswerObjects; the objects after that are read each time.
	objects := map[string][]keyedAnswer{}
	decode := func(obj []byte) ([]keyedAnswer, error) {
		if kv, ok := objects[string(obj)]; ok {
			return kv, nil
		}
		var kv []keyedAnswer
		if err := export.EachAnswer(obj, func(key, value []byte) {
			if k, ok := keyIndex[string(key)]; ok {
				kv = append(kv, keyedAnswer{k, intern(value)})
			}
		}); err != nil {
			return nil, err
		}
		if len(objects) < maxAnswerObjects {
			objects[string(obj)] = kv
		}
		return kv, nil
	}
	var rec export.Record
	rec.Gold = make([]string, len(keys))
	var pool []export.Rating // ratings reused from item to item
	n := 0
	for items.Next() {
		var id int64
		raw := items.RawValues()
		if fd := items.FieldDescriptions(); len(raw) == 5 && binaryInt8(fd[0], raw[0]) && raw[1] != nil {
			id, rec.ItemID = int64(binary.BigEndian.Uint64(raw[0])), string(raw[1])
		} else if err := items.Scan(&id, &rec.ItemID, nil, nil, nil); err != nil {
			return n, err
		}
		rec.Messages, rec.Meta, rec.System = raw[2], raw[3], string(raw[4])
		clear(rec.Gold)
		rec.Decided = ""
		if err := gold.each(id, func(_ int64, raw [][]byte) error {
			kv, err := decode(raw[2])
			for _, a := range kv {
				rec.Gold[a.key] = a.value
			}
			if len(kv) > 0 {
				rec.Decided = intern(raw[3])
			}
			return err
		}); err != nil {
			return n, err
		}
		rec.Ratings = rec.Ratings[:0]
		if err := labels.each(id, func(rater int64, raw [][]byte) error {
			r := raters[rater]
			if r == nil {
				return nil
			}
			kv, err := decode(raw[2])
			if err != nil || len(kv) == 0 {
				return err // no rating without one of the rubric's answers
			}
			if len(rec.Ratings) < len(pool) {
				rec.Ratings = append(rec.Ratings, pool[len(rec.Ratings)])
			} else {
				rec.Ratings = append(rec.Ratings, export.Rating{Values: make([]string, len(keys)), Evidence: make([][]int, len(keys))})
				pool = append(pool, rec.Ratings[len(rec.Ratings)-1])
			}
			last := &rec.Ratings[len(rec.Ratings)-1]
			last.Rater = r.Rater
			clear(last.Values)
			for _, a := range kv {
				last.Values[a.key] = a.value
			}
			for k := range last.Evidence {
				last.Evidence[k] = last.Evidence[k][:0]
			}
			if len(raw) > 3 && raw[3] != nil {
				return readEvidence(raw[3], keyIndex, last.Evidence)
			}
			return nil
		}); err != nil {
			return n, err
		}
		// People first, then judges, each by name.
		slices.SortFunc(rec.Ratings, func(a, b export.Rating) int { return raters[a.Rater.ID].rank - raters[b.Rater.ID].rank })
		if err := emit(&rec); err != nil {
			return n, emitError{err}
		}
		n++
	}
	if err := items.Err(); err != nil {
		return n, err
	}
	return n, errors.Join(gold.rows.Err(), labels.rows.Err())
}

// readEvidence reads an answer set's turn evidence, its JSON object of
// turns by rubric item key, into ev, by the rubric item's place in the
// export's keys, the turns in their stored order; a rubric item not among
// them is skipped.
func readEvidence(text []byte, keyIndex map[string]int, ev [][]int) error {
	var byKey map[string][]int
	if err := json.Unmarshal(text, &byKey); err != nil {
		return fmt.Errorf("turn evidence %q: %w", text, err)
	}
	for key, turns := range byKey {
		if k, known := keyIndex[key]; known {
			ev[k] = append(ev[k], turns...)
		}
	}
	return nil
}

// recordRater is a rater of the project with its place in the order the
// dataset export lists ratings.
type recordRater struct {
	*export.Rater
	rank int
}

// recordRaters reads every rater who answered in the project.
func recordRaters(ctx context.Context, tx pgx.Tx, projectID int64) (map[int64]*recordRater, error) {
	rows, err := tx.Query(ctx, `
		SELECT r.id, r.kind, coalesce(u.email, r.name)
		FROM raters r LEFT JOIN users u ON u.id = r.user_id
		WHERE EXISTS (SELECT 1 FROM answer_sets s WHERE s.rater_id = r.id AND s.project_id = $1)
		ORDER BY r.kind, 3, r.id`, projectID)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (export.Rater, error) {
		var x export.Rater
		err := r.Scan(&x.ID, &x.Kind, &x.Name)
		return x, err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*recordRater, len(list))
	for i := range list {
		out[list[i].ID] = &recordRater{Rater: &list[i], rank: i}
	}
	return out, nil
}

// answerStream reads rows that start with an item id and a rater id,
// ordered by item id, one item's rows at a time: the items' gold and the
// answer sets, each with its answers as one JSON object.
type answerStream struct {
	rows pgx.Rows
	// The row read ahead, not yet handed out.
	ok    bool
	item  int64
	rater int64
}

func openAnswerStream(ctx context.Context, tx pgx.Tx, name, sql string, projectID int64) (*answerStream, error) {
	rows, err := openCursor(ctx, tx, name, sql, projectID)
	if err != nil {
		return nil, err
	}
	s := &answerStream{rows: rows}
	return s, s.advance()
}

func (s *answerStream) advance() error {
	s.ok = s.rows.Next()
	if !s.ok {
		return s.rows.Err()
	}
	// Two bigints in binary, read without Scan, which boxes its arguments
	// and so allocates on every one of the export's many answer rows.
	raw := s.rows.RawValues()
	if fd := s.rows.FieldDescriptions(); len(raw) >= 3 && binaryInt8(fd[0], raw[0]) && binaryInt8(fd[1], raw[1]) {
		s.item, s.rater = int64(binary.BigEndian.Uint64(raw[0])), int64(binary.BigEndian.Uint64(raw[1]))
		return nil
	}
	return s.rows.Scan(append([]any{&s.item, &s.rater}, make([]any, len(raw)-2)...)...)
}

// binaryInt8 reports whether v is a bigint sent in the binary format.
func binaryInt8(fd pgconn.FieldDescription, v []byte) bool {
	return fd.DataTypeOID == pgtype.Int8OID && fd.Format == pgtype.BinaryFormatCode && len(v) == 8
}

// each hands fn the rows of item id, skipping those of items before it
// (items the selection left out), with the row's raw columns. The byte
// slices are valid only during the call.
func (s *answerStream) each(id int64, fn func(rater int64, raw [][]byte) error) error {
	for s.ok && s.item <= id {
		if s.item == id {
			if err := fn(s.rater, s.rows.RawValues()); err != nil {
				return err
			}
		}
		if err := s.advance(); err != nil {
			return err
		}
	}
	return nil
}

// quoteLiteral quotes s as an SQL string literal. SET TRANSACTION SNAPSHOT
// takes no parameters.
func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
