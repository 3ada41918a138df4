package dbtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The minimal submit-and-next the saturation benchmarks are measured
// against, in the same run on the same PostgreSQL: the least a correct
// submit-and-next must write, on the semantics of attune's own (what a
// pgbench script of it would send). Its tables live beside attune's in the
// benchmark's database:
//
//   - ref_counts: an item's counters, narrow and with room on the page, so
//     that a submit (holds −1, done +1, filled unchanged) is a HOT update;
//     the queue's index on filled, as item_counts_next_idx.
//   - ref_assignments: one per person and item, with its lease.
//   - ref_answers: one row per answer set, its answers one jsonb value.
//
// One transaction, sent as one batch: the assignment closed, the answers
// stored, the counters moved, and the next item claimed under the overlap
// rule with FOR NO KEY UPDATE SKIP LOCKED (an item the person was never
// given, the fullest first), its hold counted and its assignment opened.
const (
	submitRefSchema = `
		DROP TABLE IF EXISTS ref_answers, ref_assignments, ref_counts;
		CREATE TABLE ref_counts (
			item_id bigint PRIMARY KEY,
			done    int NOT NULL DEFAULT 0,
			holds   int NOT NULL DEFAULT 0,
			filled  int GENERATED ALWAYS AS (done + holds) STORED
		) WITH (fillfactor = 70);
		CREATE INDEX ref_counts_next_idx ON ref_counts (filled DESC, item_id);
		CREATE TABLE ref_assignments (
			id               bigserial PRIMARY KEY,
			item_id          bigint NOT NULL,
			rater_id         bigint NOT NULL,
			state            text NOT NULL DEFAULT 'active',
			lease_expires_at timestamptz NOT NULL,
			UNIQUE (item_id, rater_id)
		);
		CREATE TABLE ref_answers (
			id       bigserial PRIMARY KEY,
			item_id  bigint NOT NULL,
			rater_id bigint NOT NULL,
			answers  jsonb NOT NULL,
			at       timestamptz NOT NULL DEFAULT now(),
			UNIQUE (item_id, rater_id)
		);`
	submitRefFill  = `INSERT INTO ref_counts (item_id) SELECT g FROM generate_series(1, $1::bigint) g`
	submitRefClaim = `
		WITH pick AS (
			SELECT c.item_id FROM ref_counts c
			WHERE c.filled < $2
			  AND NOT EXISTS (SELECT 1 FROM ref_assignments x WHERE x.item_id = c.item_id AND x.rater_id = $1)
			ORDER BY c.filled DESC, c.item_id LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED),
		held AS (UPDATE ref_counts c SET holds = c.holds + 1 FROM pick WHERE c.item_id = pick.item_id RETURNING c.item_id)
		INSERT INTO ref_assignments (item_id, rater_id, lease_expires_at)
		SELECT item_id, $1, now() + interval '30 minutes' FROM held
		RETURNING id`
	submitRefSubmit = `
		WITH closed AS (
			UPDATE ref_assignments SET state = 'submitted' WHERE id = $1 AND rater_id = $2 AND state = 'active'
			RETURNING item_id, rater_id),
		stored AS (INSERT INTO ref_answers (item_id, rater_id, answers) SELECT item_id, rater_id, $3 FROM closed RETURNING item_id)
		UPDATE ref_counts c SET done = c.done + 1, holds = c.holds - 1 FROM stored WHERE c.item_id = stored.item_id`
)

// submitRefAnswers is an answer set the size of a rubric's (twelve
// answers).
var submitRefAnswers = func() string {
	s := "{"
	for i := range 12 {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`"Q%d":"%d"`, i+1, i%5+1)
	}
	return s + "}"
}()

// claimAgain claims the person's next item on its own, as often as items
// they could be given remain, all of them locked by other claimers at the
// moment; pgx.ErrNoRows when none remains.
func claimAgain(ctx context.Context, pool *pgxpool.Pool, rater int64, overlap int) (int64, error) {
	for {
		var id int64
		err := pool.QueryRow(ctx, submitRefClaim, rater, overlap).Scan(&id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
		var open bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ref_counts c WHERE c.filled < $2
			AND NOT EXISTS (SELECT 1 FROM ref_assignments x WHERE x.item_id = c.item_id AND x.rater_id = $1))`,
			rater, overlap).Scan(&open); err != nil {
			return 0, err
		}
		if !open {
			return 0, pgx.ErrNoRows
		}
	}
}

// SubmitReference has clients annotators submit-and-next the minimal way
// over a pool of ReferenceWorkers connections to the database at dbURL,
// with no time between items, until items items have overlap answers each,
// and returns the submit-and-next per second. It fails the benchmark when
// an item ends with other than overlap answers.
func SubmitReference(tb testing.TB, dbURL string, clients, items, overlap int) float64 {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, WithParam(tb, dbURL, "pool_max_conns", strconv.Itoa(ReferenceWorkers)))
	if err != nil {
		tb.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, submitRefSchema); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, submitRefFill, items); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE ref_counts`); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for range ReferenceWorkers { // open the connections before the clock starts
		wg.Go(func() {
			if err := pool.Ping(ctx); err != nil {
				tb.Error(err)
			}
		})
	}
	wg.Wait()
	var mu sync.Mutex
	submits := 0
	start := time.Now()
	for c := range clients {
		rater := int64(c + 1)
		wg.Go(func() {
			id, err := claimAgain(ctx, pool, rater, overlap)
			n := 0
			for err == nil {
				b := &pgx.Batch{}
				b.Queue(`BEGIN`)
				b.Queue(submitRefSubmit, id, rater, submitRefAnswers)
				b.Queue(submitRefClaim, rater, overlap)
				b.Queue(`COMMIT`)
				br := pool.SendBatch(ctx, b)
				_, err = br.Exec()
				if err == nil {
					var tag pgconn.CommandTag
					tag, err = br.Exec()
					if err == nil && tag.RowsAffected() != 1 {
						err = fmt.Errorf("assignment %d stored %d answer sets", id, tag.RowsAffected())
					}
				}
				if err == nil {
					err = br.QueryRow().Scan(&id)
					if errors.Is(err, pgx.ErrNoRows) {
						id = 0
						err = nil
					}
				}
				if err == nil {
					_, err = br.Exec()
				}
				if cerr := br.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					break
				}
				n++
				if id == 0 {
					id, err = claimAgain(ctx, pool, rater, overlap)
				}
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				tb.Error(err)
			}
			mu.Lock()
			submits += n
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var wrong int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ref_counts c
		WHERE c.done <> $1 OR c.holds <> 0 OR (SELECT count(*) FROM ref_answers a WHERE a.item_id = c.item_id) <> $1`,
		min(overlap, clients)).Scan(&wrong); err != nil {
		tb.Fatal(err)
	}
	if wrong != 0 {
		tb.Fatalf("reference: %d items without exactly %d answers", wrong, min(overlap, clients))
	}
	return float64(submits) / elapsed.Seconds()
}
