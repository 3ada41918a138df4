package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// RubricVersion is a stored rubric version as lists show it.
type RubricVersion struct {
	ID        int64
	Ref       rubric.Ref
	Kind      rubric.Kind
	Title     string
	Builtin   bool
	SHA256    string
	CreatedAt time.Time
}

// AddRubric stores a rubric version. Adding the same definition again is a
// no-op (added is false); a different definition under an existing
// key@version is an attune.ErrConflict that says to bump the version,
// because a version never changes once labels point at it. Replicas loading
// the built-ins together are serialised by an advisory lock.
func (db *DB) AddRubric(ctx context.Context, actorID *int64, def *rubric.Definition, builtin bool) (added bool, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.rubric_versions'))`); err != nil {
			return err
		}
		var stored string
		err := tx.QueryRow(ctx, `SELECT sha256 FROM rubric_versions WHERE key = $1 AND version = $2`, def.Key, def.Version).Scan(&stored)
		if err == nil {
			if err := def.CheckHash(stored); err != nil {
				return attune.Conflict(fmt.Sprintf(
					"rubric %s already exists with different content; a version never changes once labels point at it, so give the changed file a new version (for example %s@%s)",
					def.Ref(), def.Key, nextVersion(def.Version)))
			}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var id int64
		err = tx.QueryRow(ctx, `
			INSERT INTO rubric_versions (key, version, kind, title, definition, sha256, builtin, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			def.Key, def.Version, def.Kind, def.Title, string(def.Canonical()), def.Hash(), builtin, actorID).Scan(&id)
		if err != nil {
			return err
		}
		// The items and every value a label may hold: the rubric's answers
		// (NA included even where a person may not give it, because a judge
		// may, and the rubric scores it as a failure) and ERROR, which a
		// failed judge call records.
		var items, answerItems, answerValues []string
		var positions []int32
		for i, it := range def.Items {
			items = append(items, it.Key)
			positions = append(positions, int32(i))
			values := []rubric.Value{rubric.Error}
			for _, a := range def.Answers {
				values = append(values, a.Value)
			}
			values = append(values, def.Allowed(&it)...)
			slices.Sort(values)
			for _, v := range slices.Compact(values) {
				answerItems = append(answerItems, it.Key)
				answerValues = append(answerValues, string(v))
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rubric_items (rubric_version_id, key, position)
			SELECT $1, k, p FROM unnest($2::text[], $3::int[]) AS t(k, p)`, id, items, positions); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rubric_answers (rubric_version_id, item_key, value)
			SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS t(k, v)`, id, answerItems, answerValues); err != nil {
			return err
		}
		added = true
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "rubric.add", Subject: def.Ref().String(),
			Details: map[string]string{"sha256": def.Hash(), "builtin": strconv.FormatBool(builtin)}})
	})
	if err != nil {
		return false, mapErr(err, "add rubric "+def.Ref().String(), "")
	}
	return added, nil
}

// LoadBuiltinRubrics stores every built-in rubric version that is not yet
// stored. A built-in that differs from its stored version is refused: the
// binary changed a version it had shipped.
func (db *DB) LoadBuiltinRubrics(ctx context.Context) error {
	for _, def := range rubric.Builtins() {
		if _, err := db.AddRubric(ctx, nil, def, true); err != nil {
			return fmt.Errorf("built-in rubric: %w", err)
		}
	}
	return nil
}

// ListRubrics returns every stored rubric version, by key and then version
// (numerically where versions are numbers).
func (db *DB) ListRubrics(ctx context.Context) ([]RubricVersion, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, key, version, kind, title, builtin, sha256, created_at FROM rubric_versions`)
	if err != nil {
		return nil, mapErr(err, "list rubrics", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RubricVersion, error) {
		var v RubricVersion
		err := r.Scan(&v.ID, &v.Ref.Key, &v.Ref.Version, &v.Kind, &v.Title, &v.Builtin, &v.SHA256, &v.CreatedAt)
		return v, err
	})
	if err != nil {
		return nil, mapErr(err, "list rubrics", "")
	}
	slices.SortFunc(out, func(a, b RubricVersion) int {
		if c := strings.Compare(a.Ref.Key, b.Ref.Key); c != 0 {
			return c
		}
		return CompareVersions(a.Ref.Version, b.Ref.Version)
	})
	return out, nil
}

// FindRubric returns the stored definition of ref. An empty ref.Version
// means the newest version of ref.Key.
func (db *DB) FindRubric(ctx context.Context, ref rubric.Ref) (*rubric.Definition, RubricVersion, error) {
	if ref.Version == "" {
		all, err := db.ListRubrics(ctx)
		if err != nil {
			return nil, RubricVersion{}, err
		}
		for _, v := range all {
			if v.Ref.Key == ref.Key {
				ref.Version = v.Ref.Version // sorted: the last one wins
			}
		}
		if ref.Version == "" {
			return nil, RubricVersion{}, attune.NotFound(fmt.Sprintf("no rubric has the key %q", ref.Key))
		}
	}
	var v RubricVersion
	var body []byte
	err := db.pool.QueryRow(ctx, `SELECT id, key, version, kind, title, builtin, sha256, created_at, definition::text
		FROM rubric_versions WHERE key = $1 AND version = $2`, ref.Key, ref.Version).
		Scan(&v.ID, &v.Ref.Key, &v.Ref.Version, &v.Kind, &v.Title, &v.Builtin, &v.SHA256, &v.CreatedAt, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, v, attune.NotFound(fmt.Sprintf("no rubric %s", ref))
	}
	if err != nil {
		return nil, v, mapErr(err, "find rubric", "")
	}
	def, err := rubric.Parse(body)
	if err != nil {
		return nil, v, fmt.Errorf("store: stored rubric %s does not parse: %w", ref, err)
	}
	return def, v, nil
}

// CompareVersions orders version strings part by part, numerically where
// both parts are numbers ("2.10" after "2.9"), as text otherwise.
func CompareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		var c int
		if errX == nil && errY == nil {
			c = x - y
		} else {
			c = strings.Compare(as[i], bs[i])
		}
		if c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

// nextVersion suggests the version after v: its last number plus one.
func nextVersion(v string) string {
	parts := strings.Split(v, ".")
	if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
		parts[len(parts)-1] = strconv.Itoa(n + 1)
		return strings.Join(parts, ".")
	}
	return v + ".1"
}

// FindRubricByID returns the stored definition with the given id, parsed
// once per process. Callers share it and must not change it.
func (db *DB) FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error) {
	if def, ok := db.rubrics.Load(id); ok {
		return def.(*rubric.Definition), nil
	}
	var body []byte
	err := db.pool.QueryRow(ctx, `SELECT definition::text FROM rubric_versions WHERE id = $1`, id).Scan(&body)
	if err != nil {
		return nil, mapErr(err, "find rubric", "")
	}
	def, err := rubric.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("store: stored rubric %d does not parse: %w", id, err)
	}
	db.rubrics.Store(id, def)
	return def, nil
}
