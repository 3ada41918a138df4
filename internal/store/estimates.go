package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/ppi"

	"github.com/jackc/pgx/v5"
)

// EstimateRow is one item as a prediction-powered estimate reads it: the
// system the item names under the chosen meta key ("" when it names
// none), the judge's value and, when Labelled, the human value.
type EstimateRow struct {
	ItemID   int64
	System   string
	Judge    float64
	Human    float64
	Labelled bool
}

// EstimateRead names what an estimate reads: the project, the judge (a
// rater id, a rater's name or a judge's name), the meta key naming an
// item's system, and whose value is the human one: the people's (the
// mean of their answers) or, with Gold, the item's gold answer.
type EstimateRead struct {
	ProjectID  int64
	Judge      string
	RubricItem string // EstimateRubricItem only; EstimateRubricItems is given its keys
	SystemKey  string
	Gold       bool
}

// EstimateRubricItem reads, for one rubric item of the project, every item
// the judge answered with a value: its system (items.meta ->> systemKey),
// the judge's value and the human value, as EstimateRubricItems reads
// them for many rubric items at once. A rubric item nobody answered gives
// no rows, and no error.
func (db *DB) EstimateRubricItem(ctx context.Context, q EstimateRead) ([]EstimateRow, error) {
	byKey, err := db.EstimateRubricItems(ctx, q, []string{q.RubricItem})
	if err != nil {
		return nil, err
	}
	return byKey[q.RubricItem], nil
}

// EstimateRubricItems reads, for each of the rubric items keys of the
// project (q.RubricItem is not read), every item the judge answered with
// a value: its system (items.meta ->> q.SystemKey), the judge's value and
// the human value. A value is its number on a scale item, 1 for YES and 0
// for NO; NA, ERROR and anything else are left out. The judge is a rater
// id or a judge's name (every rater of that judge, or of that name,
// counts, their values averaged). The human value is the mean of the
// people's values, so on YES/NO the share of YES; an item is labelled
// when at least one person gave a value. With Gold the human value is the
// item's gold answer instead, and an item without a gold value is
// unlabelled. Every key asked for is in the map, with its rows in item
// order (none, not nil, for a key nobody answered). A judge with no
// raters answering in the project is attune.ErrNotFound, with a message
// naming it.
//
// It is one pass over the project's answer sets for every key, so that a
// report of every rubric item reads them once, not once per item.
func (db *DB) EstimateRubricItems(ctx context.Context, q EstimateRead, keys []string) (map[string][]EstimateRow, error) {
	_, rows, err := db.readEstimates(ctx, q, keys, nil, true)
	return rows, err
}

// EstimateColumn is one quantity over a project's items as an estimate
// needs it: the values gathered by system (what ppi estimates from,
// without a row per item) and the items people labelled, in item order,
// so that the estimate can say whether attune drew them.
type EstimateColumn struct {
	ppi.Gathered
	Labelled []int64
}

// Add gathers one item's values; human counts only when labelled.
func (c *EstimateColumn) Add(itemID int64, system string, judge, human float64, labelled bool) {
	c.Gathered.Add(system, judge, human, labelled)
	c.noteLabelled(itemID, labelled)
}

// addAt is Add of an item of the system Names[system].
func (c *EstimateColumn) addAt(itemID int64, system int, judge, human float64, labelled bool) {
	c.AddAt(system, judge, human, labelled)
	c.noteLabelled(itemID, labelled)
}

func (c *EstimateColumn) noteLabelled(itemID int64, labelled bool) {
	if labelled {
		c.Labelled = append(c.Labelled, itemID)
	}
}

// EstimateSets is one item as an estimate of the engine's outputs reads
// it: its system, the answer sets of the judge's raters, those of the
// people (left out with Gold) and, with Gold, its gold answers (nil when
// it has none). An answer set maps rubric item keys to values.
type EstimateSets struct {
	ItemID int64
	System string
	Judge  []map[string]string
	People []map[string]string
	Gold   map[string]string
}

// StreamEstimateSets calls fn, in item order, with every item of the
// project the judge answered, as EstimateSets; the judge is named as for
// EstimateRubricItem (attune.ErrNotFound when no rater of it answered).
// It holds one item at a time. An error of fn stops the stream and is
// returned as it is.
func (db *DB) StreamEstimateSets(ctx context.Context, q EstimateRead, fn func(*EstimateSets) error) error {
	_, _, err := db.readEstimates(ctx, q, nil, fn, false)
	return err
}

// ReadEstimates is EstimateRubricItems and StreamEstimateSets in one pass:
// it returns the values of the rubric items keys as the first reads them,
// each key's as an EstimateColumn (every key asked for is in the map)
// and, when sets is not nil, calls it with every item's answer sets as
// the second does, so that the estimates of every rubric item and of an
// outcome of the engine read the project once.
func (db *DB) ReadEstimates(ctx context.Context, q EstimateRead, keys []string, sets func(*EstimateSets) error) (map[string]*EstimateColumn, error) {
	cols, _, err := db.readEstimates(ctx, q, keys, sets, false)
	return cols, err
}

// readEstimates reads for ReadEstimates and, with withRows, also gives
// each key's values as rows, as EstimateRubricItems returns them.
//
// It reads each answer set's answers as the one JSON object the set holds
// (00055), not its label rows: a row per set, a twelfth of the rows, and
// no grouping of labels into sets for PostgreSQL to do.
func (db *DB) readEstimates(ctx context.Context, q EstimateRead, keys []string, sets func(*EstimateSets) error,
	withRows bool) (map[string]*EstimateColumn, map[string][]EstimateRow, error) {
	// No currentLabels first: the answers are read from the sets, which
	// hold them from the submit's commit on; the label rows queued for
	// them (pending.go) are not read here.
	raters, err := db.judgeRaters(ctx, q.ProjectID, q.Judge)
	if err != nil {
		return nil, nil, err
	}
	keyIndex := make(map[string]int, len(keys))
	for i, k := range keys {
		keyIndex[k] = i
	}
	// Systems, keys and values repeat on every row: each is kept once.
	str := interner{}.of

	// The items' systems, then the sets, are read in one snapshot. The
	// systems are read apart, in item order, and matched to the sets
	// here as they go by: joining items in the sets' query hashed every
	// item of the project for each read, and the sort of the sets, at
	// the default 4 MB of work_mem, spilled to disk (EXPLAIN ANALYZE on
	// BenchmarkEstimates' database): together half of the query's time.
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, mapErr(err, "estimate: answer sets", "")
	}
	defer tx.Rollback(ctx) // read only: nothing to keep
	if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
		return nil, nil, mapErr(err, "estimate: answer sets", "")
	}
	var itemIDs []int64
	var itemSystems []string
	itemRows, err := tx.Query(ctx, `SELECT id, coalesce(meta ->> $2, '') FROM items WHERE project_id = $1 ORDER BY id`,
		pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode}, q.ProjectID, q.SystemKey)
	if err != nil {
		return nil, nil, mapErr(err, "estimate: items", "")
	}
	for itemRows.Next() {
		raw := itemRows.RawValues()
		if len(raw) != 2 || len(raw[0]) != 8 {
			itemRows.Close()
			return nil, nil, fmt.Errorf("estimate: items: unexpected row shape")
		}
		itemIDs = append(itemIDs, int64(binary.BigEndian.Uint64(raw[0])))
		itemSystems = append(itemSystems, str(raw[1]))
	}
	if err := itemRows.Err(); err != nil {
		return nil, nil, mapErr(err, "estimate: items", "")
	}
	next := 0 // the sets come in item order: the next item's place is at or after it
	systemOf := func(id int64) (string, error) {
		for next < len(itemIDs) && itemIDs[next] < id {
			next++
		}
		if next == len(itemIDs) || itemIDs[next] != id {
			return "", fmt.Errorf("estimate: answer set of item %d, which is not in project %d", id, q.ProjectID)
		}
		return itemSystems[next], nil
	}

	// Rows come item by item, the judge's sets first, then the people's,
	// then the gold, each side in rater order, so that an item is summed
	// up as its rows go by and one the judge did not answer passed over.
	rows, err := tx.Query(ctx, `
		SELECT s.item_id, CASE WHEN r.kind = 'judge' THEN 0 ELSE 1 END::int8 AS side, s.rater_id, s.answers::text
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		WHERE s.project_id = $1 AND ((r.kind = 'human' AND NOT $3) OR s.rater_id = ANY ($2::bigint[]))
		UNION ALL
		SELECT g.item_id, 2, 0, g.gold::text FROM item_gold g WHERE $3 AND g.project_id = $1
		ORDER BY 1, 2, 3`,
		pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode},
		q.ProjectID, raters, q.Gold)
	if err != nil {
		return nil, nil, mapErr(err, "estimate: answer sets", "")
	}
	defer rows.Close()

	type number struct {
		x  float64
		ok bool
	}
	numbers := map[string]number{}
	numberOf := func(v []byte) (float64, bool) {
		switch string(v) { // the values of YES/NO items, without a look-up
		case "YES":
			return 1, true
		case "NO":
			return 0, true
		}
		if n, ok := numbers[string(v)]; ok {
			return n.x, n.ok
		}
		x, ok := valueNumber(string(v))
		numbers[string(v)] = number{x, ok}
		return x, ok
	}
	// The item being summed: per key, the judge's and the people's (or
	// the gold's) sums and counts.
	judgeSum, humanSum := make([]float64, len(keys)), make([]float64, len(keys))
	judgeN, humanN := make([]int, len(keys)), make([]int, len(keys))
	// Every key's values are gathered by system (cols), the systems
	// numbered once for all keys, as the items go by; with withRows also
	// kept by column until the end (rowCols), the items once for every
	// key. Growing these, which hold no pointers but the systems, is a
	// plain copy; growing a slice of EstimateRow per key was half of the
	// time of a read.
	cols := make([]*EstimateColumn, len(keys))
	for i := range cols {
		cols[i] = &EstimateColumn{}
	}
	systemAt := map[string]int{}
	var systemNames []string
	var items chunks[estimateItem]
	var rowCols []chunks[estimateValue]
	if withRows {
		rowCols = make([]chunks[estimateValue], len(keys))
	}
	var cur EstimateSets
	started := false
	flush := func() error {
		if !started {
			return nil
		}
		if len(cur.Judge) > 0 {
			system, ok := systemAt[cur.System]
			if !ok {
				system = len(systemNames)
				systemAt[cur.System] = system
				systemNames = append(systemNames, cur.System)
			}
			at := int32(items.len())
			if withRows {
				items.add(estimateItem{cur.ItemID, cur.System})
			}
			for i := range keys {
				if judgeN[i] == 0 {
					continue
				}
				judge, human, labelled := judgeSum[i]/float64(judgeN[i]), math.NaN(), humanN[i] > 0 // NaN: not labelled
				if labelled {
					human = humanSum[i] / float64(humanN[i])
				}
				cols[i].addAt(cur.ItemID, system, judge, human, labelled)
				if withRows {
					rowCols[i].add(estimateValue{item: at, judge: judge, human: human})
				}
			}
		}
		clear(judgeSum)
		clear(humanSum)
		clear(judgeN)
		clear(humanN)
		if sets != nil && len(cur.Judge) > 0 {
			if err := sets(&cur); err != nil {
				return callbackError{err}
			}
		}
		return nil
	}
	// Every set holds its keys in the same order (sorted, 00055), so the
	// key at each place is most often the one seen there last: it is
	// compared with that one before it is looked up.
	type placed struct {
		key   string // interned
		index int    // in keys; -1 when not asked for
	}
	var places []placed
	keyAt := func(j int, b []byte) placed {
		if j < len(places) && places[j].key == string(b) {
			return places[j]
		}
		p := placed{key: str(b), index: -1}
		if i, ok := keyIndex[p.key]; ok {
			p.index = i
		}
		if j < len(places) {
			places[j] = p
		} else { // j == len(places): places are filled in order
			places = append(places, p)
		}
		return p
	}
	valueOf := func(b []byte) string {
		switch string(b) {
		case "YES":
			return "YES"
		case "NO":
			return "NO"
		}
		return str(b)
	}
	var pairs []rawAnswer
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 4 || len(raw[0]) != 8 || len(raw[1]) != 8 {
			return nil, nil, fmt.Errorf("estimate: answer sets: unexpected row shape")
		}
		id := int64(binary.BigEndian.Uint64(raw[0]))
		side := int64(binary.BigEndian.Uint64(raw[1]))
		if !started || id != cur.ItemID {
			if err := flush(); err != nil {
				return nil, nil, unwrapCallback(err)
			}
			started = true
			// The slices are handed to sets afresh for each item: it may
			// keep them.
			system, err := systemOf(id)
			if err != nil {
				return nil, nil, err
			}
			cur = EstimateSets{ItemID: id, System: system}
		}
		if pairs, err = parseAnswers(raw[3], pairs[:0]); err != nil {
			return nil, nil, fmt.Errorf("estimate: item %d: %w", id, err)
		}
		for j, p := range pairs {
			i := keyAt(j, p.key).index
			if i < 0 {
				continue
			}
			x, ok := numberOf(p.value)
			if !ok {
				continue
			}
			if side == 0 {
				judgeSum[i] += x
				judgeN[i]++
			} else {
				humanSum[i] += x
				humanN[i]++
			}
		}
		if sets != nil {
			set := make(map[string]string, len(pairs))
			for j, p := range pairs {
				set[keyAt(j, p.key).key] = valueOf(p.value)
			}
			switch side {
			case 0:
				cur.Judge = append(cur.Judge, set)
			case 1:
				cur.People = append(cur.People, set)
			default:
				cur.Gold = set
			}
		} else if side == 0 {
			cur.Judge = append(cur.Judge[:0], nil) // only whether the judge answered counts
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, mapErr(err, "estimate: answer sets", "")
	}
	if err := flush(); err != nil {
		return nil, nil, unwrapCallback(err)
	}
	byKey := make(map[string]*EstimateColumn, len(keys))
	for i, k := range keys {
		cols[i].Names = systemNames
		byKey[k] = cols[i]
	}
	if !withRows {
		return byKey, nil, nil
	}
	out := make(map[string][]EstimateRow, len(keys))
	for i, k := range keys {
		rows := make([]EstimateRow, 0, rowCols[i].len())
		rowCols[i].each(func(v estimateValue) {
			it := items.at(int(v.item))
			r := EstimateRow{ItemID: it.id, System: it.system, Judge: v.judge}
			if !math.IsNaN(v.human) {
				r.Human, r.Labelled = v.human, true
			}
			rows = append(rows, r)
		})
		out[k] = rows
	}
	return byKey, out, nil
}

// estimateItem is an item the judge answered, and its system.
type estimateItem struct {
	id     int64
	system string
}

// estimateValue is a rubric item's values on an item as ReadEstimates
// gathers them: the item's place among the items, the judge's value and
// the human value (NaN when nobody labelled it).
type estimateValue struct {
	item         int32
	judge, human float64
}

// chunks is a list that grows a chunk at a time: what it holds is never
// copied as it grows, where a slice of a project's items, doubled again
// and again for every rubric item, cost more than the reading itself
// (BenchmarkEstimates, pprof).
type chunks[T any] struct {
	full [][]T
	cur  []T
}

const chunkLen = 4096

func (c *chunks[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]T, 0, chunkLen)
	}
	c.cur = append(c.cur, v)
}

func (c *chunks[T]) len() int { return len(c.full)*chunkLen + len(c.cur) }

func (c *chunks[T]) at(i int) T {
	if n := len(c.full) * chunkLen; i >= n {
		return c.cur[i-n]
	}
	return c.full[i/chunkLen][i%chunkLen]
}

func (c *chunks[T]) each(fn func(T)) {
	for _, ch := range c.full {
		for _, v := range ch {
			fn(v)
		}
	}
	for _, v := range c.cur {
		fn(v)
	}
}

// unwrapCallback returns the error a caller's function returned as it
// is, any other error mapped.
func unwrapCallback(err error) error {
	if ce, ok := err.(callbackError); ok {
		return ce.err
	}
	return mapErr(err, "estimate: answer sets", "")
}

// valueNumber is a label's value as a number: a scale's number, 1 for
// YES, 0 for NO; ok is false for anything else (NA, ERROR).
func valueNumber(v string) (float64, bool) {
	switch v {
	case "YES":
		return 1, true
	case "NO":
		return 0, true
	}
	if !plainDecimal(v) {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil
}

// plainDecimal reports whether v is digits, with a leading minus and a
// fractional part allowed: -?[0-9]+(\.[0-9]+)?
func plainDecimal(v string) bool {
	v = strings.TrimPrefix(v, "-")
	whole, frac, dot := strings.Cut(v, ".")
	digits := func(s string) bool {
		if s == "" {
			return false
		}
		for _, c := range []byte(s) {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return digits(whole) && (!dot || digits(frac))
}

// rawAnswer is one key and value of an answer set's JSON, pointing into
// the row it was read from.
type rawAnswer struct{ key, value []byte }

// parseAnswers appends to into the keys and values of a JSON object of
// strings, as answer sets hold their answers. Plain strings, which are
// what rubric keys and values are, are read in place; an object with an
// escape in it, or anything but strings, is left to encoding/json.
func parseAnswers(b []byte, into []rawAnswer) ([]rawAnswer, error) {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	str := func() ([]byte, bool) {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		start := i + 1
		for j := start; j < len(b); j++ {
			switch b[j] {
			case '"':
				i = j + 1
				return b[start:j], true
			case '\\':
				return nil, false
			}
		}
		return nil, false
	}
	ws()
	if i < len(b) && b[i] == '{' {
		i++
		first := true
		for {
			ws()
			if i < len(b) && b[i] == '}' {
				i++
				ws()
				if i == len(b) {
					return into, nil
				}
				break
			}
			if !first {
				if i >= len(b) || b[i] != ',' {
					break
				}
				i++
				ws()
			}
			first = false
			k, ok := str()
			if !ok {
				break
			}
			ws()
			if i >= len(b) || b[i] != ':' {
				break
			}
			i++
			ws()
			v, ok := str()
			if !ok {
				break
			}
			into = append(into, rawAnswer{k, v})
		}
	}
	// Not the plain object above: read it properly.
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return into, fmt.Errorf("answers %.80q are not an object of strings: %w", b, err)
	}
	into = into[:0]
	for k, v := range m {
		into = append(into, rawAnswer{[]byte(k), []byte(v)})
	}
	return into, nil
}

// EstimateJudges names every judge with answers in the project as
// EstimateRubricItem accepts it: the judge's name for attune's judges,
// the rater's name for judges whose labels were imported; sorted, each
// once.
func (db *DB) EstimateJudges(ctx context.Context, projectID int64) ([]string, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT DISTINCT coalesce(j.name, r.name)
		FROM (SELECT DISTINCT rater_id FROM answer_sets WHERE project_id = $1) s
		JOIN raters r ON r.id = s.rater_id AND r.kind = 'judge'
		LEFT JOIN judges j ON j.id = r.judge_id
		ORDER BY 1`, projectID)
	if err != nil {
		return nil, mapErr(err, "estimate judges", "")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, mapErr(err, "estimate judges", "")
}

// judgeRaters are the raters of a judge answering in the project: the
// judge named by a rater id, a rater's name or a judge's name. None is
// attune.ErrNotFound, with a message naming it.
func (db *DB) judgeRaters(ctx context.Context, projectID int64, judge string) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT r.id FROM raters r
		WHERE r.kind = 'judge'
		  AND (r.id::text = $2 OR r.name = $2 OR r.judge_id IN (SELECT id FROM judges WHERE name = $2))
		  AND EXISTS (SELECT 1 FROM answer_sets a WHERE a.project_id = $1 AND a.rater_id = r.id)
		ORDER BY r.id`, projectID, judge)
	if err != nil {
		return nil, mapErr(err, "judge raters", "")
	}
	raters, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, mapErr(err, "judge raters", "")
	}
	if len(raters) == 0 {
		return nil, attune.NotFound(fmt.Sprintf("no judge %q has answers in this project", judge))
	}
	return raters, nil
}
