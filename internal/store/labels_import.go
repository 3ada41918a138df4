package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// LabelsImportOptions control a labels import.
type LabelsImportOptions struct {
	ActorID *int64
	Source  string // the file's name, for the audit log and messages
	// ConfirmWarnings stores people's answer sets the rubric warns about,
	// as an annotator does who confirms them; without it such a set is
	// refused with the warning, as an unconfirmed submission is.
	ConfirmWarnings bool
}

// LabelsImportResult counts what a labels import stored.
type LabelsImportResult struct {
	Labels     int // rows read and stored
	AnswerSets int
	// People and Judges count the raters the import created: people
	// without accounts, and judges that had no row yet.
	People int
	Judges int
}

// ImportLabel is one label of a labels import, read from its file and
// checked on its own by the caller (dataset.ReadLabels): Kind is human or
// judge, Key an item of the project's rubric, Value an answer. The store
// checks what needs the whole import or the database.
type ImportLabel struct {
	Line      int // the file's line, named in problems
	Item      string
	Rater     string
	Kind      string
	Key       string
	Value     string
	Rationale string
	Evidence  []int // the turns where a failing answer fails, from 1
}

// maxLabelErrors bounds the problems a refused labels import lists before
// "… and N more".
const maxLabelErrors = 50

// ImportLabels stores labels made elsewhere — an earlier annotation round,
// judges run outside attune — in the project, all or nothing, so that they
// count in its agreement report like any other.
//
// read hands emit the import's labels in batches, already parsed and each
// checked on its own; it runs inside the import's transaction, and the
// labels are copied into a temporary table as they come, so memory does
// not grow with the file. When read returns *attune.LineErrors (lines it
// refused), the labels it handed on are still checked, so that one refusal
// names every problem; any other error from read aborts the import as it
// is. The rows of one item and rater make one answer set. Raters are found
// or created by name: a person becomes a rater without an account (never
// one of the accounts), a judge the judge of that name, created with
// provider openai, model "imported" and no settings when there is none
// (its creation is in the audit log). A person's answer set is checked by
// the rubric's validation with the item's facts (rubric.FactsOf), as an
// annotator's answers are (NA where the rubric forbids it, ERROR, or NA on
// an item whose turn condition holds are refused; a set the rubric warns
// about, such as NA on CQ9 in a dialogue with crisis signals, is refused
// unless opts.ConfirmWarnings); a judge's answers are held to the rule a
// run's are. Each answer's turn evidence is held to
// rubric.Definition.ValidateEvidence with the item's facts, under the
// project's policy for a person's and as never required for a judge's, and
// stored with its label. An answer set may leave rubric items out: an earlier round may
// have labelled only some. Imported people's answer sets count as done for
// the item, like an annotator's.
//
// The import is refused whole, with *attune.LineErrors naming each line
// and field (at most 50, then a count), when read refused lines, an item
// is not in the project, a rater answers a rubric item of an item twice, a
// rater name is both a person and a judge, or a rater already has answers
// for an item in the project (an import never replaces answers). Imports
// are serialised.
func (db *DB) ImportLabels(ctx context.Context, projectID int64, opts LabelsImportOptions, read func(emit func([]ImportLabel) error) error) (LabelsImportResult, error) {
	var res LabelsImportResult
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		return res, err
	}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return res, err
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		// One import at a time, across projects: imports create raters by
		// name, and two at once could create the same person twice.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.labels_import'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_labels (
			line int NOT NULL, item text NOT NULL, rater text NOT NULL, kind text NOT NULL,
			key text NOT NULL, value text NOT NULL, rationale text NOT NULL, evidence int[] NOT NULL) ON COMMIT DROP`); err != nil {
			return err
		}
		problems := &lineProblems{}
		n, err := copyLabels(ctx, tx, read, problems)
		if err != nil {
			return err
		}
		res.Labels = n
		if n == 0 {
			if !problems.any() {
				// The reader names an empty file on its line; this is a
				// caller that handed on nothing.
				return attune.Invalid("file", "no labels to import")
			}
			return problems.err()
		}
		// The good lines are checked further even when some lines are
		// bad, so that one refusal names every problem: a person's values
		// are judged only with their answer set.
		if _, err := tx.Exec(ctx, `CREATE INDEX ON import_labels (item, rater, kind)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ANALYZE import_labels`); err != nil {
			return err
		}
		if err := checkLabels(ctx, tx, p.ID, def, p.Evidence(), opts.ConfirmWarnings, problems); err != nil {
			return err
		}
		if problems.any() {
			return problems.err()
		}
		// Imported people's answer sets count towards overlap: the
		// import may complete it, and then says so, once.
		short, items, err := overlapCounts(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		wasFull := items > 0 && short == 0
		if err := storeLabels(ctx, tx, p, opts, &res); err != nil {
			return err
		}
		if err := db.settleImported(ctx, tx, p.ID); err != nil {
			return err
		}
		if err := db.announce(ctx, tx, p.ID, attune.EventImportFinished, map[string]any{"kind": "labels", "labels": res.Labels}); err != nil {
			return err
		}
		if wasFull {
			return nil
		}
		// The histogram takes the import's counts now rather than at
		// commit, so the check sees them.
		if _, err := tx.Exec(ctx, `SET CONSTRAINTS item_counts_progress_update IMMEDIATE`); err != nil {
			return err
		}
		return db.announceIfFullOverlap(ctx, tx, p.ID, 0)
	})
	if err != nil {
		var le *attune.LineErrors
		if errors.As(err, &le) {
			return LabelsImportResult{}, le
		}
		return LabelsImportResult{}, mapErr(err, "import labels", "")
	}
	return res, nil
}

// settleImported has the consensus rule settle the items the import gave
// answers (settle), a batch at a time: those it completed get gold or a
// place in the queue, and those with complete labels already are judged
// again with the new answers (a judge's only move an item in the queue).
func (db *DB) settleImported(ctx context.Context, tx pgx.Tx, projectID int64) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT i.id FROM import_labels t JOIN items i ON i.project_id = $1 AND i.source_id = t.item ORDER BY i.id`,
		projectID)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	var all settlement
	const batch = 2000
	for len(ids) > 0 {
		n := min(batch, len(ids))
		s, err := db.settle(ctx, tx, projectID, ids[:n])
		if err != nil {
			return err
		}
		all.add(s)
		ids = ids[n:]
	}
	return db.announceSettled(ctx, tx, projectID, all)
}

// lineProblems collects a file's problems, keeping the first ones by line.
type lineProblems struct {
	list []attune.LineError
	more int
}

func (p *lineProblems) add(line int, field, format string, args ...any) {
	p.list = append(p.list, attune.LineError{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
	// Keep the earliest lines: sort and cut now and then, so that a file
	// of many bad lines costs little memory.
	if len(p.list) >= 4*maxLabelErrors {
		p.trim()
	}
}

func (p *lineProblems) trim() {
	slices.SortStableFunc(p.list, func(a, b attune.LineError) int { return a.Line - b.Line })
	if len(p.list) > maxLabelErrors {
		p.more += len(p.list) - maxLabelErrors
		p.list = p.list[:maxLabelErrors]
	}
}

func (p *lineProblems) any() bool { return len(p.list) > 0 }

func (p *lineProblems) err() error {
	p.trim()
	return &attune.LineErrors{Errors: p.list, More: p.more}
}

// copyLabels copies the labels read hands on into import_labels, batch
// by batch, and returns how many it copied. Lines read refused become the
// import's problems.
func copyLabels(ctx context.Context, tx pgx.Tx, read func(emit func([]ImportLabel) error) error, problems *lineProblems) (int, error) {
	n := 0
	rows := make([][]any, 0, 2000)
	err := read(func(batch []ImportLabel) error {
		rows = rows[:0]
		for _, l := range batch {
			turns := l.Evidence
			if turns == nil {
				turns = []int{}
			}
			rows = append(rows, []any{l.Line, l.Item, l.Rater, l.Kind, l.Key, l.Value, l.Rationale, turns})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_labels"}, []string{"line", "item", "rater", "kind", "key", "value", "rationale", "evidence"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		n += len(batch)
		return nil
	})
	var le *attune.LineErrors
	if errors.As(err, &le) {
		for _, e := range le.Errors {
			problems.add(e.Line, e.Field, "%s", e.Message)
		}
		problems.more += le.More
		return n, nil
	}
	return n, err
}

// checkLabels runs the checks that need the whole file or the database:
// unknown items, repeated labels, a name both a person and a judge,
// answers that exist already, and people's answer sets as the engine
// validates them, with their turn evidence under the project's policy.
func checkLabels(ctx context.Context, tx pgx.Tx, projectID int64, def *rubric.Definition, policy rubric.EvidencePolicy, confirmed bool, problems *lineProblems) error {
	type check struct {
		sql  string
		emit func(rows pgx.Rows) error
	}
	checks := []check{
		{`SELECT t.line, t.item FROM import_labels t
		  WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.project_id = $1 AND i.source_id = t.item)
		  ORDER BY t.line LIMIT 200`,
			func(rows pgx.Rows) error {
				var line int
				var item string
				if err := rows.Scan(&line, &item); err != nil {
					return err
				}
				problems.add(line, "item", "no item has the id %q in this project", item)
				return nil
			}},
		{`SELECT line, first, rater, key, item FROM (
			SELECT line, rater, key, item, min(line) OVER w AS first, row_number() OVER w AS n
			FROM import_labels WINDOW w AS (PARTITION BY item, rater, kind, key ORDER BY line)) d
		  WHERE n > 1 ORDER BY line LIMIT 200`,
			func(rows pgx.Rows) error {
				var line, first int
				var rater, key, item string
				if err := rows.Scan(&line, &first, &rater, &key, &item); err != nil {
					return err
				}
				problems.add(line, "rubric_item", "%s already has a label for %s of item %q on line %d", rater, key, item, first)
				return nil
			}},
		{`SELECT rater, min(line) FILTER (WHERE kind = 'human'), min(line) FILTER (WHERE kind = 'judge')
		  FROM import_labels GROUP BY rater
		  HAVING count(*) FILTER (WHERE kind = 'human') > 0 AND count(*) FILTER (WHERE kind = 'judge') > 0
		  ORDER BY 2 LIMIT 200`,
			func(rows pgx.Rows) error {
				var rater string
				var human, judge int
				if err := rows.Scan(&rater, &human, &judge); err != nil {
					return err
				}
				problems.add(max(human, judge), "rater_kind", "%s is a human on line %d and a judge on line %d; give a person and a judge different names", rater, human, judge)
				return nil
			}},
		{`SELECT min(t.line), t.rater, t.item FROM import_labels t
		  JOIN items i ON i.project_id = $1 AND i.source_id = t.item
		  JOIN raters r ON r.name = t.rater AND r.kind = t.kind
		       AND (t.kind = 'judge' OR r.user_id IS NULL)
		       AND (t.kind = 'human' OR r.prompt_id IS NULL AND EXISTS (SELECT 1 FROM judges j WHERE j.id = r.judge_id AND j.name = t.rater))
		  JOIN answer_sets s ON s.item_id = i.id AND s.rater_id = r.id
		  GROUP BY t.rater, t.item ORDER BY 1 LIMIT 200`,
			func(rows pgx.Rows) error {
				var line int
				var rater, item string
				if err := rows.Scan(&line, &rater, &item); err != nil {
					return err
				}
				problems.add(line, "rater", "%s already has answers for item %q in this project; an import never replaces answers", rater, item)
				return nil
			}},
	}
	for _, c := range checks {
		rows, err := tx.Query(ctx, c.sql, queryArgs(c.sql, projectID)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := c.emit(rows); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if err := validateHumanSets(ctx, tx, projectID, def, policy, confirmed, problems); err != nil {
		return err
	}
	return refuseJudgeAnswers(ctx, tx, projectID, def, policy, problems)
}

// refuseJudgeAnswers holds each imported judge's answer to the rule a run's
// answers are held to (rubric.Definition.JudgeRefuses), with the item's
// facts: an answer a run would re-ask and record as ERROR is not stored
// from a file either. Its turns are held to the rule a run's are
// (rubric.Definition.ValidateEvidence, never required), and refused on a
// project that takes no evidence. It reads each item's messages once.
func refuseJudgeAnswers(ctx context.Context, tx pgx.Tx, projectID int64, def *rubric.Definition, policy rubric.EvidencePolicy, problems *lineProblems) error {
	if policy != rubric.EvidenceOff {
		policy = rubric.EvidenceOptional
	}
	rows, err := tx.Query(ctx, `
		SELECT t.item, i.turns, i.sensitive, t.line, t.key, t.value, t.evidence,
		       CASE WHEN row_number() OVER (PARTITION BY t.item ORDER BY t.line) = 1 THEN i.messages END
		FROM import_labels t
		JOIN items i ON i.project_id = $1 AND i.source_id = t.item
		WHERE t.kind = 'judge'
		ORDER BY t.item, t.line`, projectID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var item string
	var facts rubric.Facts
	for rows.Next() {
		var it, key, v string
		var turns, line int
		var sensitive bool
		var msgs []byte
		var evidence []int
		if err := rows.Scan(&it, &turns, &sensitive, &line, &key, &v, &evidence, &msgs); err != nil {
			return err
		}
		if it != item {
			if facts, err = factsOfMessages(turns, msgs, sensitive); err != nil {
				return fmt.Errorf("item %q: %w", it, err)
			}
			item = it
		}
		ri, ok := def.Item(key)
		if !ok {
			continue // refused on its line already
		}
		if reason, refused := def.JudgeRefuses(ri, rubric.Value(v), facts); refused {
			problems.add(line, "value", "%s (a judge's answer is held to the rule a run's is)", reason)
		}
		if len(evidence) > 0 {
			for _, is := range def.ValidateEvidence(rubric.Answers{key: rubric.Value(v)}, rubric.Evidence{key: evidence}, facts, policy) {
				problems.add(line, "evidence", "%s", is.Message)
			}
		}
	}
	return rows.Err()
}

// queryArgs passes the project to the checks that use it.
func queryArgs(sql string, projectID int64) []any {
	if strings.Contains(sql, "$1") {
		return []any{projectID}
	}
	return nil
}

// validateHumanSets validates each person's answer set as the engine
// validates an annotator's, with the item's facts (rubric.FactsOf), and
// accepts rubric items left out: a set the rubric refuses is refused, and
// one it warns about is refused unless the warnings are confirmed. Its
// turn evidence is held to the rule a submission's is
// (rubric.Definition.ValidateEvidence) under the project's policy. It
// reads one answer set at a time, and each item's messages once.
func validateHumanSets(ctx context.Context, tx pgx.Tx, projectID int64, def *rubric.Definition, policy rubric.EvidencePolicy, confirmed bool, problems *lineProblems) error {
	rows, err := tx.Query(ctx, `
		SELECT t.item, t.rater, i.turns, i.sensitive, t.line, t.key, t.value, t.evidence,
		       CASE WHEN row_number() OVER (PARTITION BY t.item ORDER BY t.rater, t.line) = 1 THEN i.messages END
		FROM import_labels t
		JOIN items i ON i.project_id = $1 AND i.source_id = t.item
		WHERE t.kind = 'human'
		ORDER BY t.item, t.rater, t.line`, projectID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var item, rater string
	var facts rubric.Facts
	answers := rubric.Answers{}
	evidence := rubric.Evidence{}
	lines := map[string]int{}
	flush := func() {
		if len(answers) == 0 {
			return
		}
		var kept rubric.Issues
		for _, is := range def.Validate(answers, facts, rubric.Options{}) {
			if _, ok := lines[is.Item]; ok {
				kept = append(kept, is) // a rubric item left out is no issue: partial sets are accepted
			}
		}
		verdict, issues := kept.Verdict(confirmed)
		for _, is := range issues {
			if verdict == rubric.NeedsConfirmation {
				problems.add(lines[is.Item], "value", "%s (a warning: confirm the rubric's warnings to import it)", is.Message)
			} else {
				problems.add(lines[is.Item], "value", "%s", is.Message)
			}
		}
		// A rubric item left out has no answer and so no evidence to
		// require: the rule names only the lines of the file.
		for _, is := range def.ValidateEvidence(answers, evidence, facts, policy) {
			if l, ok := lines[is.Item]; ok {
				problems.add(l, "evidence", "%s", is.Message)
			}
		}
		clear(answers)
		clear(evidence)
		clear(lines)
	}
	for rows.Next() {
		var it, r, key, v string
		var turns, line int
		var sensitive bool
		var msgs []byte
		var marked []int
		if err := rows.Scan(&it, &r, &turns, &sensitive, &line, &key, &v, &marked, &msgs); err != nil {
			return err
		}
		if it != item || r != rater {
			flush()
			if it != item {
				// The first row of an item carries its messages.
				if facts, err = factsOfMessages(turns, msgs, sensitive); err != nil {
					return fmt.Errorf("item %q: %w", it, err)
				}
			}
			item, rater = it, r
		}
		answers[key] = rubric.Value(v)
		if len(marked) > 0 {
			evidence[key] = marked
		}
		lines[key] = line
	}
	if err := rows.Err(); err != nil {
		return err
	}
	flush()
	return nil
}

// storeLabels creates the raters the file names, then its answer sets and
// labels, moves the items' counts of people's answers, and records the
// import.
func storeLabels(ctx context.Context, tx pgx.Tx, p *attune.Project, opts LabelsImportOptions, res *LabelsImportResult) error {
	// People: a rater without an account of that name, or a new one.
	tag, err := tx.Exec(ctx, `
		INSERT INTO raters (kind, name)
		SELECT DISTINCT 'human', t.rater FROM import_labels t
		WHERE t.kind = 'human'
		  AND NOT EXISTS (SELECT 1 FROM raters r WHERE r.kind = 'human' AND r.user_id IS NULL AND r.name = t.rater)`)
	if err != nil {
		return err
	}
	res.People = int(tag.RowsAffected())
	// Judges: the judge of that name, or a new one that records only that
	// its answers were imported.
	rows, err := tx.Query(ctx, `
		WITH created AS (
			INSERT INTO judges (name, provider, base_url, model, settings, created_by)
			SELECT DISTINCT t.rater, 'openai', '', 'imported', '{}'::jsonb, $1::bigint FROM import_labels t
			WHERE t.kind = 'judge' AND NOT EXISTS (SELECT 1 FROM judges j WHERE j.name = t.rater)
			RETURNING id, name)
		INSERT INTO raters (kind, judge_id, name) SELECT 'judge', id, name FROM created RETURNING name`, opts.ActorID)
	if err != nil {
		return err
	}
	created, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	res.Judges = len(created)
	for _, name := range created {
		if err := audit(ctx, tx, attune.AuditEvent{ActorID: opts.ActorID, Action: "judge.create", ProjectID: &p.ID, Subject: name,
			Details: map[string]string{"provider": "openai", "model": "imported", "reason": "named in a labels import", "source": opts.Source}}); err != nil {
			return err
		}
	}
	// Each (item, rater) of the file becomes one answer set. People's
	// count as done for their item, as an annotator's submission does.
	err = tx.QueryRow(ctx, `
		WITH who AS (
			SELECT DISTINCT ON (t.rater, t.kind) t.rater, t.kind, r.id
			FROM (SELECT DISTINCT rater, kind FROM import_labels) t
			JOIN raters r ON r.name = t.rater AND r.kind = t.kind
			     AND (t.kind = 'judge' OR r.user_id IS NULL)
			     AND (t.kind = 'human' OR r.prompt_id IS NULL AND EXISTS (SELECT 1 FROM judges j WHERE j.id = r.judge_id AND j.name = t.rater))
			ORDER BY t.rater, t.kind, r.id),
		sets AS (
			INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id)
			SELECT DISTINCT $1::bigint, i.id, w.id, $2::bigint
			FROM import_labels t
			JOIN items i ON i.project_id = $1 AND i.source_id = t.item
			JOIN who w ON w.rater = t.rater AND w.kind = t.kind
			RETURNING id, item_id, rater_id),
		labels AS (
			INSERT INTO labels (answer_set_id, project_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale, evidence)
			SELECT s.id, $1, s.item_id, s.rater_id, $2, t.key, t.value, t.rationale, t.evidence
			FROM import_labels t
			JOIN items i ON i.project_id = $1 AND i.source_id = t.item
			JOIN who w ON w.rater = t.rater AND w.kind = t.kind
			JOIN sets s ON s.item_id = i.id AND s.rater_id = w.id
			RETURNING 1),
		done AS (
			UPDATE item_counts c SET done = c.done + d.n
			FROM (SELECT s.item_id, count(*) AS n FROM sets s JOIN who w ON w.id = s.rater_id AND w.kind = 'human' GROUP BY s.item_id) d
			WHERE c.item_id = d.item_id
			RETURNING 1)
		SELECT (SELECT count(*) FROM sets), (SELECT count(*) FROM labels), (SELECT count(*) FROM done)`,
		p.ID, p.RubricVersionID).Scan(&res.AnswerSets, new(int), new(int))
	if err != nil {
		return err
	}
	return audit(ctx, tx, attune.AuditEvent{ActorID: opts.ActorID, Action: "labels.import", ProjectID: &p.ID, Subject: opts.Source,
		Details: map[string]string{"labels": fmt.Sprint(res.Labels), "answer_sets": fmt.Sprint(res.AnswerSets),
			"people_created": fmt.Sprint(res.People), "judges_created": fmt.Sprint(res.Judges)}})
}
