package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// An item's search document (items_text of its messages) is computed
// after the import that stores the item has committed, by a queued job:
// computing it inside the import made the import several times slower.
// Until the job has run, a text search does not find the item, and says
// how many items wait (ItemPage.Unindexed).

// ItemIndexQueue is the job queue the indexing jobs wait in.
const ItemIndexQueue = "item_index"

// ItemIndexArgs is the job that indexes a project's items that have no
// search document yet; ProjectID 0 sweeps every project.
type ItemIndexArgs struct {
	ProjectID int64 `json:"project_id"`
}

// Kind names the job kind in the queue.
func (ItemIndexArgs) Kind() string { return "item_index" }

// itemIndexBatch is how many items one transaction of IndexItems indexes:
// small enough that an import waiting for the project is not held up long.
const itemIndexBatch = 2000

// queueItemIndex queues the indexing of the project's new items in tx, so
// that the job exists exactly when the items do.
func (db *DB) queueItemIndex(ctx context.Context, tx pgx.Tx, projectID int64) error {
	_, err := db.jobs.InsertTx(ctx, tx, ItemIndexArgs{ProjectID: projectID}, &river.InsertOpts{Queue: ItemIndexQueue})
	if err != nil {
		return fmt.Errorf("queue item indexing: %w", err)
	}
	return nil
}

// QueueItemIndexSweep queues a job that indexes every project's items that
// have no search document: a serving process queues it when it starts, so
// that items whose job was given up are indexed in the end.
func (db *DB) QueueItemIndexSweep(ctx context.Context) error {
	return mapErr(db.inTx(ctx, func(tx pgx.Tx) error { return db.queueItemIndex(ctx, tx, 0) }), "queue item index sweep", "")
}

// IndexItems stores the search document of every item of the project
// (every project for 0) that has none, in batches, and returns how many it
// stored. It is safe to run again and beside itself: an item already
// indexed is skipped. Each batch waits for an import into the project to
// commit, so that it indexes the messages the import leaves.
func (db *DB) IndexItems(ctx context.Context, projectID int64) (int, error) {
	if projectID == 0 {
		rows, err := db.pool.Query(ctx, `SELECT id FROM projects ORDER BY id`)
		if err != nil {
			return 0, mapErr(err, "index items", "")
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return 0, mapErr(err, "index items", "")
		}
		total := 0
		for _, id := range ids {
			n, err := db.IndexItems(ctx, id)
			total += n
			if err != nil {
				return total, err
			}
		}
		return total, nil
	}
	total := 0
	var after int64
	for {
		var n int
		var last *int64
		err := db.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(hashtext('attune.import'), $1::int)`, projectID); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `
				WITH todo AS MATERIALIZED (
					SELECT i.id, i.messages FROM items i
					WHERE i.project_id = $1 AND i.id > $2
					  AND NOT EXISTS (SELECT 1 FROM item_search s WHERE s.item_id = i.id)
					ORDER BY i.id LIMIT $3),
				stored AS (
					INSERT INTO item_search (item_id, project_id, document)
					SELECT id, $1, items_text(messages) FROM todo
					ON CONFLICT (item_id) DO NOTHING RETURNING 1)
				SELECT (SELECT count(*) FROM stored), (SELECT max(id) FROM todo)`,
				projectID, after, itemIndexBatch).Scan(&n, &last)
		})
		if err != nil {
			return total, mapErr(err, "index items", "")
		}
		total += n
		if last == nil {
			return total, nil
		}
		after = *last
	}
}

// ItemIndexer is the worker of the indexing jobs.
type ItemIndexer struct {
	river.WorkerDefaults[ItemIndexArgs]
	db *DB
}

// ItemIndexer returns the worker that runs the indexing jobs on db.
func (db *DB) ItemIndexer() *ItemIndexer { return &ItemIndexer{db: db} }

// Work indexes the job's project; a failed job is tried again by the
// queue, and goes on where the last try stopped.
func (w *ItemIndexer) Work(ctx context.Context, job *river.Job[ItemIndexArgs]) error {
	_, err := w.db.IndexItems(ctx, job.Args.ProjectID)
	return err
}

// Register adds the worker to a queue client's workers and names its
// queue: one job at a time, since indexing is CPU of the database.
func (w *ItemIndexer) Register(ws *river.Workers) (string, river.QueueConfig) {
	river.AddWorker(ws, river.Worker[ItemIndexArgs](w))
	return ItemIndexQueue, river.QueueConfig{MaxWorkers: 1}
}
