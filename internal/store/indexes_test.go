package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/dbtest"
)

// indexUse says why an index exists: the query it serves (the shape of
// the store's own, with literals for its parameters), or, for a unique
// index, the rule it holds. Every write to a table pays for each of its
// indexes, the submit most of all, so none may stay without a reader.
type indexUse struct {
	query string // EXPLAIN of it must use the index
	rule  string // a unique index: what it keeps true
}

// indexUses lists every index of the schema but the primary keys and the
// job queue's own (river_*, which its library owns).
var indexUses = map[string]indexUse{
	// Unique indexes: rules, and the targets of composite foreign keys.
	"answer_sets_item_id_rater_id_key":                     {rule: "one answer set per rater and item"},
	"answer_sets_label_key":                                {rule: "the key labels' foreign key names, so a label's item, rater, rubric and project are its set's"},
	"api_tokens_token_sha256_key":                          {rule: "a token is found by its hash", query: `SELECT user_id FROM api_tokens WHERE token_sha256 = '\x00'::bytea`},
	"assignments_item_rater_attempt_key":                   {rule: "one assignment per rater and item in each qualification attempt"},
	"calibration_answers_assignment_id_key":                {rule: "one graded answer per calibration assignment"},
	"calibration_answers_item_rater_attempt_key":           {rule: "one graded answer per rater and calibration item in each attempt"},
	"judge_runs_one_active_idx":                            {rule: "one queued or running run per judge, prompt version and project", query: `SELECT id FROM judge_runs WHERE project_id = 1 AND rater_id = 2 AND status IN ('queued', 'running')`},
	"items_project_id_source_id_key":                       {rule: "an item's id is unique within its project", query: `SELECT id FROM items WHERE project_id = 1 AND source_id = 'a'`},
	"items_id_project_id_key":                              {rule: "the key the project-scoped foreign keys to items name"},
	"judge_calls_cache_idx":                                {rule: "one good answer per cache key", query: `SELECT id FROM judge_calls WHERE cache_key = 'k' AND ok`},
	"judge_prompts_judge_id_rubric_version_id_version_key": {rule: "prompt versions number on per judge and rubric version"},
	"judge_trust_one_on":                                   {rule: "one judge's routing on per project"},
	"judges_name_key":                                      {rule: "judges are named uniquely"},
	"labels_answer_set_id_rubric_item_key_key":             {rule: "one label per answer set and rubric item"},
	"labels_item_id_rater_id_rubric_item_key_key":          {rule: "one label per rater, item and rubric item", query: `SELECT value FROM labels WHERE item_id = 1 AND rater_id = 2`},
	"projects_name_key":                                    {rule: "projects are named uniquely"},
	"projects_id_rubric_version_id_key":                    {rule: "the key answer sets' foreign key names, so a set's rubric is its project's"},
	"raters_user_id_key":                                   {rule: "one rater per person"},
	"raters_prompt_id_key":                                 {rule: "one rater per prompt version"},
	"raters_judge_idx":                                     {rule: "one rater per judge for its unversioned answers"},
	"rubric_items_rubric_version_id_position_key":          {rule: "rubric items are ordered without ties"},
	"rubric_versions_key_version_key":                      {rule: "a rubric version is named once"},
	"users_email_key":                                      {rule: "one account per email", query: `SELECT id FROM users WHERE email = 'a@b'`},
	"webhook_deliveries_uuid_key":                          {rule: "a delivery's id, which receivers deduplicate on, is unique"},

	// Reads.
	"adjudications_item_idx":          {query: `SELECT id FROM adjudications WHERE item_id = 1 ORDER BY decided_at`},
	"answer_sets_project_idx":         {query: `SELECT item_id FROM answer_sets WHERE project_id = 1 ORDER BY item_id`},
	"answer_sets_submitted_idx":       {query: `SELECT count(*) FROM answer_sets WHERE project_id = 1 AND submitted_at > now() - interval '1 day'`},
	"answer_sets_rater_submitted_idx": {query: `SELECT id FROM answer_sets WHERE rater_id = 1 AND project_id = 2 ORDER BY submitted_at DESC, id DESC LIMIT 1`},
	"api_tokens_user_idx":             {query: `SELECT id FROM api_tokens WHERE user_id = 1`},
	"assignments_active_idx":          {query: `SELECT 1 FROM assignments WHERE project_id = 1 AND rater_id = 2 AND state = 'active'`},
	"assignments_rater_idx":           {query: `SELECT item_id FROM assignments WHERE rater_id = 1 AND project_id = 2`},
	"assignments_flags_idx":           {query: `SELECT id FROM assignments WHERE project_id = 1 AND flag IS NOT NULL ORDER BY finished_at DESC, id DESC LIMIT 50`},
	"assignments_calibration_idx":     {query: `SELECT item_id FROM assignments WHERE rater_id = 1 AND project_id = 2 AND calibration ORDER BY assigned_at`},
	"audit_events_project_idx":        {query: `SELECT id FROM audit_events WHERE project_id = 1 ORDER BY occurred_at DESC LIMIT 50`},
	"calibration_answers_rater_idx":   {query: `SELECT item_id FROM calibration_answers WHERE project_id = 1 AND rater_id = 2 ORDER BY submitted_at`},
	"calibration_items_project_idx":   {query: `SELECT item_id FROM calibration_items WHERE project_id = 1 ORDER BY item_id`},
	// Deleting an item checks its references: without these, every
	// delete would read the whole table.
	"content_notes_opened_item_idx": {query: `SELECT 1 FROM content_notes_opened WHERE item_id = 1`},
	"drafts_item_idx":               {query: `SELECT 1 FROM drafts WHERE item_id = 1`},
	"judge_calls_item_idx":          {query: `SELECT id FROM judge_calls WHERE item_id = 1`},
	"label_history_label_idx":       {query: `SELECT id FROM label_history WHERE label_id = 1`},

	"gold_consensus_queue_idx":       {query: `SELECT item_id FROM gold_consensus WHERE project_id = 1 AND NOT decided ORDER BY rank DESC, item_id LIMIT 20`},
	"gold_consensus_project_idx":     {query: `SELECT item_id FROM gold_consensus WHERE project_id = 1 ORDER BY item_id`},
	"gold_labels_project_idx":        {query: `SELECT item_id, method FROM gold_labels WHERE project_id = 1 ORDER BY item_id`},
	"item_counts_next_idx":           {query: `SELECT item_id FROM item_counts WHERE project_id = 1 AND NOT pulled AND NOT held ORDER BY filled DESC, item_id LIMIT 8`},
	"item_counts_held_idx":           {query: `SELECT item_id FROM item_counts WHERE project_id = 1 AND held ORDER BY item_id`},
	"draws_project_idx":              {query: `SELECT id FROM draws WHERE project_id = 1 ORDER BY id`},
	"draw_items_item_key":            {rule: "an item is drawn at most once, so no two draws send it twice", query: `SELECT 1 FROM draw_items WHERE item_id = ANY('{1,2}'::bigint[])`},
	"item_gold_project_idx":          {query: `SELECT item_id FROM item_gold WHERE project_id = 1 ORDER BY item_id`},
	"item_search_document_idx":       {query: `SELECT item_id FROM item_search WHERE document @@ to_tsquery('simple', 'sleep')`},
	"items_pulled_idx":               {query: `SELECT count(*) FROM items WHERE project_id = 1 AND pulled_at IS NOT NULL`},
	"items_project_id_idx":           {query: `SELECT id FROM items WHERE project_id = 1 ORDER BY id LIMIT 50`},
	"judge_calls_run_idx":            {query: `SELECT id FROM judge_calls WHERE run_id = 1 AND rubric_item_key = 'CQ1'`},
	"judge_label_details_run_idx":    {query: `SELECT label_id FROM judge_label_details WHERE run_id = 1`},
	"judge_runs_project_idx":         {query: `SELECT id FROM judge_runs WHERE project_id = 1 ORDER BY created_at DESC LIMIT 20`},
	"judge_sentinels_project_idx":    {query: `SELECT item_id FROM judge_sentinels WHERE project_id = 1 AND rater_id = 2 ORDER BY answered_at`},
	"labels_project_item_idx":        {query: `SELECT item_id, rater_id, rubric_item_key, value FROM labels WHERE project_id = 1 ORDER BY item_id, rater_id, rubric_item_key`},
	"trust_routes_project_idx":       {query: `SELECT item_id FROM trust_routes WHERE project_id = 1 AND decision = 'kept' ORDER BY item_id`},
	"labels_project_key_idx":         {query: `SELECT item_id, rater_id, value FROM labels WHERE project_id = 1 AND rubric_item_key = 'CQ1' ORDER BY item_id`},
	"project_members_user_idx":       {query: `SELECT project_id FROM project_members WHERE user_id = 1`},
	"sessions_expiry_idx":            {query: `SELECT token FROM sessions WHERE expiry < now()`},
	"settle_queue_project_idx":       {query: `SELECT id FROM settle_queue WHERE project_id = 1 ORDER BY id LIMIT 100`},
	"sign_in_attempts_email_idx":     {query: `SELECT count(*) FROM sign_in_attempts WHERE email = 'a@b' AND NOT succeeded AND attempted_at > now() - interval '15 minutes'`},
	"sign_in_attempts_address_idx":   {query: `SELECT count(*) FROM sign_in_attempts WHERE address = '127.0.0.1' AND NOT succeeded AND attempted_at > now() - interval '15 minutes'`},
	"webhook_deliveries_webhook_idx": {query: `SELECT id FROM webhook_deliveries WHERE webhook_id = 1 ORDER BY id DESC LIMIT 50`},
	"webhooks_project_idx":           {query: `SELECT id FROM webhooks WHERE project_id = 1`},
}

// schemaIndex is one index of the migrated schema.
type schemaIndex struct {
	name, table, def, method, predicate string
	unique                              bool
	columns                             []string
}

// TestEveryIndexHasItsQuery holds the schema to the indexes its queries
// use: every index but the primary keys is listed in indexUses with the
// query that needs it (whose plan must use it, with sequential scans off
// so that the small test tables do not decide) or the rule it keeps; a
// listed index that is gone fails too, so the list stays true. And no
// plain index may be a leading part of another on the same rows, which
// serves every query it could.
func TestEveryIndexHasItsQuery(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t)
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `
		SELECT ic.relname, tc.relname, pg_get_indexdef(i.indexrelid), am.amname,
		       coalesce(pg_get_expr(i.indpred, i.indrelid), ''), i.indisunique,
		       array(SELECT pg_get_indexdef(i.indexrelid, k, true) FROM generate_series(1, i.indnkeyatts) k)
		FROM pg_index i
		JOIN pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_class tc ON tc.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = tc.relnamespace
		JOIN pg_am am ON am.oid = ic.relam
		WHERE n.nspname = 'public' AND NOT i.indisprimary AND tc.relname NOT LIKE 'river%'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (schemaIndex, error) {
		var x schemaIndex
		err := r.Scan(&x.name, &x.table, &x.def, &x.method, &x.predicate, &x.unique, &x.columns)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(indexes) < 40 {
		t.Fatalf("read only %d indexes", len(indexes))
	}
	seen := map[string]bool{}
	for _, x := range indexes {
		seen[x.name] = true
		use, ok := indexUses[x.name]
		if !ok {
			t.Errorf("index %s is not in indexUses: name the query that needs it (%s)", x.name, x.def)
			continue
		}
		if x.unique != (use.rule != "") {
			t.Errorf("index %s: unique %v, but indexUses gives it a rule %q", x.name, x.unique, use.rule)
		}
		if !x.unique && use.query == "" {
			t.Errorf("index %s: no query needs it", x.name)
		}
		if use.query != "" {
			if plan := explain(t, db.Pool(), use.query); !strings.Contains(plan, `"Index Name": "`+x.name+`"`) {
				t.Errorf("index %s: the plan of %s does not use it:\n%s", x.name, use.query, plan)
			}
		}
	}
	for name := range indexUses {
		if !seen[name] {
			t.Errorf("indexUses lists %s, which the schema does not have", name)
		}
	}
	for _, a := range indexes {
		for _, b := range indexes {
			if a.name == b.name || a.unique || a.table != b.table || a.method != "btree" || b.method != "btree" || a.predicate != b.predicate {
				continue
			}
			if len(a.columns) <= len(b.columns) && slices.Equal(a.columns, b.columns[:len(a.columns)]) {
				t.Errorf("index %s (%s) is a leading part of %s (%s), which serves its queries", a.name, strings.Join(a.columns, ", "), b.name, strings.Join(b.columns, ", "))
			}
		}
	}
}

// explain returns the JSON plan of query with sequential scans and sorts
// priced out, so that on the test's near-empty tables the plan still
// shows the index the query reaches for (and reads its order from).
func explain(t *testing.T, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}, query string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	var plan string
	if err := tx.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) %s`, query)).Scan(&plan); err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	return plan
}
