package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/store"
)

// TestExportRecordsPlans: each of the dataset export's streams reads its
// project through an index, in order, for a project that is not the
// database's first: no sort, no scan of the whole table, no other
// project's rows read and filtered out.
func TestExportRecordsPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, raters := recordsDB(t)
	seedRecords(t, db, "first", 4000, raters)
	second := seedRecords(t, db, "second", 2000, raters)
	if err := pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, store.RecordPlanSettings); err != nil {
			return err
		}
		for _, sql := range store.RecordStreamsSQL {
			rows, err := tx.Query(ctx, "EXPLAIN "+sql, second)
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plan := strings.Join(lines, "\n")
			for _, bad := range []string{"Sort", "Seq Scan", "Bitmap", "Filter:", "Hash"} {
				if strings.Contains(plan, bad) {
					t.Errorf("%s\nplanned as\n%s\nwhich has a %s", strings.TrimSpace(sql), plan, bad)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
