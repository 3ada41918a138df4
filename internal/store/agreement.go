package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ProjectRater is a rater who has answers in a project, as the agreement
// report lists them.
type ProjectRater struct {
	ID   int64
	Kind string // "human" or "judge"
	Name string
	// Account is true for a person with an account, false for a person
	// brought in by a labels import (a name without an account).
	Account bool
	// AnswerSets counts the rater's answer sets in the project.
	AnswerSets int
}

// ListProjectRaters returns every rater with at least one answer set in
// the project: people first, then judges, each by name.
func (db *DB) ListProjectRaters(ctx context.Context, projectID int64) ([]ProjectRater, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT r.id, r.kind, r.name, r.user_id IS NOT NULL, s.n
		FROM (SELECT rater_id, count(*) AS n FROM answer_sets WHERE project_id = $1 GROUP BY rater_id) s
		JOIN raters r ON r.id = s.rater_id
		ORDER BY r.kind = 'judge', r.name, r.id`, projectID)
	if err != nil {
		return nil, mapErr(err, "list project raters", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProjectRater, error) {
		var pr ProjectRater
		err := r.Scan(&pr.ID, &pr.Kind, &pr.Name, &pr.Account, &pr.AnswerSets)
		return pr, err
	})
	return out, mapErr(err, "list project raters", "")
}

// AgreementFilter narrows the labels an agreement report reads.
type AgreementFilter struct {
	// RaterIDs keeps only these raters' labels; nil keeps everyone's.
	RaterIDs []int64
	// From and To keep the labels first made at or after From and before
	// To; a zero time leaves that end open.
	From, To time.Time
	// MinItemID and MaxItemID keep the items whose ids are in
	// [MinItemID, MaxItemID]; 0 leaves that end open. A report reads a
	// large project in parts this way, in parallel.
	MinItemID, MaxItemID int64
}

// ItemIDRange returns the lowest and highest item id of the project (0, 0
// when it has no items), for reading it in parts.
func (db *DB) ItemIDRange(ctx context.Context, projectID int64) (lo, hi int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM items WHERE project_id = $1`, projectID).Scan(&lo, &hi)
	return lo, hi, mapErr(err, "item id range", "")
}

// LabelValue is one label of an answer set: a rubric item and its value.
type LabelValue struct {
	Key, Value string
}

// AnswerSetLabels is one rater's labels for one item.
type AnswerSetLabels struct {
	ItemID  int64
	RaterID int64
	// Labels are the answer set's labels in no particular order. The slice
	// is reused for the next answer set; its strings are shared and may be
	// kept.
	Labels []LabelValue
}

// StreamAnswerSets calls fn with every answer set of the project that has
// labels passing the filter (only those labels), ordered by item and then
// rater, so that all the answers to one item arrive together. It reads
// in one query and holds one answer set at a time: memory does not grow
// with the project. PostgreSQL folds each answer set's labels into one
// row, which is what makes a report over millions of labels take seconds;
// fn runs while the next rows arrive. An error from fn stops the stream
// and is returned as it is.
//
// The read is one of the lead reads (ReadLimits): it fails with
// ErrReadsBusy when every slot is taken and with a *ReadTimeoutError when
// its query ran longer than the report timeout.
func (db *DB) StreamAnswerSets(ctx context.Context, projectID int64, f AgreementFilter, fn func(*AnswerSetLabels) error) error {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return err
	}
	return db.StreamAnswerSetParts(ctx, projectID, []AgreementFilter{f}, func(_ int, as *AnswerSetLabels) error { return fn(as) })
}

// StreamAnswerSetParts reads the answer sets of each part (a filter, most
// often a range of items) as StreamAnswerSets does, the parts at once on
// as many lead-read slots as are free, up to one each, and one after
// another on those it has when there are fewer: at least one slot must be
// free, or it fails with ErrReadsBusy at once. fn gets the part's index
// and may be called from several goroutines at once, never at once for
// one part. The first error stops every part and is returned.
func (db *DB) StreamAnswerSetParts(ctx context.Context, projectID int64, parts []AgreementFilter, fn func(part int, as *AnswerSetLabels) error) error {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return err
	}
	if len(parts) == 0 {
		return nil
	}
	n, release, err := db.takeReads(ctx, ReadReport, 1, len(parts))
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int, len(parts))
	for i := range parts {
		next <- i
	}
	close(next)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := range next {
				if err := db.streamAnswerSets(ctx, projectID, parts[i], func(as *AnswerSetLabels) error { return fn(i, as) }); err != nil {
					errs[w] = err
					cancel() // the other parts are of no use now
					return
				}
			}
		})
	}
	wg.Wait()
	// A part cancelled because another failed says only "canceled":
	// the failure is the one to return.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

func (db *DB) streamAnswerSets(ctx context.Context, projectID int64, f AgreementFilter, fn func(*AnswerSetLabels) error) error {
	var raters any
	if f.RaterIDs != nil {
		raters = f.RaterIDs
	}
	var from, to, minItem, maxItem any
	if f.MinItemID > 0 {
		minItem = f.MinItemID
	}
	if f.MaxItemID > 0 {
		maxItem = f.MaxItemID
	}
	if !f.From.IsZero() {
		from = f.From
	}
	if !f.To.IsZero() {
		to = f.To
	}
	err := db.readTx(ctx, db.pool, ReadReport, func(tx pgx.Tx) error {
		// The report reads a project's labels once, in one long query:
		// compiling it just in time costs more than it saves. Its plan
		// depends on the filters given (an item range uses the index, no
		// range reads every item), so it is planned for them each time
		// rather than once for any: a generic plan reads the whole range.
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
			return err
		}
		// Labels are walked in the order of the (project, item, rater,
		// rubric item) index, which holds the value and the time too, so
		// PostgreSQL reads only the project's part of it, groups the
		// labels into answer sets without sorting or hashing, and rows
		// come out in item order. Each label is written as key US value,
		// labels separated by RS: control characters no rubric key or
		// answer can hold.
		rows, err := tx.Query(ctx, `
			SELECT l.item_id, l.rater_id, string_agg(l.rubric_item_key || chr(31) || l.value, chr(30))
			FROM labels l
			WHERE l.project_id = $1
			  AND ($2::bigint[] IS NULL OR l.rater_id = ANY ($2::bigint[]))
			  AND ($3::timestamptz IS NULL OR l.created_at >= $3)
			  AND ($4::timestamptz IS NULL OR l.created_at < $4)
			  AND l.item_id BETWEEN coalesce($5::bigint, 0) AND coalesce($6::bigint, 9223372036854775807)
			GROUP BY l.item_id, l.rater_id
			ORDER BY l.item_id, l.rater_id`,
			pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode},
			projectID, raters, from, to, minItem, maxItem)
		if err != nil {
			return err
		}
		defer rows.Close()
		// Keys and values repeat across millions of labels: keep one
		// string of each. Keys come in the same order in every answer set
		// (the index's), so the key at the same place in the set before is
		// tried first; values are few and tried in turn. Neither allocates
		// once every string has been seen.
		str := interner{}.of
		var lastKeys, values []string
		key := func(i int, b []byte) string {
			if i < len(lastKeys) && lastKeys[i] == string(b) {
				return lastKeys[i]
			}
			s := str(b)
			if i < len(lastKeys) {
				lastKeys[i] = s
			} else {
				lastKeys = append(lastKeys, s)
			}
			return s
		}
		value := func(b []byte) string {
			for _, v := range values {
				if v == string(b) {
					return v
				}
			}
			s := str(b)
			if len(values) < 16 {
				values = append(values, s)
			}
			return s
		}
		set := &AnswerSetLabels{}
		for rows.Next() {
			raw := rows.RawValues()
			if len(raw) != 3 || len(raw[0]) != 8 || len(raw[1]) != 8 {
				return fmt.Errorf("unexpected row shape")
			}
			set.ItemID = int64(binary.BigEndian.Uint64(raw[0]))
			set.RaterID = int64(binary.BigEndian.Uint64(raw[1]))
			set.Labels = set.Labels[:0]
			rest := raw[2]
			for len(rest) > 0 {
				pair := rest
				if i := bytes.IndexByte(rest, 30); i >= 0 {
					pair, rest = rest[:i], rest[i+1:]
				} else {
					rest = nil
				}
				k, v, ok := bytes.Cut(pair, []byte{31})
				if !ok {
					return fmt.Errorf("item %d rater %d: malformed label %q", set.ItemID, set.RaterID, pair)
				}
				set.Labels = append(set.Labels, LabelValue{Key: key(len(set.Labels), k), Value: value(v)})
			}
			if err := fn(set); err != nil {
				return callbackError{err}
			}
		}
		return rows.Err()
	})
	if ce, ok := err.(callbackError); ok {
		return ce.err
	}
	if errors.Is(err, ErrReadTimeout) {
		return err
	}
	return mapErr(err, "stream answer sets", "")
}

// callbackError carries a caller's error through the transaction
// unwrapped, so that the caller gets back exactly what it returned.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }
