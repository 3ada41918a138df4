package store

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// exportBatch is how many rows an export fetches from its cursor with one
// statement: enough that the round trip between batches costs nothing
// beside the rows, few enough that a batch comes well within the export
// timeout.
const exportBatch = 2000

// cursorRows reads a query through a cursor, a batch of rows per FETCH,
// and hands them out one at a time as pgx.Rows does. Each FETCH is a
// statement of its own, so the transaction's statement_timeout bounds how
// long PostgreSQL takes to produce a batch, not how long the client takes
// to read the whole result: an export streaming to a slow download for an
// hour is not cut, one whose query makes no progress is.
type cursorRows struct {
	ctx   context.Context
	tx    pgx.Tx
	fetch string
	cur   pgx.Rows
	n     int // rows read from cur
	done  bool
	err   error
}

// openCursor declares cursor name for sql with args in tx (which must
// stay open while the rows are read) and returns its rows. The cursor is
// planned as if every row will be read (cursor_tuple_fraction = 1), the
// plan the query gets without a cursor.
func openCursor(ctx context.Context, tx pgx.Tx, name, sql string, args ...any) (pgx.Rows, error) {
	if _, err := tx.Exec(ctx, `SET LOCAL cursor_tuple_fraction = 1`); err != nil {
		return nil, err
	}
	id := pgx.Identifier{name}.Sanitize()
	if _, err := tx.Exec(ctx, "DECLARE "+id+" NO SCROLL CURSOR FOR "+sql, args...); err != nil {
		return nil, err
	}
	return &cursorRows{ctx: ctx, tx: tx, fetch: "FETCH " + strconv.Itoa(exportBatch) + " FROM " + id}, nil
}

func (c *cursorRows) Next() bool {
	for {
		if c.cur != nil {
			if c.cur.Next() {
				c.n++
				return true
			}
			c.cur.Close()
			if err := c.cur.Err(); err != nil {
				c.err, c.done = err, true
			}
			if c.n < exportBatch {
				c.done = true
			}
		}
		if c.done {
			return false
		}
		// The statement cache would keep one FETCH's description for
		// the next cursor of the same name: describe each one afresh.
		cur, err := c.tx.Query(c.ctx, c.fetch, pgx.QueryExecModeDescribeExec)
		if err != nil {
			c.err, c.done = err, true
			return false
		}
		c.cur, c.n = cur, 0
	}
}

func (c *cursorRows) Close() {
	if c.cur != nil {
		c.cur.Close()
	}
	c.done = true
}

func (c *cursorRows) Err() error {
	if c.err != nil {
		return c.err
	}
	if c.cur != nil {
		return c.cur.Err()
	}
	return nil
}

func (c *cursorRows) CommandTag() pgconn.CommandTag {
	if c.cur == nil {
		return pgconn.CommandTag{}
	}
	return c.cur.CommandTag()
}

func (c *cursorRows) FieldDescriptions() []pgconn.FieldDescription {
	if c.cur == nil {
		return nil
	}
	return c.cur.FieldDescriptions()
}

func (c *cursorRows) Scan(dest ...any) error { return c.cur.Scan(dest...) }

func (c *cursorRows) Values() ([]any, error) { return c.cur.Values() }

func (c *cursorRows) RawValues() [][]byte { return c.cur.RawValues() }

func (c *cursorRows) Conn() *pgx.Conn { return c.tx.Conn() }

func (c *cursorRows) TypeMap() *pgtype.Map { return c.tx.Conn().TypeMap() }
