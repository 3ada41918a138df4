package dbtest

import (
	"context"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The reference write benchmarks are measured against, in the same run on
// the same PostgreSQL: single-row INSERT … ON CONFLICT, the cheapest write
// a request could make (what pgbench measures with one such statement per
// transaction).
const (
	ReferenceTable  = `CREATE TABLE IF NOT EXISTS bench_reference (k bigint PRIMARY KEY, v bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())`
	ReferenceInsert = `INSERT INTO bench_reference (k, v) VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET v = bench_reference.v + 1, at = now()`
	// ReferenceWorkers is how many goroutines the saturation reference
	// writes from, each with its own connection.
	ReferenceWorkers = 32
)

// WithParam returns dbURL with the query parameter name set to value (a
// pgx pool setting such as pool_max_conns).
func WithParam(tb testing.TB, dbURL, name, value string) string {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// InsertReference runs ops single-row ReferenceInserts from workers
// goroutines, each on its own connection to the database at dbURL, and
// returns their rate. measure, when not nil, is started just before the
// first insert and stopped after the last (a CPU meter, say); its result
// is divided by the inserts done.
func InsertReference(tb testing.TB, dbURL string, workers, ops int, measure func(*pgxpool.Pool) func() time.Duration) (perSecond float64, perOp time.Duration) {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, WithParam(tb, dbURL, "pool_max_conns", strconv.Itoa(workers)))
	if err != nil {
		tb.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, ReferenceTable); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for range workers { // open the connections before the clock starts
		wg.Go(func() {
			if err := pool.Ping(ctx); err != nil {
				tb.Error(err)
			}
		})
	}
	wg.Wait()
	var stop func() time.Duration
	if measure != nil {
		stop = measure(pool)
	}
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range ops / workers {
				if _, err := pool.Exec(ctx, ReferenceInsert, rng.Int64N(100_000)); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	n := ops / workers * workers
	if stop != nil {
		perOp = stop() / time.Duration(n)
	}
	return float64(n) / elapsed.Seconds(), perOp
}
