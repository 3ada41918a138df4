package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AnswerSetEvidence is one answer set's turn evidence with the answers it
// goes with: the turns a rater marked where each rubric item fails.
type AnswerSetEvidence struct {
	ItemID  int64
	RaterID int64
	// Answers are the set's answers, by rubric item key; Evidence its
	// marked turns by key, only the keys with turns.
	Answers  map[string]string
	Evidence map[string][]int
}

// ListEvidence returns the answer sets of the project that carry turn
// evidence and pass the filter's raters and dates (the set's first
// making), by item and then rater. It reads the turns from the answer
// sets, which hold them for every writer (a submit writes them there, the
// copy trigger of 00055 puts every other writer's there), so nothing waits
// for queued labels. Sets with evidence are few, and each is read whole
// once; the item range of the filter is not used.
//
// It is one of the lead reads (ReadLimits): ErrReadsBusy when no slot is
// free, a *ReadTimeoutError past the report timeout.
func (db *DB) ListEvidence(ctx context.Context, projectID int64, f AgreementFilter) ([]AnswerSetEvidence, error) {
	_, release, err := db.takeReads(ctx, ReadReport, 1, 1)
	if err != nil {
		return nil, err
	}
	defer release()
	var raters, from, to any
	if f.RaterIDs != nil {
		raters = f.RaterIDs
	}
	if !f.From.IsZero() {
		from = f.From
	}
	if !f.To.IsZero() {
		to = f.To
	}
	var out []AnswerSetEvidence
	err = db.readTx(ctx, db.pool, ReadReport, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT s.item_id, s.rater_id, s.answers, s.evidence
			FROM answer_sets s
			WHERE s.project_id = $1 AND s.evidence::text <> '{}'
			  AND ($2::bigint[] IS NULL OR s.rater_id = ANY ($2::bigint[]))
			  AND ($3::timestamptz IS NULL OR s.created_at >= $3)
			  AND ($4::timestamptz IS NULL OR s.created_at < $4)
			ORDER BY s.item_id, s.rater_id`, projectID, raters, from, to)
		if err != nil {
			return err
		}
		var set AnswerSetEvidence
		var answers, evidence []byte
		_, err = pgx.ForEachRow(rows, []any{&set.ItemID, &set.RaterID, &answers, &evidence}, func() error {
			e := AnswerSetEvidence{ItemID: set.ItemID, RaterID: set.RaterID}
			if err := json.Unmarshal(answers, &e.Answers); err != nil {
				return fmt.Errorf("item %d rater %d: answers: %w", e.ItemID, e.RaterID, err)
			}
			if err := json.Unmarshal(evidence, &e.Evidence); err != nil {
				return fmt.Errorf("item %d rater %d: turn evidence: %w", e.ItemID, e.RaterID, err)
			}
			out = append(out, e)
			return nil
		})
		return err
	})
	if errors.Is(err, ErrReadTimeout) {
		return nil, err
	}
	return out, mapErr(err, "list evidence", "")
}
