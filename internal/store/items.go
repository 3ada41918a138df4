package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// ImportItem is one checked item of a dataset file, ready to store.
type ImportItem struct {
	Line     int
	SourceID string
	Kind     string
	Messages []byte // JSON array of {"role", "content"}
	Meta     []byte // JSON object
	Turns    int
	SHA256   string
}

// ImportOptions control an import.
type ImportOptions struct {
	ActorID *int64
	Source  string // the file's name, for the audit log
	// Update replaces the content of items whose id exists with different
	// content, as long as nobody has labelled them yet.
	Update bool
}

// ImportResult counts what an import did.
type ImportResult struct {
	Read      int
	Inserted  int
	Updated   int
	Unchanged int
}

// maxConflicts bounds the conflicts an import lists before "… and N more".
const maxConflicts = 50

// ImportItems stores a dataset in a project, all or nothing. read streams
// the checked items: it calls emit with batches, which are copied with one
// COPY (into items for an empty project, else into a temporary table)
// while read goes on with the next ones, so memory is bounded by a few
// batches. emit copies the batch: read may reuse it once emit returns. If
// read returns an error (a bad line found late in the file), or an item
// exists with different content and Update is off, the transaction rolls
// back and nothing of the file is stored. Importing the same file again
// changes nothing. Imports into one project are serialised.
//
// ImportItems is the only way items are made: it writes each new item's
// counters (item_counts) beside it, which no trigger does for it.
func (db *DB) ImportItems(ctx context.Context, projectID int64, opts ImportOptions, read func(emit func([]ImportItem) error) error) (ImportResult, error) {
	var res ImportResult
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.import'), $1::int)`, projectID); err != nil {
			return err
		}
		var empty bool
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM items WHERE project_id = $1)`, projectID).Scan(&empty); err != nil {
			return err
		}
		if empty {
			// Nothing can conflict with an empty project (the reader has
			// refused ids repeated in the file): copy straight into items.
			n, err := copyImport(ctx, tx, "items",
				[]string{"project_id", "source_id", "kind", "messages", "meta", "turns", "sha256"},
				func(it *ImportItem, row []any) {
					row[0], row[1], row[2], row[3], row[4], row[5], row[6] = projectID, it.SourceID, it.Kind, it.Messages, it.Meta, it.Turns, it.SHA256
				}, read)
			res.Read = int(n)
			if err != nil {
				return err
			}
			// The project's items are exactly those just copied: it was
			// empty, and only imports, serialised per project above, add
			// items.
			// In a project of drawn queues new items wait for a draw.
			if _, err := tx.Exec(ctx, `INSERT INTO item_counts (item_id, project_id, held)
				SELECT id, project_id, (SELECT drawn_queue FROM projects WHERE id = $1) FROM items WHERE project_id = $1`, projectID); err != nil {
				return err
			}
			res.Inserted = res.Read
			return db.importDone(ctx, tx, opts, projectID, res)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_items (
			line int NOT NULL, source_id text NOT NULL, kind text NOT NULL, messages json NOT NULL,
			meta jsonb NOT NULL, turns int NOT NULL, sha256 text NOT NULL) ON COMMIT DROP`); err != nil {
			return err
		}
		n, err := copyImport(ctx, tx, "import_items",
			[]string{"line", "source_id", "kind", "messages", "meta", "turns", "sha256"},
			func(it *ImportItem, row []any) {
				row[0], row[1], row[2], row[3], row[4], row[5], row[6] = it.Line, it.SourceID, it.Kind, it.Messages, it.Meta, it.Turns, it.SHA256
			}, read)
		res.Read = int(n)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE INDEX ON import_items (source_id)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ANALYZE import_items`); err != nil {
			return err
		}

		// Items whose id exists with other content.
		conflicts, err := tx.Query(ctx, `
			SELECT t.line, t.source_id, EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id) AS labelled
			FROM import_items t JOIN items i ON i.project_id = $1 AND i.source_id = t.source_id
			WHERE i.sha256 <> t.sha256
			ORDER BY t.line`, projectID)
		if err != nil {
			return err
		}
		problems := &attune.LineErrors{}
		var changed int
		for conflicts.Next() {
			var line int
			var id string
			var labelled bool
			if err := conflicts.Scan(&line, &id, &labelled); err != nil {
				conflicts.Close()
				return err
			}
			changed++
			var msg string
			switch {
			case !opts.Update:
				msg = fmt.Sprintf("an item with id %q already exists in this project with different content; import with update to replace it", id)
			case labelled:
				msg = fmt.Sprintf("the item with id %q already has labels, so its content cannot change; give the changed dialogue a new id", id)
			default:
				continue
			}
			if len(problems.Errors) < maxConflicts {
				problems.Errors = append(problems.Errors, attune.LineError{Line: line, Field: "id", Message: msg})
			} else {
				problems.More++
			}
		}
		conflicts.Close()
		if err := conflicts.Err(); err != nil {
			return err
		}
		if len(problems.Errors) > 0 {
			return problems
		}

		tag, err := tx.Exec(ctx, `
			WITH inserted AS (
				INSERT INTO items (project_id, source_id, kind, messages, meta, turns, sha256)
				SELECT $1, t.source_id, t.kind, t.messages, t.meta, t.turns, t.sha256 FROM import_items t
				WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.project_id = $1 AND i.source_id = t.source_id)
				ORDER BY t.line
				RETURNING id, project_id)
			INSERT INTO item_counts (item_id, project_id, held)
			SELECT id, project_id, (SELECT drawn_queue FROM projects WHERE id = $1) FROM inserted`, projectID)
		if err != nil {
			return err
		}
		res.Inserted = int(tag.RowsAffected())
		if opts.Update && changed > 0 {
			// A changed item's search document goes with its old
			// messages; the indexing job makes the new one.
			if err := tx.QueryRow(ctx, `
				WITH changed AS (
					UPDATE items i SET kind = t.kind, messages = t.messages, meta = t.meta, turns = t.turns, sha256 = t.sha256
					FROM import_items t WHERE i.project_id = $1 AND i.source_id = t.source_id AND i.sha256 <> t.sha256
					RETURNING i.id),
				stale AS (DELETE FROM item_search s USING changed c WHERE s.item_id = c.id)
				SELECT count(*) FROM changed`, projectID).Scan(&res.Updated); err != nil {
				return err
			}
		}
		res.Unchanged = res.Read - res.Inserted - res.Updated
		return db.importDone(ctx, tx, opts, projectID, res)
	})
	if err != nil {
		return ImportResult{}, mapErr(err, "import items", "")
	}
	return res, nil
}

// copyImport streams the batches read emits into table with one COPY.
// read runs in its own goroutine, so that checking the file and PostgreSQL
// storing it overlap: one COPY per batch would leave each waiting for the
// other. fill sets a row's values from an item. An error from read (the
// file's problems) aborts the COPY and is returned as it is; read stops
// at its next emit when the COPY fails.
func copyImport(ctx context.Context, tx pgx.Tx, table string, cols []string, fill func(*ImportItem, []any),
	read func(emit func([]ImportItem) error) error) (int64, error) {
	batches := make(chan []ImportItem, 4)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		defer close(batches)
		readErr <- read(func(batch []ImportItem) error {
			select {
			case batches <- slices.Clone(batch):
				return nil
			case <-stop:
				return errCopyStopped
			}
		})
	}()
	src := &importSource{batches: batches, readErr: readErr, fill: fill, row: make([]any, len(cols))}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, src)
	close(stop)
	for range batches {
		// Drain, so that the reader's goroutine ends before we return.
	}
	if !src.done {
		src.err = <-readErr
	}
	if src.err != nil && src.err != errCopyStopped {
		return n, src.err
	}
	return n, err
}

// errCopyStopped ends a read whose COPY has failed.
var errCopyStopped = errors.New("store: import copy stopped")

// importSource hands the batches of a concurrent read to CopyFrom.
type importSource struct {
	batches <-chan []ImportItem
	readErr <-chan error
	fill    func(*ImportItem, []any)
	row     []any // reused: CopyFrom encodes a row before asking for the next
	batch   []ImportItem
	next    int
	done    bool // the read has ended and err is its result
	err     error
}

func (s *importSource) Next() bool {
	for s.next >= len(s.batch) {
		b, ok := <-s.batches
		if !ok {
			s.done, s.err = true, <-s.readErr
			return false
		}
		s.batch, s.next = b, 0
	}
	s.fill(&s.batch[s.next], s.row)
	s.next++
	return true
}

func (s *importSource) Values() ([]any, error) { return s.row, nil }

func (s *importSource) Err() error { return s.err }

// importDone records a finished item import in the audit log, queues the
// indexing of its new items for search, and announces it to the project's
// webhooks, in the import's transaction.
func (db *DB) importDone(ctx context.Context, tx pgx.Tx, opts ImportOptions, projectID int64, res ImportResult) error {
	if err := audit(ctx, tx, importEvent(opts, projectID, res)); err != nil {
		return err
	}
	if res.Inserted+res.Updated > 0 {
		if err := db.queueItemIndex(ctx, tx, projectID); err != nil {
			return err
		}
	}
	return db.announce(ctx, tx, projectID, attune.EventImportFinished, map[string]any{
		"kind": "items", "read": res.Read, "inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Read - res.Inserted - res.Updated})
}

func importEvent(opts ImportOptions, projectID int64, res ImportResult) attune.AuditEvent {
	return attune.AuditEvent{ActorID: opts.ActorID, Action: "project.import", ProjectID: &projectID, Subject: opts.Source,
		Details: map[string]string{"read": fmt.Sprint(res.Read), "inserted": fmt.Sprint(res.Inserted), "updated": fmt.Sprint(res.Updated)}}
}

// factsOfMessages works out rubric.FactsOf from an item's stored messages.
func factsOfMessages(turns int, msgs []byte, sensitive bool) (rubric.Facts, error) {
	var ms []attune.Message
	if err := json.Unmarshal(msgs, &ms); err != nil {
		return rubric.Facts{}, fmt.Errorf("messages: %w", err)
	}
	texts := make([]string, len(ms))
	for i, m := range ms {
		texts[i] = m.Content
	}
	return rubric.FactsOf(turns, texts, sensitive), nil
}
