package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

const promptColumns = `p.id, p.judge_id, p.rubric_version_id, p.version, p.parent_id, coalesce(pp.version, 0), p.prompts, p.created_by,
	coalesce(u.email, ''), p.created_at, (SELECT count(*) FROM judge_runs r WHERE r.prompt_id = p.id)`

const promptFrom = ` FROM judge_prompts p LEFT JOIN judge_prompts pp ON pp.id = p.parent_id LEFT JOIN users u ON u.id = p.created_by`

func scanPrompt(row pgx.Row) (*attune.JudgePrompt, error) {
	var p attune.JudgePrompt
	var prompts []byte
	if err := row.Scan(&p.ID, &p.JudgeID, &p.RubricVersionID, &p.Version, &p.ParentID, &p.ParentVersion, &prompts, &p.CreatedBy,
		&p.AuthorEmail, &p.CreatedAt, &p.Runs); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(prompts, &p.Prompts); err != nil {
		return nil, fmt.Errorf("judge prompt %d: %w", p.ID, err)
	}
	return &p, nil
}

// RubricPrompts returns a rubric's own judge prompts by item key: version
// 1 of every judge's prompts for it.
func RubricPrompts(def *rubric.Definition) map[string]string {
	out := make(map[string]string, len(def.Items))
	for _, it := range def.Items {
		out[it.Key] = it.Prompt
	}
	return out
}

// rubricInTx reads and parses a rubric version inside a transaction.
func rubricInTx(ctx context.Context, tx pgx.Tx, id int64) (*rubric.Definition, error) {
	var body []byte
	if err := tx.QueryRow(ctx, `SELECT definition::text FROM rubric_versions WHERE id = $1`, id).Scan(&body); err != nil {
		return nil, err
	}
	def, err := rubric.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("stored rubric %d does not parse: %w", id, err)
	}
	return def, nil
}

// ensureFirstPrompt stores version 1 of a judge's prompts for a rubric
// version, the rubric's own prompts verbatim, if it is not stored yet.
func ensureFirstPrompt(ctx context.Context, tx pgx.Tx, judgeID, rubricVersionID int64) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM judge_prompts WHERE judge_id = $1 AND rubric_version_id = $2 AND version = 1)`,
		judgeID, rubricVersionID).Scan(&exists); err != nil || exists {
		return err
	}
	def, err := rubricInTx(ctx, tx, rubricVersionID)
	if err != nil {
		return err
	}
	body, err := json.Marshal(RubricPrompts(def))
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO judge_prompts (judge_id, rubric_version_id, version, prompts) VALUES ($1, $2, 1, $3)
		ON CONFLICT (judge_id, rubric_version_id, version) DO NOTHING`, judgeID, rubricVersionID, body)
	return err
}

// ListJudgePrompts returns every prompt version of a judge for a rubric
// version, oldest first. Version 1 (the rubric's own prompts) is stored
// on first asking, so the list is never empty.
func (db *DB) ListJudgePrompts(ctx context.Context, judgeID, rubricVersionID int64) ([]*attune.JudgePrompt, error) {
	return db.listJudgePrompts(ctx, judgeID, rubricVersionID, nil, nil)
}

// JudgePromptPage is one page of the judge's prompt versions for the
// rubric version, by version: at most limit (1 to MaxSearchPage) after
// the page whose cursor is cursor ("" for the first), and the next page's
// cursor ("" on the last), by keyset on the version.
func (db *DB) JudgePromptPage(ctx context.Context, judgeID, rubricVersionID int64, cursor string, limit int) ([]*attune.JudgePrompt, string, error) {
	return keysetList(cursor, "prompts", 0, limit,
		func(after []any, n int) ([]*attune.JudgePrompt, error) {
			return db.listJudgePrompts(ctx, judgeID, rubricVersionID, after[0], &n)
		},
		func(v *attune.JudgePrompt) (int64, []string) { return int64(v.Version), nil })
}

// listJudgePrompts lists the versions after the version afterVersion (nil:
// from the first), at most limit (nil: all).
func (db *DB) listJudgePrompts(ctx context.Context, judgeID, rubricVersionID int64, afterVersion any, limit *int) ([]*attune.JudgePrompt, error) {
	var out []*attune.JudgePrompt
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if err := ensureFirstPrompt(ctx, tx, judgeID, rubricVersionID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+promptColumns+promptFrom+`
			WHERE p.judge_id = $1 AND p.rubric_version_id = $2 AND ($3::bigint IS NULL OR p.version > $3)
			ORDER BY p.version LIMIT $4`, judgeID, rubricVersionID, afterVersion, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgePrompt, error) { return scanPrompt(r) })
		return err
	})
	return out, mapErr(err, "list judge prompts", "")
}

// FindJudgePrompt returns one prompt version of a judge for a rubric
// version (version 1 is stored on first asking); a version that does not
// exist is attune.ErrNotFound.
func (db *DB) FindJudgePrompt(ctx context.Context, judgeID, rubricVersionID int64, version int) (*attune.JudgePrompt, error) {
	var p *attune.JudgePrompt
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if version == 1 {
			if err := ensureFirstPrompt(ctx, tx, judgeID, rubricVersionID); err != nil {
				return err
			}
		}
		p, err = scanPrompt(tx.QueryRow(ctx, `SELECT `+promptColumns+promptFrom+` WHERE p.judge_id = $1 AND p.rubric_version_id = $2 AND p.version = $3`,
			judgeID, rubricVersionID, version))
		return err
	})
	return p, mapErr(err, "find judge prompt", "")
}

// FindJudgePromptByID returns a prompt version by its id.
func (db *DB) FindJudgePromptByID(ctx context.Context, id int64) (*attune.JudgePrompt, error) {
	p, err := scanPrompt(db.pool.QueryRow(ctx, `SELECT `+promptColumns+promptFrom+` WHERE p.id = $1`, id))
	return p, mapErr(err, "find judge prompt", "")
}

// NewJudgePrompt is what CreateJudgePrompt needs: the judge, the rubric
// version the prompts are for, the version edited (Parent, a number) and
// the edited templates by rubric item key.
type NewJudgePrompt struct {
	JudgeID         int64
	RubricVersionID int64
	Parent          int
	Prompts         map[string]string
}

// CreateJudgePrompt stores the next prompt version of a judge for a rubric
// version, as actorID (nil: the command line), in one transaction. Only
// the judge's owner or an admin may (attune.Judge.MayEditPrompts, else
// attune.ErrForbidden); the templates are checked by
// attune.ValidatePrompts against the rubric (a *attune.ValidationError,
// nothing stored), and must differ from the parent's. Versions are
// numbered in order and never change once stored.
func (db *DB) CreateJudgePrompt(ctx context.Context, actorID *int64, np NewJudgePrompt) (*attune.JudgePrompt, error) {
	var out *attune.JudgePrompt
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// The judge's row is locked so that two edits at once number
		// their versions one after the other.
		j, actor, err := lockJudgeFor(ctx, tx, np.JudgeID, actorID)
		if err != nil {
			return err
		}
		if !j.MayEditPrompts(actor) {
			return attune.Forbidden("Only the judge's owner or an admin can make a new version of its prompts.")
		}
		def, err := rubricInTx(ctx, tx, np.RubricVersionID)
		if err != nil {
			return err
		}
		keys := make([]string, len(def.Items))
		for i, it := range def.Items {
			keys[i] = it.Key
		}
		if err := ensureFirstPrompt(ctx, tx, np.JudgeID, np.RubricVersionID); err != nil {
			return err
		}
		parent, err := scanPrompt(tx.QueryRow(ctx, `SELECT `+promptColumns+promptFrom+` WHERE p.judge_id = $1 AND p.rubric_version_id = $2 AND p.version = $3`,
			np.JudgeID, np.RubricVersionID, np.Parent))
		if err != nil {
			return err
		}
		if err := attune.ValidatePrompts(np.Prompts, keys, def.Judge.Slot, parent.Prompts); err != nil {
			return err
		}
		body, err := json.Marshal(np.Prompts)
		if err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO judge_prompts (judge_id, rubric_version_id, version, parent_id, prompts, created_by)
			SELECT $1, $2, max(version) + 1, $3, $4, $5 FROM judge_prompts WHERE judge_id = $1 AND rubric_version_id = $2
			RETURNING id`, np.JudgeID, np.RubricVersionID, parent.ID, body, actorID).Scan(&id); err != nil {
			return err
		}
		if out, err = scanPrompt(tx.QueryRow(ctx, `SELECT `+promptColumns+promptFrom+` WHERE p.id = $1`, id)); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "judge.prompt", Subject: j.Name,
			Details: map[string]string{"version": fmt.Sprint(out.Version), "parent": fmt.Sprint(parent.Version),
				"rubric_version": fmt.Sprint(np.RubricVersionID)}})
	})
	if err != nil {
		return nil, mapErr(err, "create judge prompt", "")
	}
	return out, nil
}

// runPrompt returns, inside CreateRun's transaction, the prompt version a
// new run of a judge over a project asks with (version 0 or 1: the
// rubric's own prompts) and the rater its answers go to: the judge's own
// for version 1, the version's own rater (made on its first run) for a
// later one.
func runPrompt(ctx context.Context, tx pgx.Tx, judgeID, projectID int64, version int) (promptID, raterID int64, err error) {
	var rubricVersionID int64
	if err := tx.QueryRow(ctx, `SELECT p.rubric_version_id FROM projects p, judges j WHERE p.id = $1 AND j.id = $2`,
		projectID, judgeID).Scan(&rubricVersionID); err != nil {
		return 0, 0, err
	}
	if version <= 1 {
		version = 1
		if err := ensureFirstPrompt(ctx, tx, judgeID, rubricVersionID); err != nil {
			return 0, 0, err
		}
	}
	err = tx.QueryRow(ctx, `SELECT id FROM judge_prompts WHERE judge_id = $1 AND rubric_version_id = $2 AND version = $3`,
		judgeID, rubricVersionID, version).Scan(&promptID)
	if err != nil {
		return 0, 0, attune.Invalid("prompt", fmt.Sprintf("The judge has no prompt version %d for this project's rubric.", version))
	}
	if version == 1 {
		err = tx.QueryRow(ctx, `SELECT id FROM raters WHERE judge_id = $1 AND prompt_id IS NULL`, judgeID).Scan(&raterID)
		return promptID, raterID, err
	}
	err = tx.QueryRow(ctx, `
		WITH made AS (
			INSERT INTO raters (kind, judge_id, prompt_id, name)
			SELECT 'judge', j.id, $2, j.name || ' · prompt v' || $3::int FROM judges j WHERE j.id = $1
			ON CONFLICT (prompt_id) DO NOTHING RETURNING id)
		SELECT id FROM made UNION ALL SELECT id FROM raters WHERE prompt_id = $2`, judgeID, promptID, version).Scan(&raterID)
	return promptID, raterID, err
}
