package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
)

// GoldMaxSpread returns the project's consensus setting: the widest spread
// of a numeric scale within which the median is the consensus.
func (db *DB) GoldMaxSpread(ctx context.Context, projectID int64) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT gold_max_spread FROM projects WHERE id = $1`, projectID).Scan(&n)
	return n, mapErr(err, "gold max spread", "")
}

// SetGoldMaxSpread changes the project's consensus setting, 0 to
// gold.MaxSpreadLimit. Items judged under the old setting are judged again the
// next time the rule is applied.
func (db *DB) SetGoldMaxSpread(ctx context.Context, actorID *int64, projectID int64, spread int) error {
	if p := gold.SpreadProblem(spread); p != "" {
		return attune.Invalid("max_spread", p)
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var old int
		if err := tx.QueryRow(ctx, `SELECT gold_max_spread FROM projects WHERE id = $1 FOR UPDATE`, projectID).Scan(&old); err != nil {
			return err
		}
		if old == spread {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE projects SET gold_max_spread = $2, updated_at = now() WHERE id = $1`, projectID, spread); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "gold.set_max_spread", ProjectID: &projectID,
			Details: map[string]string{"from": fmt.Sprint(old), "to": fmt.Sprint(spread)}})
	})
	return mapErr(err, "set gold max spread", "")
}

// ConsensusOptions control ApplyConsensus.
type ConsensusOptions struct {
	ActorID *int64 // who asked; nil from the command line
	// All judges every item with complete human labels again; otherwise
	// only those never judged, judged under another setting, or with
	// answers given or changed since.
	All bool
	// BatchSize is how many items each transaction settles; 0 means 2000.
	BatchSize int
}

// ConsensusResult counts what ApplyConsensus did.
type ConsensusResult struct {
	Items     int // items judged
	Automatic int // of them, decided by the rule: their gold is automatic
	Queued    int // of them, left to a person
}

// stale selects the items of project $1 the consensus rule should judge:
// human answer sets at least the overlap ($2), no adjudicated gold, and —
// unless $4 asks for all — never judged, judged under another max spread
// ($3), or with an answer set (a person's or a judge's) newer than the
// verdict. Items are i; their verdict, c.
const stale = `
	FROM items i LEFT JOIN gold_consensus c ON c.item_id = i.id AND c.project_id = $1
	WHERE i.project_id = $1
	  AND (SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id
	       WHERE s.item_id = i.id AND r.kind = 'human') >= $2
	  AND NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = $1 AND g.item_id = i.id AND g.method = 'adjudicated')
	  AND ($4 OR c.item_id IS NULL OR c.max_spread <> $3
	       OR EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.updated_at > c.computed_at))`

// ApplyConsensus applies the project's consensus rule (package gold) to the
// items with complete human labels — at least as many people's answer
// sets as the overlap — and no adjudicated gold, as settle does. Labels
// that complete an item, and edits and imports of them, settle their
// items as they are stored; a lead's run catches up with the rest: items
// judged under another max spread, items labelled before the overlap was
// lowered, and judges' answers since (which only move an item in the
// queue), or with All every item again.
//
// Items are settled in batches, one transaction each, so a large project
// never holds a long transaction; a failure keeps the batches done. Gold a
// person set is never touched. The run is written to the audit log, and
// announced when it changed some gold.
func (db *DB) ApplyConsensus(ctx context.Context, projectID int64, opts ConsensusOptions) (ConsensusResult, error) {
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		return ConsensusResult{}, err
	}
	spread, err := db.GoldMaxSpread(ctx, projectID)
	if err != nil {
		return ConsensusResult{}, err
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 2000
	}
	var after int64
	var total settlement
	for {
		var n int
		var s settlement
		once := func() error {
			return db.inTx(ctx, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, `SELECT i.id `+stale+` AND i.id > $5 ORDER BY i.id LIMIT $6`,
					projectID, p.Overlap, spread, opts.All, after, batch)
				if err != nil {
					return err
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil || len(ids) == 0 {
					return err
				}
				n = len(ids)
				if s, err = db.settle(ctx, tx, projectID, ids); err != nil {
					return err
				}
				after = ids[len(ids)-1]
				return nil
			})
		}
		// A batch locks its items' counts in order; an import or a lapsed
		// lease's reclaim may hold some of them, taken in another order.
		// The batch PostgreSQL ends to break such a deadlock is done again.
		err := once()
		for attempt := 1; isDeadlock(err) && attempt < submitAttempts; attempt++ {
			n, s = 0, settlement{}
			err = once()
		}
		if err != nil {
			return total.ConsensusResult, mapErr(err, "apply consensus", "")
		}
		total.add(settlement{ConsensusResult: s.ConsensusResult, changed: s.changed})
		if n < batch {
			break
		}
	}
	// The batches are committed one by one; the announcement comes with
	// the audit entry, after the last.
	res, changed := total.ConsensusResult, len(total.changed)
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if err := audit(ctx, tx, attune.AuditEvent{ActorID: opts.ActorID, Action: "gold.apply_consensus", ProjectID: &projectID,
			Details: map[string]string{"items": fmt.Sprint(res.Items), "automatic": fmt.Sprint(res.Automatic), "queued": fmt.Sprint(res.Queued),
				"changed": fmt.Sprint(changed), "max_spread": fmt.Sprint(spread), "all": fmt.Sprint(opts.All)}}); err != nil {
			return err
		}
		if changed == 0 {
			return nil
		}
		return db.announce(ctx, tx, projectID, attune.EventGoldChanged, map[string]any{
			"how": "consensus", "items": res.Items, "automatic": res.Automatic, "queued": res.Queued, "changed": changed})
	})
	return res, mapErr(err, "apply consensus", "")
}

// settleLabelled settles items whose people's labels were just stored or
// changed in tx (settle), and announces the gold it changed.
func (db *DB) settleLabelled(ctx context.Context, tx pgx.Tx, projectID int64, ids []int64) (settlement, error) {
	s, err := db.settle(ctx, tx, projectID, ids)
	if err != nil {
		return s, err
	}
	return s, db.announceSettled(ctx, tx, projectID, s)
}

// announceSettled announces the gold a settling changed, if any.
func (db *DB) announceSettled(ctx context.Context, tx pgx.Tx, projectID int64, s settlement) error {
	if len(s.changed) == 0 {
		return nil
	}
	data := map[string]any{"how": "consensus", "items": s.Items, "automatic": s.Automatic, "queued": s.Queued, "changed": len(s.changed)}
	if len(s.changed) == 1 {
		// One item, as an adjudication is told: its gold, or null when
		// the rule took its gold away.
		id := s.changed[0]
		data["item_id"], data["item"], data["gold"] = id, s.sources[id], s.gold[id]
	}
	return db.announce(ctx, tx, projectID, attune.EventGoldChanged, data)
}

// raterSet is one rater's answers on one item.
type raterSet struct {
	raterID int64
	human   bool
	answers rubric.Answers
}

// readAnswerSets reads every rater's answers on the items from rows of
// item, rater, human and one label, by item, each item's raters in order.
func readAnswerSets(rows pgx.Rows) (map[int64][]*raterSet, error) {
	defer rows.Close()
	out := map[int64][]*raterSet{}
	var cur *raterSet
	var curItem int64
	for rows.Next() {
		var item, rater int64
		var human bool
		var key, value string
		if err := rows.Scan(&item, &rater, &human, &key, &value); err != nil {
			return nil, err
		}
		if cur == nil || cur.raterID != rater || curItem != item {
			cur, curItem = &raterSet{raterID: rater, human: human, answers: rubric.Answers{}}, item
			out[item] = append(out[item], cur)
		}
		cur.answers[key] = rubric.Value(value)
	}
	return out, rows.Err()
}

// settlement is what settle did.
type settlement struct {
	ConsensusResult
	// changed lists the items whose gold the rule set, changed or took
	// away; sources and gold hold their ids in the dataset and their
	// gold now (nil when they have none).
	changed []int64
	sources map[int64]string
	gold    map[int64]map[string]string
}

// add counts another settling's work in s.
func (s *settlement) add(o settlement) {
	s.Items, s.Automatic, s.Queued = s.Items+o.Items, s.Automatic+o.Automatic, s.Queued+o.Queued
	s.changed = append(s.changed, o.changed...)
	if s.sources == nil {
		s.sources, s.gold = map[int64]string{}, map[int64]map[string]string{}
	}
	maps.Copy(s.sources, o.sources)
	maps.Copy(s.gold, o.gold)
}

// settle applies the project's consensus rule (gold.Decide) to the given
// items and writes its verdicts, in tx. It is the one place where the rule
// decides, whoever asks: a submission that completes an item, an edit of
// labels, an import, a lead's run. Items with fewer people's answer sets
// than the overlap, or with gold a person set, are left as they are. A
// decided item gets automatic gold on every rubric item, replacing earlier
// automatic gold; the others lose any automatic gold and wait in the queue
// of disagreements, ranked worst first. Only people's answers vote; every
// rater's answers, judges' included, count towards a safety concern.
//
// The items' counts rows are locked first, in id order, so that settlings
// of one item follow each other and each sees the labels stored before
// it: a submission holds its item's row already (it moved its counts),
// and an edit or a lead's run waits for it. Not the items' rows: label
// inserts key-share lock those, and a lock on them would deadlock with
// submissions.
func (db *DB) settle(ctx context.Context, tx pgx.Tx, projectID int64, ids []int64) (settlement, error) {
	v, err := db.decide(ctx, tx, projectID, ids)
	if err != nil {
		return settlement{}, err
	}
	b := &pgx.Batch{}
	v.queue(b)
	if b.Len() == 0 {
		return v.settlement, nil
	}
	br := tx.SendBatch(ctx, b)
	s, err := v.read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return s, err
}

// verdicts are the rule's verdicts on items, decided and not yet written.
type verdicts struct {
	settlement
	projectID, rvID int64
	spread          int
	// The gold of the decided items, a row per rubric item.
	gItems                 []int64
	gKeys, gValues, gNotes []string
	open                   []int64 // items not decided
	// Every item judged, and the verdict on each.
	judged                  []int64
	decided, safety, signal []bool
	ranks                   []float64
	reasons                 []string
	humans                  []int32
	sourceOf                map[int64]string
	answers                 map[int64]map[string]string
}

// decide locks the items' counts rows (settle says why), reads what the
// rule needs and decides the items it may judge: one round trip.
func (db *DB) decide(ctx context.Context, tx pgx.Tx, projectID int64, ids []int64) (*verdicts, error) {
	v := &verdicts{projectID: projectID}
	if len(ids) == 0 {
		return v, nil
	}
	// The rule reads the items' labels: those of answer sets still
	// queued are written first, in this transaction (pending.go).
	if err := deriveItems(ctx, tx, projectID, ids); err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT item_id FROM item_counts WHERE item_id = ANY($1) ORDER BY item_id FOR NO KEY UPDATE`, ids)
	b.Queue(`SELECT rubric_version_id, gold_max_spread FROM projects WHERE id = $1`, projectID)
	// The items the rule may judge: the overlap reached, no person's gold.
	judged := `i.id = ANY($2) AND i.project_id = $1
		AND (SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		     WHERE s.item_id = i.id AND r.kind = 'human') >= (SELECT overlap FROM projects WHERE id = $1)
		AND NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = $1 AND g.item_id = i.id AND g.method = 'adjudicated')`
	b.Queue(`SELECT i.id, i.source_id, i.turns, i.messages, i.sensitive FROM items i WHERE `+judged+` ORDER BY i.id`, projectID, ids)
	b.Queue(`
		SELECT s.item_id, s.rater_id, r.kind = 'human', l.rubric_item_key, l.value
		FROM items i JOIN answer_sets s ON s.item_id = i.id JOIN raters r ON r.id = s.rater_id JOIN labels l ON l.answer_set_id = s.id
		WHERE `+judged+`
		ORDER BY s.item_id, s.rater_id`, projectID, ids)
	type item struct {
		id     int64
		source string
		facts  rubric.Facts
	}
	var items []item
	var sets map[int64][]*raterSet
	err := func() error {
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&v.rvID, &v.spread); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
			var it item
			var turns int
			var msgs []byte
			var sensitive bool
			if err := r.Scan(&it.id, &it.source, &turns, &msgs, &sensitive); err != nil {
				return it, err
			}
			it.facts, err = factsOfMessages(turns, msgs, sensitive)
			if err != nil {
				return it, fmt.Errorf("item %d: %w", it.id, err)
			}
			return it, nil
		})
		if err != nil {
			return err
		}
		rows, err = br.Query()
		if err != nil {
			return err
		}
		sets, err = readAnswerSets(rows)
		return err
	}()
	if err != nil || len(items) == 0 {
		return v, err
	}
	def, err := db.FindRubricByID(ctx, v.rvID)
	if err != nil {
		return v, err
	}
	n := len(items)
	v.judged = make([]int64, n)
	v.decided, v.safety, v.signal = make([]bool, n), make([]bool, n), make([]bool, n)
	v.ranks, v.reasons, v.humans = make([]float64, n), make([]string, n), make([]int32, n)
	v.sourceOf, v.answers = make(map[int64]string, n), map[int64]map[string]string{}
	for i, it := range items {
		var people, all []rubric.Answers
		for _, set := range sets[it.id] {
			all = append(all, set.answers)
			if set.human {
				people = append(people, set.answers)
			}
		}
		d := gold.Decide(def, it.facts, people, v.spread)
		rank := gold.RankOf(def, it.facts, d, all)
		v.judged[i], v.sourceOf[it.id] = it.id, it.source
		v.decided[i], v.safety[i], v.signal[i], v.ranks[i], v.reasons[i], v.humans[i] = d.Decided, rank.Safety, rank.Signal, rank.Weight(), d.Reason, int32(len(people))
		v.Items++
		if !d.Decided {
			v.open = append(v.open, it.id)
			v.Queued++
			continue
		}
		v.Automatic++
		v.answers[it.id] = map[string]string{}
		for _, ic := range d.Items {
			v.gItems, v.gKeys, v.gValues, v.gNotes = append(v.gItems, it.id), append(v.gKeys, ic.Key), append(v.gValues, string(ic.Value)), append(v.gNotes, ic.Reason)
			v.answers[it.id][ic.Key] = string(ic.Value)
		}
	}
	return v, nil
}

// queue adds the statements that write the verdicts to b; nothing when no
// item was judged. read reads their results.
func (v *verdicts) queue(b *pgx.Batch) {
	if len(v.judged) == 0 {
		return
	}
	// A person's gold is never replaced: the rule writes only where the
	// gold is automatic, a trusted judge's (people's word comes before
	// the judge's once they have labelled the item) or missing (and the
	// items judged have none of a person's). Only what changes is
	// written, and returned.
	b.Queue(`
		INSERT INTO gold_labels (project_id, item_id, rubric_version_id, rubric_item_key, value, method, note)
		SELECT $6, t.i, $1, t.k, t.v, 'automatic', t.n FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(i, k, v, n)
		ON CONFLICT (item_id, rubric_item_key) DO UPDATE SET value = EXCLUDED.value, note = EXCLUDED.note, method = 'automatic', decided_at = now()
		WHERE gold_labels.method IN ('automatic', 'trusted_judge')
		  AND (gold_labels.value, gold_labels.note, gold_labels.method) IS DISTINCT FROM (EXCLUDED.value, EXCLUDED.note, EXCLUDED.method)
		RETURNING item_id`,
		v.rvID, v.gItems, v.gKeys, v.gValues, v.gNotes, v.projectID)
	b.Queue(`DELETE FROM gold_labels WHERE item_id = ANY($1) AND method IN ('automatic', 'trusted_judge') RETURNING item_id`, v.open)
	// computed_at is when the verdict is written, after every answer it
	// saw was committed: an answer set newer than it came after.
	b.Queue(`
		INSERT INTO gold_consensus (item_id, project_id, decided, rank, safety, signal, reason, human_raters, max_spread, computed_at)
		SELECT t.i, $1, t.d, t.r, t.s, t.sig, t.why, t.h, $2, statement_timestamp()
		FROM unnest($3::bigint[], $4::bool[], $5::float8[], $6::bool[], $7::bool[], $8::text[], $9::int[]) AS t(i, d, r, s, sig, why, h)
		ON CONFLICT (item_id) DO UPDATE SET decided = EXCLUDED.decided, rank = EXCLUDED.rank, safety = EXCLUDED.safety, signal = EXCLUDED.signal,
			reason = EXCLUDED.reason, human_raters = EXCLUDED.human_raters, max_spread = EXCLUDED.max_spread, computed_at = EXCLUDED.computed_at`,
		v.projectID, v.spread, v.judged, v.decided, v.ranks, v.safety, v.signal, v.reasons, v.humans)
}

// read reads the results of the statements queue added, and says what the
// settling did: which items' gold changed.
func (v *verdicts) read(br pgx.BatchResults) (settlement, error) {
	s := v.settlement
	if len(v.judged) == 0 {
		return s, nil
	}
	seen := map[int64]bool{}
	for range 2 {
		rows, err := br.Query()
		if err != nil {
			return s, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return s, err
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				s.changed = append(s.changed, id)
			}
		}
	}
	if _, err := br.Exec(); err != nil {
		return s, err
	}
	slices.Sort(s.changed)
	s.sources, s.gold = map[int64]string{}, map[int64]map[string]string{}
	for _, id := range s.changed {
		s.sources[id], s.gold[id] = v.sourceOf[id], v.answers[id]
	}
	return s, nil
}

// GoldCounts say where a project's items stand on the way to a gold set.
type GoldCounts struct {
	Items int
	// Labelling items have fewer human answer sets than the overlap.
	Labelling int
	// Automatic and Adjudicated items have gold, set by the rule or by a
	// person.
	Automatic   int
	Adjudicated int
	// Trusted items have the answers of the judge trust routing keeps as
	// gold (GoldTrustedJudge).
	Trusted int
	// Queue items wait for a person: the rule could not decide them.
	Queue int
	// Pending items have complete labels the rule has not judged yet, or
	// not since their answers changed or the setting did.
	Pending   int
	MaxSpread int
}

// Open is how many items have no gold yet.
func (c GoldCounts) Open() int { return c.Items - c.Automatic - c.Adjudicated - c.Trusted }

// CountGold counts where the project's items stand. It reads every item's
// answer sets, so it belongs on pages opened now and then.
func (db *DB) CountGold(ctx context.Context, projectID int64) (GoldCounts, error) {
	var c GoldCounts
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		return c, err
	}
	if c.MaxSpread, err = db.GoldMaxSpread(ctx, projectID); err != nil {
		return c, err
	}
	err = db.pool.QueryRow(ctx, `
		WITH per AS (
			SELECT i.id,
			       (SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id
			        WHERE s.item_id = i.id AND r.kind = 'human') AS humans,
			       (SELECT min(g.method) FROM gold_labels g WHERE g.project_id = $1 AND g.item_id = i.id) AS method,
			       c.decided
			FROM items i LEFT JOIN gold_consensus c ON c.item_id = i.id AND c.project_id = $1
			WHERE i.project_id = $1)
		SELECT count(*),
		       count(*) FILTER (WHERE humans < $2 AND method IS NULL),
		       count(*) FILTER (WHERE method = 'automatic'),
		       count(*) FILTER (WHERE method = 'adjudicated'),
		       count(*) FILTER (WHERE decided = false AND method IS NULL),
		       count(*) FILTER (WHERE method = 'trusted_judge')
		FROM per`, projectID, p.Overlap).Scan(&c.Items, &c.Labelling, &c.Automatic, &c.Adjudicated, &c.Queue, &c.Trusted)
	if err != nil {
		return c, mapErr(err, "count gold", "")
	}
	err = db.pool.QueryRow(ctx, `SELECT count(*) `+stale, projectID, p.Overlap, c.MaxSpread, false).Scan(&c.Pending)
	return c, mapErr(err, "count gold", "")
}

// Disagreement is an item waiting in the queue, as the rule left it.
type Disagreement struct {
	ItemID   int64
	SourceID string
	// Rank orders the queue, larger first: the widest spread of the human
	// answers (0 to 1) plus gold.SafetyWeight for a safety concern and
	// gold.SignalWeight for NA despite crisis signals.
	Rank   float64
	Safety bool
	// Signal is true when some rater answered NA on an item that applies
	// only with crisis signals although the item's facts point at them.
	Signal      bool
	Reason      string
	HumanRaters int
	ComputedAt  time.Time
}

// Spread is the widest spread of the human answers, 0 to 1.
func (d Disagreement) Spread() float64 {
	// The rank is the spread plus the weights of its concerns.
	return d.Rank - gold.Rank{Safety: d.Safety, Signal: d.Signal}.Weight()
}

// queue selects the items in project $1's queue: the rule did not decide
// them and no person has either.
const queue = `
	FROM gold_consensus c JOIN items i ON i.id = c.item_id AND i.project_id = $1
	WHERE c.project_id = $1 AND NOT c.decided
	  AND NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = $1 AND g.item_id = c.item_id AND g.method = 'adjudicated')`

const disagreementColumns = `c.item_id, i.source_id, c.rank, c.safety, c.signal, c.reason, c.human_raters, c.computed_at`

func scanDisagreement(row pgx.Row) (Disagreement, error) {
	var d Disagreement
	err := row.Scan(&d.ItemID, &d.SourceID, &d.Rank, &d.Safety, &d.Signal, &d.Reason, &d.HumanRaters, &d.ComputedAt)
	return d, err
}

// DisagreementPage is one page of the disagreements queue, worst first as
// the queue page orders it: at most limit after the page whose Next is
// cursor ("" for the first), the cursor of the page after it ("" on the
// last), and the queue's length. It pages by keyset on the queue's index
// (rank, then item), so a deep page costs what the first does.
func (db *DB) DisagreementPage(ctx context.Context, projectID int64, cursor string, limit int) ([]Disagreement, string, int, error) {
	if err := checkPageLimit(limit); err != nil {
		return nil, "", 0, err
	}
	var rank *float64
	var afterID int64
	if cursor != "" {
		c, err := decodeCursor(cursor, "disagreements")
		if err != nil {
			return nil, "", 0, err
		}
		r, err := strconv.ParseFloat(c.Key, 64)
		if err != nil {
			return nil, "", 0, attune.Invalid("cursor", "this cursor does not belong to this list; start from the first page")
		}
		rank, afterID = &r, c.ID
	}
	var total int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) `+queue, projectID).Scan(&total); err != nil {
		return nil, "", 0, mapErr(err, "list disagreements", "")
	}
	rows, err := db.pool.Query(ctx, `SELECT `+disagreementColumns+queue+`
		AND ($2::float8 IS NULL OR c.rank < $2 OR (c.rank = $2 AND c.item_id > $3))
		ORDER BY c.rank DESC, c.item_id LIMIT $4`, projectID, rank, afterID, limit+1)
	if err != nil {
		return nil, "", 0, mapErr(err, "list disagreements", "")
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Disagreement, error) { return scanDisagreement(r) })
	if err != nil {
		return nil, "", 0, mapErr(err, "list disagreements", "")
	}
	var next string
	if len(ds) > limit {
		ds = ds[:limit]
		last := ds[limit-1]
		next = searchCursor{Sort: "disagreements", Key: strconv.FormatFloat(last.Rank, 'g', -1, 64), ID: last.ItemID}.encode()
	}
	return ds, next, total, nil
}

// ListDisagreements returns a page of the project's queue, worst first —
// every item with a safety concern before the others, then items where
// someone answered NA despite crisis signals, then by spread, then by id —
// and the length of the whole queue.
func (db *DB) ListDisagreements(ctx context.Context, projectID int64, offset, limit int) ([]Disagreement, int, error) {
	var total int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) `+queue, projectID).Scan(&total); err != nil {
		return nil, 0, mapErr(err, "list disagreements", "")
	}
	rows, err := db.pool.Query(ctx, `SELECT `+disagreementColumns+queue+` ORDER BY c.rank DESC, c.item_id OFFSET $2 LIMIT $3`,
		projectID, max(offset, 0), limit)
	if err != nil {
		return nil, 0, mapErr(err, "list disagreements", "")
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Disagreement, error) { return scanDisagreement(r) })
	return ds, total, mapErr(err, "list disagreements", "")
}

// NextDisagreement returns the item that follows itemID in the queue's
// order, going round to the start after the last; itemID itself need not
// be in the queue (it has just been settled). It returns attune.ErrNotFound
// when no other item waits.
func (db *DB) NextDisagreement(ctx context.Context, projectID, itemID int64) (int64, error) {
	var next int64
	err := db.pool.QueryRow(ctx, `SELECT c.item_id `+queue+` AND c.item_id <> $2
		ORDER BY coalesce((SELECT c.rank > x.rank OR (c.rank = x.rank AND c.item_id < x.item_id)
		                   FROM gold_consensus x WHERE x.item_id = $2), false),
		         c.rank DESC, c.item_id
		LIMIT 1`, projectID, itemID).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, attune.NotFound("no other disagreement waits")
	}
	return next, mapErr(err, "next disagreement", "")
}

// GoldVerdict is where the consensus rule left one item, and where the item
// stands in the queue.
type GoldVerdict struct {
	Disagreement
	Decided bool
	// Position is the item's place in the queue, from 1; 0 when it is not
	// in the queue. Total is the queue's length.
	Position, Total int
}

// FindVerdict returns the consensus rule's verdict on an item of the
// project, or attune.ErrNotFound when the rule has not judged it.
func (db *DB) FindVerdict(ctx context.Context, projectID, itemID int64) (*GoldVerdict, error) {
	var v GoldVerdict
	var inQueue bool
	err := db.pool.QueryRow(ctx, `
		SELECT `+disagreementColumns+`, c.decided,
		       NOT c.decided AND NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = c.project_id AND g.item_id = c.item_id AND g.method = 'adjudicated')
		FROM gold_consensus c JOIN items i ON i.id = c.item_id
		WHERE c.project_id = $1 AND c.item_id = $2`, projectID, itemID).
		Scan(&v.ItemID, &v.SourceID, &v.Rank, &v.Safety, &v.Signal, &v.Reason, &v.HumanRaters, &v.ComputedAt, &v.Decided, &inQueue)
	if err != nil {
		return nil, mapErr(err, "find verdict", "")
	}
	err = db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE c.rank > $3 OR (c.rank = $3 AND c.item_id < $2)) `+queue,
		projectID, itemID, v.Rank).Scan(&v.Total, &v.Position)
	if err != nil {
		return nil, mapErr(err, "find verdict", "")
	}
	if inQueue {
		v.Position++
	} else {
		v.Position = 0
	}
	return &v, nil
}

// ItemAnswerSet is one rater's answer set on an item, as the adjudication
// page shows it.
type ItemAnswerSet struct {
	RaterID int64
	Kind    string // human or judge
	// Name is a person's name (their email when they gave none, or the
	// name a rater brought in without an account has) or a judge's name.
	Name  string
	Email string // a person's email; "" for others
	Model string // a judge's model; "" for people
	// Answers, Rationales, Methods and Raws are by rubric item key; Methods
	// say how a judge reached each value and Raws hold the model's raw
	// replies.
	Answers    map[string]string
	Rationales map[string]string
	Methods    map[string]string
	Raws       map[string]string
	Rationale  string // about the dialogue as a whole
	ActiveMS   int64
	Submitted  time.Time
}

// ItemAnswerSets returns every rater's answer set on an item of the project:
// people first, then judges, each by name.
func (db *DB) ItemAnswerSets(ctx context.Context, projectID, itemID int64) ([]ItemAnswerSet, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		SELECT s.id, r.id, r.kind, coalesce(nullif(btrim(u.name), ''), u.email, r.name), coalesce(u.email, ''), coalesce(j.model, ''),
		       s.rationale, s.active_ms, s.submitted_at
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		LEFT JOIN users u ON u.id = r.user_id LEFT JOIN judges j ON j.id = r.judge_id
		WHERE s.project_id = $1 AND s.item_id = $2
		ORDER BY r.kind, 4, r.id`, projectID, itemID)
	if err != nil {
		return nil, mapErr(err, "item answers", "")
	}
	bySet := map[int64]int{}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ItemAnswerSet, error) {
		var a ItemAnswerSet
		var setID int64
		err := row.Scan(&setID, &a.RaterID, &a.Kind, &a.Name, &a.Email, &a.Model, &a.Rationale, &a.ActiveMS, &a.Submitted)
		a.Answers, a.Rationales, a.Methods, a.Raws = map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
		bySet[setID] = len(bySet)
		return a, err
	})
	if err != nil {
		return nil, mapErr(err, "item answers", "")
	}
	rows, err = db.pool.Query(ctx, `
		SELECT l.answer_set_id, l.rubric_item_key, l.value, l.rationale, coalesce(d.method, ''), coalesce(d.raw, '')
		FROM labels l LEFT JOIN judge_label_details d ON d.label_id = l.id
		WHERE l.item_id = $1`, itemID)
	if err != nil {
		return nil, mapErr(err, "item answers", "")
	}
	defer rows.Close()
	for rows.Next() {
		var setID int64
		var key, value, note, method, raw string
		if err := rows.Scan(&setID, &key, &value, &note, &method, &raw); err != nil {
			return nil, mapErr(err, "item answers", "")
		}
		i, ok := bySet[setID]
		if !ok {
			continue
		}
		out[i].Answers[key] = value
		if note != "" {
			out[i].Rationales[key] = note
		}
		if method != "" {
			out[i].Methods[key] = method
		}
		if raw != "" {
			out[i].Raws[key] = raw
		}
	}
	return out, mapErr(rows.Err(), "item answers", "")
}

// ItemGold is the gold of one item.
type ItemGold struct {
	Answers map[string]string // by rubric item key
	// Method is adjudicated when a person set it, trusted_judge when it is
	// the answers of the judge trust routing keeps, else automatic.
	Method string
	// DecidedBy and DecidedByEmail name the person; "" for automatic gold.
	DecidedBy      string
	DecidedByEmail string
	// Note is the person's note; for automatic gold, Notes holds the rule's
	// reason on each rubric item.
	Note      string
	Notes     map[string]string
	DecidedAt time.Time
}

// FindGold returns an item's gold, or attune.ErrNotFound when it has none.
func (db *DB) FindGold(ctx context.Context, itemID int64) (*ItemGold, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT g.rubric_item_key, g.value, g.method, coalesce(nullif(btrim(u.name), ''), u.email, ''), coalesce(u.email, ''), g.note, g.decided_at
		FROM gold_labels g LEFT JOIN users u ON u.id = g.decided_by
		WHERE g.item_id = $1`, itemID)
	if err != nil {
		return nil, mapErr(err, "find gold", "")
	}
	defer rows.Close()
	var g *ItemGold
	for rows.Next() {
		if g == nil {
			g = &ItemGold{Answers: map[string]string{}, Notes: map[string]string{}, Method: "automatic"}
		}
		var key, value, method, by, email, note string
		var at time.Time
		if err := rows.Scan(&key, &value, &method, &by, &email, &note, &at); err != nil {
			return nil, mapErr(err, "find gold", "")
		}
		g.Answers[key], g.Notes[key] = value, note
		switch method {
		case "adjudicated":
			g.Method, g.DecidedBy, g.DecidedByEmail, g.Note = method, by, email, note
		case GoldTrustedJudge:
			if g.Method != "adjudicated" {
				g.Method = method
			}
		}
		if at.After(g.DecidedAt) {
			g.DecidedAt = at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "find gold", "")
	}
	if g == nil {
		return nil, attune.NotFound("this item has no gold yet")
	}
	return g, nil
}

// Adjudication is a lead's decision on an item's gold.
type Adjudication struct {
	ProjectID, ItemID, ActorID int64
	// Answers holds the gold value of every rubric item, already checked
	// against the rubric.
	Answers map[string]string
	// Accepted lists the rubric items whose gold is the consensus the rule
	// found, whether the lead accepted it with one key or chose it.
	Accepted []string
	Note     string
}

// Adjudicate stores a lead's gold for an item in one transaction: every
// rubric item's gold, adjudicated, replacing any earlier gold (automatic
// or adjudicated), an entry in the item's adjudication history with the
// gold it replaced, and an audit event. Concurrent adjudications of one
// item are serialised; the last one stands, and both are in the history.
func (db *DB) Adjudicate(ctx context.Context, a Adjudication) error {
	if p := gold.NoteProblem(a.Note); p != "" {
		return attune.Invalid("note", p)
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var sourceID string
		var rvID int64
		err := tx.QueryRow(ctx, `SELECT i.source_id, p.rubric_version_id FROM items i JOIN projects p ON p.id = i.project_id
			WHERE i.id = $1 AND i.project_id = $2 FOR UPDATE OF i`, a.ItemID, a.ProjectID).Scan(&sourceID, &rvID)
		if err != nil {
			return err
		}
		var previous []byte
		if err := tx.QueryRow(ctx, `SELECT coalesce(jsonb_object_agg(rubric_item_key, jsonb_build_object('value', value, 'method', method)), '{}')
			FROM gold_labels WHERE item_id = $1`, a.ItemID).Scan(&previous); err != nil {
			return err
		}
		keys := make([]string, 0, len(a.Answers))
		for k := range a.Answers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		values := make([]string, len(keys))
		for i, k := range keys {
			values[i] = a.Answers[k]
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO gold_labels (project_id, item_id, rubric_version_id, rubric_item_key, value, method, decided_by, note)
			SELECT $7, $1, $2, k, v, 'adjudicated', $3, $4 FROM unnest($5::text[], $6::text[]) AS t(k, v)
			ON CONFLICT (item_id, rubric_item_key) DO UPDATE SET value = EXCLUDED.value, method = 'adjudicated',
				decided_by = EXCLUDED.decided_by, note = EXCLUDED.note, decided_at = now(), rubric_version_id = EXCLUDED.rubric_version_id`,
			a.ItemID, rvID, a.ActorID, a.Note, keys, values, a.ProjectID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM gold_labels WHERE item_id = $1 AND NOT (rubric_item_key = ANY($2))`, a.ItemID, keys); err != nil {
			return err
		}
		answers, _ := json.Marshal(a.Answers)
		accepted := a.Accepted
		if accepted == nil {
			accepted = []string{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO adjudications (project_id, item_id, decided_by, answers, previous, accepted, note)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, a.ProjectID, a.ItemID, a.ActorID, answers, previous, accepted, a.Note); err != nil {
			return err
		}
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + values[i]
		}
		if err := audit(ctx, tx, attune.AuditEvent{ActorID: &a.ActorID, Action: "gold.adjudicate", ProjectID: &a.ProjectID, Subject: sourceID,
			Details: map[string]string{"item": fmt.Sprint(a.ItemID), "gold": strings.Join(pairs, " "), "previous": string(previous),
				"accepted_consensus": strings.Join(a.Accepted, " "), "note": a.Note}}); err != nil {
			return err
		}
		return db.announce(ctx, tx, a.ProjectID, attune.EventGoldChanged, map[string]any{
			"how": "adjudicated", "item_id": a.ItemID, "item": sourceID, "gold": a.Answers})
	})
	return mapErr(err, "adjudicate", "")
}

// PastAdjudication is one entry of an item's adjudication history.
type PastAdjudication struct {
	DecidedBy string // the person's name, or email
	DecidedAt time.Time
	Answers   map[string]string
	Accepted  []string
	Note      string
}

// ListAdjudications returns an item's adjudication history, newest first.
func (db *DB) ListAdjudications(ctx context.Context, itemID int64) ([]PastAdjudication, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT coalesce(nullif(btrim(u.name), ''), u.email), a.decided_at, a.answers, a.accepted, a.note
		FROM adjudications a JOIN users u ON u.id = a.decided_by
		WHERE a.item_id = $1 ORDER BY a.decided_at DESC, a.id DESC`, itemID)
	if err != nil {
		return nil, mapErr(err, "list adjudications", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PastAdjudication, error) {
		var p PastAdjudication
		var answers []byte
		if err := r.Scan(&p.DecidedBy, &p.DecidedAt, &answers, &p.Accepted, &p.Note); err != nil {
			return p, err
		}
		return p, json.Unmarshal(answers, &p.Answers)
	})
	return out, mapErr(err, "list adjudications", "")
}
