package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// MaxSearchPage bounds the items one page of a search lists.
const MaxSearchPage = 100

// The gold statuses an item search filters by: no gold yet, gold the
// consensus rule set, gold a person set, gold a trusted judge's answers
// decided (GoldTrustedJudge).
const (
	GoldOpen        = "open"
	GoldAutomatic   = "automatic"
	GoldAdjudicated = "adjudicated"
)

// The orders an item search lists in. Every order ends on the item's id,
// so that items tying on the first key keep one order from page to page.
const (
	SortOldest = "oldest" // item id, ascending (the default)
	SortNewest = "newest" // item id, descending
	SortSource = "source" // the dataset's id, then item id
	// SortLabels: most people's answer sets first, then item id.
	SortLabels = "labels"
)

// SearchSorts lists the orders, the default first.
var SearchSorts = []string{SortOldest, SortNewest, SortSource, SortLabels}

// MetaMatch keeps the items whose meta has Key with Value (as text: a
// number or true matches its spelling).
type MetaMatch struct{ Key, Value string }

// RubricAnswer is one answer on one rubric item.
type RubricAnswer struct{ Key, Value string }

// ItemSearch chooses and orders the items of one project. Zero fields
// filter nothing; the filters that are set must all hold.
type ItemSearch struct {
	// Text is a web-search style query over the text of the dialogue's
	// turns ("quoted phrases", -excluded words, or); English stemming.
	Text string
	// SourceID keeps the item with this id in the dataset, or, when it is
	// a number, also the item with this number.
	SourceID string
	Meta     []MetaMatch
	// MinLabels and MaxLabels bound the number of people's answer sets;
	// a nil MaxLabels leaves the top open.
	MinLabels int
	MaxLabels *int
	// Gold is GoldOpen, GoldAutomatic, GoldAdjudicated or
	// GoldTrustedJudge; "" for any.
	Gold string
	// Concern keeps the items where some rater, person or judge, gave
	// one of these answers; the caller derives them from the rubric (see
	// gold.SafetyAnswers). Nil filters nothing; an empty non-nil list
	// keeps nothing.
	Concern []RubricAnswer
	// Flagged keeps the items some annotator flagged.
	Flagged bool
	// JudgeDisagrees keeps the items where a judge's answer on this
	// rubric item differs from a person's (ERROR answers aside).
	JudgeDisagrees string
	// RaterID keeps the items this rater answered.
	RaterID int64
	// Sort is one of SearchSorts; "" is SortOldest.
	Sort string
	// Cursor is the Next of the page before; "" for the first page.
	Cursor string
	// Limit is the page's size, 1 to MaxSearchPage (other values:
	// MaxSearchPage).
	Limit int
	// Count asks for the number of items the search keeps over all its
	// pages (ItemPage.Matches), counted up to MatchCountBound.
	Count bool
}

// MatchCountBound is how far a search counts its matches: the count stops
// at one past it, so that counting costs no more than reading that many
// items however many match.
const MatchCountBound = 1000

// ItemRow is one item of a search's page.
type ItemRow struct {
	ID       int64
	SourceID string
	Kind     string
	Turns    int
	// Opening is the dialogue's first turn, cut to a few hundred
	// characters.
	Opening string
	Meta    json.RawMessage
	// People and Judges count the answer sets.
	People, Judges int
	// Gold is "", GoldAutomatic, GoldAdjudicated or GoldTrustedJudge.
	Gold    string
	Flags   int
	Pulled  bool
	Created time.Time
	// Snippet is, for a text search, a few words of the dialogue around
	// what the query matched, in order; empty when nothing can be shown
	// (a query of excluded words only).
	Snippet []SnippetPart
}

// SnippetPart is a run of a snippet's text, Match when the query matched
// it. The text is as written: the caller escapes it.
type SnippetPart struct {
	Text  string
	Match bool
}

// ItemPage is one page of a search.
type ItemPage struct {
	Items []ItemRow
	// Next is the cursor of the next page; "" on the last one.
	Next string
	// Unindexed counts, for a text search, the project's items whose
	// search document is still being made (IndexItems): the text query
	// cannot find them yet.
	Unindexed int
	// Matches counts the items the search keeps on all its pages, when
	// ItemSearch.Count asked for it; MatchCountBound+1 stands for "more
	// than MatchCountBound" (MoreMatches).
	Matches int
}

// MoreMatches says that the search keeps more than MatchCountBound items:
// Matches is then not their number.
func (p ItemPage) MoreMatches() bool { return p.Matches > MatchCountBound }

// searchCursor is where a page ended: the sort it was made for, the last
// item's key in that sort, and its id.
type searchCursor struct {
	Sort string `json:"s"`
	Key  string `json:"k,omitempty"`
	ID   int64  `json:"i"`
}

func (c searchCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, sort string) (searchCursor, error) {
	var c searchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Sort != sort || c.ID <= 0 {
		return c, attune.Invalid("cursor", "this cursor does not belong to this search; start from the first page")
	}
	if sort == SortLabels {
		if _, err := strconv.Atoi(c.Key); err != nil {
			return c, attune.Invalid("cursor", "this cursor does not belong to this search; start from the first page")
		}
	}
	return c, nil
}

// timeCursor reads the cursor of a list paged newest first by (time, id),
// made for the list named kind: nil when cursor is "" (the first page).
func timeCursor(cursor, kind string) (*time.Time, int64, error) {
	if cursor == "" {
		return nil, 0, nil
	}
	c, err := decodeCursor(cursor, kind)
	if err != nil {
		return nil, 0, err
	}
	t, err := time.Parse(time.RFC3339Nano, c.Key)
	if err != nil {
		return nil, 0, attune.Invalid("cursor", "this cursor does not belong to this list; start from the first page")
	}
	return &t, c.ID, nil
}

// nextTimeCursor is the cursor after the row at (at, id) of the list kind.
func nextTimeCursor(kind string, at time.Time, id int64) string {
	return searchCursor{Sort: kind, Key: at.UTC().Format(time.RFC3339Nano), ID: id}.encode()
}

// humanSets counts the people's answer sets of the item i.
const humanSets = `(SELECT count(*) FROM answer_sets hs JOIN raters hr ON hr.id = hs.rater_id WHERE hs.item_id = i.id AND hr.kind = 'human')`

// SearchItems returns one page of the project's items that the search
// keeps, in its order. The text query is answered from item_search's index;
// every other filter is checked per item found, through the indexes on
// item id of the tables it reads. Only the project's leads may be shown
// the result: the caller checks.
//
// The search runs as one of the lead reads (ReadLimits): it fails with
// ErrReadsBusy when they are all taken and with ErrReadTimeout when it ran
// longer than the search timeout.
func (db *DB) SearchItems(ctx context.Context, projectID int64, s ItemSearch) (ItemPage, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return ItemPage{}, err
	}
	if err := CheckSearchText(s.Text); err != nil {
		return ItemPage{}, err
	}
	var page ItemPage
	err := db.leadRead(ctx, ReadSearch, func(tx pgx.Tx) error {
		var err error
		page, err = db.searchItems(ctx, tx, projectID, s)
		return err
	})
	return page, err
}

// The bounds of a text search. A long phrase costs PostgreSQL time in
// proportion to its words for every item it reads (500 words took 10 s on
// 230,000 items); nobody looks for more than a few words.
const (
	MaxSearchTextChars = 256
	MaxSearchTerms     = 16
)

// CheckSearchText refuses a text search over MaxSearchTextChars characters
// or MaxSearchTerms words with a validation error on q naming the limit.
func CheckSearchText(text string) error {
	if n := utf8.RuneCountInString(text); n > MaxSearchTextChars {
		return attune.Invalid("q", fmt.Sprintf("the search text is %d characters; search for at most %d characters and %d words", n, MaxSearchTextChars, MaxSearchTerms))
	}
	if n := len(strings.Fields(text)); n > MaxSearchTerms {
		return attune.Invalid("q", fmt.Sprintf("the search text has %d words; search for at most %d words and %d characters", n, MaxSearchTerms, MaxSearchTextChars))
	}
	return nil
}

func (db *DB) searchItems(ctx context.Context, tx pgx.Tx, projectID int64, s ItemSearch) (ItemPage, error) {
	if s.Limit < 1 || s.Limit > MaxSearchPage {
		s.Limit = MaxSearchPage
	}
	if s.Sort == "" {
		s.Sort = SortOldest
	}
	var args drillArgs
	where := []string{"i.project_id = " + args.add(projectID)}
	if t := strings.TrimSpace(s.Text); t != "" {
		where = append(where, "EXISTS (SELECT 1 FROM item_search x WHERE x.item_id = i.id AND x.project_id = i.project_id AND x.document @@ websearch_to_tsquery('english', "+args.add(t)+"))")
	}
	if id := strings.TrimSpace(s.SourceID); id != "" {
		cond := "i.source_id = " + args.add(id)
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			cond = "(" + cond + " OR i.id = " + args.add(n) + ")"
		}
		where = append(where, cond)
	}
	for _, m := range s.Meta {
		where = append(where, "i.meta ->> "+args.add(m.Key)+" = "+args.add(m.Value))
	}
	if s.MinLabels > 0 {
		where = append(where, humanSets+" >= "+args.add(s.MinLabels))
	}
	if s.MaxLabels != nil {
		where = append(where, humanSets+" <= "+args.add(*s.MaxLabels))
	}
	switch s.Gold {
	case "":
	case GoldOpen:
		where = append(where, "NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = i.project_id AND g.item_id = i.id)")
	case GoldAutomatic:
		where = append(where, "EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = i.project_id AND g.item_id = i.id AND g.method = 'automatic')",
			"NOT EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = i.project_id AND g.item_id = i.id AND g.method = 'adjudicated')")
	case GoldTrustedJudge:
		where = append(where, "EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = i.project_id AND g.item_id = i.id AND g.method = 'trusted_judge')")
	case GoldAdjudicated:
		where = append(where, "EXISTS (SELECT 1 FROM gold_labels g WHERE g.project_id = i.project_id AND g.item_id = i.id AND g.method = 'adjudicated')")
	default:
		return ItemPage{}, attune.Invalid("gold", fmt.Sprintf("%q is not a gold status: open, automatic, adjudicated or trusted_judge", s.Gold))
	}
	if s.Concern != nil {
		keys, values := make([]string, len(s.Concern)), make([]string, len(s.Concern))
		for i, c := range s.Concern {
			keys[i], values[i] = c.Key, c.Value
		}
		where = append(where, `EXISTS (SELECT 1 FROM labels cl JOIN unnest(`+args.add(keys)+`::text[], `+args.add(values)+`::text[]) AS c(k, v)
			ON cl.rubric_item_key = c.k AND cl.value = c.v WHERE cl.project_id = i.project_id AND cl.item_id = i.id)`)
	}
	if s.Flagged {
		where = append(where, "EXISTS (SELECT 1 FROM assignments fa WHERE fa.item_id = i.id AND fa.flag IS NOT NULL)")
	}
	if s.JudgeDisagrees != "" {
		where = append(where, `EXISTS (SELECT 1 FROM labels jl JOIN raters jr ON jr.id = jl.rater_id
			JOIN labels pl ON pl.item_id = jl.item_id AND pl.rubric_item_key = jl.rubric_item_key
			JOIN raters pr ON pr.id = pl.rater_id
			WHERE jl.project_id = i.project_id AND jl.item_id = i.id AND jl.rubric_item_key = `+args.add(s.JudgeDisagrees)+` AND jr.kind = 'judge' AND pr.kind = 'human'
			  AND jl.value <> pl.value AND jl.value <> 'ERROR' AND pl.value <> 'ERROR')`)
	}
	if s.RaterID > 0 {
		where = append(where, "EXISTS (SELECT 1 FROM answer_sets ra WHERE ra.item_id = i.id AND ra.rater_id = "+args.add(s.RaterID)+")")
	}

	// The order names the page's columns, so that the query below sorts
	// its candidates and then its page by the same words.
	var order string
	switch s.Sort {
	case SortOldest:
		order = "id"
	case SortNewest:
		order = "id DESC"
	case SortSource:
		order = "source_id, id"
	case SortLabels:
		order = "people DESC, id"
	default:
		return ItemPage{}, attune.Invalid("sort", fmt.Sprintf("%q is not an order: %s", s.Sort, strings.Join(SearchSorts, ", ")))
	}
	// The count is of the search's matches on every page: its conditions
	// without the cursor's, and its arguments so far.
	countQuery := `SELECT count(*) FROM (SELECT 1 FROM items i WHERE ` + strings.Join(where, " AND ") + ` LIMIT ` + strconv.Itoa(MatchCountBound+1) + `) m`
	countArgs := slices.Clone(args)
	if s.Cursor != "" {
		c, err := decodeCursor(s.Cursor, s.Sort)
		if err != nil {
			return ItemPage{}, err
		}
		switch s.Sort {
		case SortOldest:
			where = append(where, "i.id > "+args.add(c.ID))
		case SortNewest:
			where = append(where, "i.id < "+args.add(c.ID))
		case SortSource:
			where = append(where, "(i.source_id, i.id) > ("+args.add(c.Key)+", "+args.add(c.ID)+")")
		case SortLabels:
			n, _ := strconv.Atoi(c.Key)
			na, id := args.add(n), args.add(c.ID)
			where = append(where, "("+humanSets+" < "+na+" OR ("+humanSets+" = "+na+" AND i.id > "+id+"))")
		}
	}
	// The page is chosen first, and only its rows get their opening line
	// and counts: the dialogue is stored as text, and reading its first
	// message for every match before the sort cost a text query as much as
	// the search itself. The outer ORDER BY keeps the page's order (it
	// sorts no more than a page). The snippet, too, is made for the page's
	// rows only.
	snippet := `''`
	if t := strings.TrimSpace(s.Text); t != "" {
		snippet = searchSnippet("q.messages", args.add(t))
	}
	query := `
		SELECT q.id, q.source_id, q.kind, q.turns, left(coalesce(q.messages -> 0 ->> 'content', ''), 300), q.meta, q.people,
		       ` + snippet + `,
		       (SELECT count(*) FROM answer_sets js JOIN raters jr ON jr.id = js.rater_id WHERE js.item_id = q.id AND jr.kind = 'judge'),
		       coalesce((SELECT max(g.method) FROM gold_labels g WHERE g.project_id = q.project_id AND g.item_id = q.id), ''),
		       (SELECT count(*) FROM assignments fa WHERE fa.item_id = q.id AND fa.flag IS NOT NULL),
		       q.pulled, q.created_at
		FROM (
			SELECT i.id, i.project_id, i.source_id, i.kind, i.turns, i.messages, i.meta, ` + humanSets + ` AS people,
			       i.pulled_at IS NOT NULL AS pulled, i.created_at
			FROM items i
			WHERE ` + strings.Join(where, " AND ") + `
			ORDER BY ` + order + ` LIMIT ` + args.add(s.Limit+1) + `) q
		ORDER BY ` + order
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return ItemPage{}, mapErr(err, "search items", "")
	}
	var page ItemPage
	var it ItemRow
	var meta []byte
	var marked string
	_, err = pgx.ForEachRow(rows, []any{&it.ID, &it.SourceID, &it.Kind, &it.Turns, &it.Opening, &meta, &it.People, &marked, &it.Judges,
		&it.Gold, &it.Flags, &it.Pulled, &it.Created}, func() error {
		if len(page.Items) == s.Limit {
			prev := page.Items[len(page.Items)-1]
			k := ""
			switch s.Sort {
			case SortSource:
				k = prev.SourceID
			case SortLabels:
				k = strconv.Itoa(prev.People)
			}
			page.Next = searchCursor{Sort: s.Sort, Key: k, ID: prev.ID}.encode()
			return nil
		}
		row := it
		row.Meta = append(json.RawMessage(nil), meta...)
		row.Snippet = splitSnippet(marked)
		page.Items = append(page.Items, row)
		return nil
	})
	if err != nil {
		return ItemPage{}, mapErr(err, "search items", "")
	}
	if s.Count {
		if err := tx.QueryRow(ctx, countQuery, countArgs...).Scan(&page.Matches); err != nil {
			return ItemPage{}, mapErr(err, "count items", "")
		}
	}
	if strings.TrimSpace(s.Text) != "" {
		// Counting the items without a document reads every item of the
		// project: done only while an indexing job is due.
		err = tx.QueryRow(ctx, `
			SELECT CASE WHEN EXISTS (
				SELECT 1 FROM river_job j WHERE j.kind = $2 AND j.finalized_at IS NULL
				  AND (j.args ->> 'project_id')::bigint IN (0, $1))
			THEN (SELECT count(*) FROM items i WHERE i.project_id = $1
			      AND NOT EXISTS (SELECT 1 FROM item_search x WHERE x.item_id = i.id))
			ELSE 0 END`, projectID, ItemIndexArgs{}.Kind()).Scan(&page.Unindexed)
		if err != nil {
			return ItemPage{}, mapErr(err, "search items", "")
		}
	}
	return page, nil
}

// The private-use characters a snippet is made with. ts_headline puts
// snippetStart and snippetStop around each match; and since its parser
// reads anything between < and > as an HTML tag and drops it, the text's
// angle brackets go in as snippetLt and snippetGt and come back after.
// All four are taken out of the text first, so every mark in the result
// is one the query made, and the text itself is never read as markup.
const (
	snippetStart = "\ue000"
	snippetStop  = "\ue001"
	snippetLt    = "\ue002"
	snippetGt    = "\ue003"
)

// searchSnippet is the SQL of a snippet of the messages (a json column)
// around the matches of the web-search query in the parameter query: the
// turns' text joined, then ts_headline with snippetStart and snippetStop
// around each match.
func searchSnippet(messages, query string) string {
	return `coalesce(ts_headline('english',
		translate(translate((SELECT string_agg(m ->> 'content', ' · ') FROM json_array_elements(` + messages + `) m),
			E'\uE000\uE001\uE002\uE003', ''), '<>', E'\uE002\uE003'),
		websearch_to_tsquery('english', ` + query + `),
		E'StartSel=\uE000, StopSel=\uE001, MaxWords=30, MinWords=12'), '')`
}

// splitSnippet reads ts_headline's marked text into its runs. A snippet
// that marks nothing (the query matched no word of it) is none.
func splitSnippet(marked string) []SnippetPart {
	if !strings.Contains(marked, snippetStart) {
		return nil
	}
	marked = strings.NewReplacer(snippetLt, "<", snippetGt, ">").Replace(marked)
	var parts []SnippetPart
	for marked != "" {
		before, rest, found := strings.Cut(marked, snippetStart)
		if before != "" {
			parts = append(parts, SnippetPart{Text: before})
		}
		if !found {
			break
		}
		hit, after, _ := strings.Cut(rest, snippetStop)
		if hit != "" {
			parts = append(parts, SnippetPart{Text: hit, Match: true})
		}
		marked = after
	}
	return parts
}

// ItemEvent is one entry of an item's history.
type ItemEvent struct {
	At time.Time
	// Who is the rater's or person's name (their email when they gave
	// none); "" for the system (an import, the consensus rule).
	Who string
	// What says what happened, in a few words ("answered", "flagged
	// broken"); Detail adds the note, value or reason, as written.
	What, Detail string
}

// The What of the events that take an item out of the pool and put it
// back.
const (
	EventPulled   = "took it out of the pool"
	EventReturned = "put it back into the pool"
)

// ItemHistory returns what the schema records of an item of the project,
// oldest first: its import, every answer set's first submission and later
// revision, every label value replaced (with the value it had), content
// notes opened, skips and flags with their resolution, adjudications,
// automatic gold, and the times it was taken out of the pool or put back.
// It returns attune.ErrNotFound for an item not in the project.
func (db *DB) ItemHistory(ctx context.Context, projectID, itemID int64) ([]ItemEvent, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		WITH it AS (SELECT id, source_id, created_at FROM items WHERE id = $2 AND project_id = $1),
		who AS (SELECT r.id, coalesce(nullif(btrim(u.name), ''), u.email, r.name) AS name
		        FROM raters r LEFT JOIN users u ON u.id = r.user_id)
		SELECT created_at, '', 'imported', '' FROM it
		UNION ALL
		SELECT s.submitted_at, w.name, 'answered', s.rationale
		FROM answer_sets s JOIN it ON s.item_id = it.id JOIN who w ON w.id = s.rater_id
		UNION ALL
		SELECT s.updated_at, w.name, 'revised the answers (revision ' || s.revision || ')', ''
		FROM answer_sets s JOIN it ON s.item_id = it.id JOIN who w ON w.id = s.rater_id WHERE s.revision > 1
		UNION ALL
		SELECT h.replaced_at, w.name, 'changed ' || l.rubric_item_key, 'was ' || h.value || CASE WHEN h.rationale <> '' THEN ': ' || h.rationale ELSE '' END
		FROM label_history h JOIN labels l ON l.id = h.label_id JOIN it ON l.item_id = it.id JOIN who w ON w.id = l.rater_id
		UNION ALL
		SELECT n.opened_at, w.name, 'opened the content note', ''
		FROM content_notes_opened n JOIN it ON n.item_id = it.id JOIN who w ON w.id = n.rater_id
		UNION ALL
		SELECT a.finished_at, w.name, CASE WHEN a.flag IS NULL THEN 'skipped' ELSE 'flagged ' || a.flag END, a.flag_note
		FROM assignments a JOIN it ON a.item_id = it.id JOIN who w ON w.id = a.rater_id WHERE a.state = 'skipped' OR a.flag IS NOT NULL
		UNION ALL
		SELECT a.flag_resolved_at, coalesce(nullif(btrim(u.name), ''), u.email), 'resolved a flag: ' || a.flag_resolution, a.flag_resolution_note
		FROM assignments a JOIN it ON a.item_id = it.id JOIN users u ON u.id = a.flag_resolved_by
		UNION ALL
		SELECT j.decided_at, coalesce(nullif(btrim(u.name), ''), u.email), 'adjudicated the gold',
		       (SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM jsonb_each_text(j.answers) AS e(k, v)) ||
		       CASE WHEN j.note <> '' THEN ' · ' || j.note ELSE '' END
		FROM adjudications j JOIN it ON j.item_id = it.id JOIN users u ON u.id = j.decided_by
		UNION ALL
		SELECT max(g.decided_at), '', 'gold set by the consensus rule', string_agg(g.rubric_item_key || '=' || g.value, ' ' ORDER BY g.rubric_item_key)
		FROM gold_labels g JOIN it ON g.item_id = it.id WHERE g.method = 'automatic' HAVING count(*) > 0
		UNION ALL
		SELECT max(g.decided_at), '', 'gold set by the trusted judge', string_agg(g.rubric_item_key || '=' || g.value, ' ' ORDER BY g.rubric_item_key)
		FROM gold_labels g JOIN it ON g.item_id = it.id WHERE g.method = 'trusted_judge' HAVING count(*) > 0
		UNION ALL
		SELECT t.decided_at, r.name, CASE t.decision WHEN 'kept' THEN 'kept by trust routing' ELSE 'escalated to people by trust routing' END, t.reason
		FROM trust_routes t JOIN it ON t.item_id = it.id JOIN raters r ON r.id = t.rater_id
		UNION ALL
		SELECT e.occurred_at, coalesce(nullif(btrim(u.name), ''), u.email, ''),
		       CASE e.action WHEN 'item.pull' THEN $3 ELSE $4 END, coalesce(e.details ->> 'via', '')
		FROM audit_events e JOIN it ON e.subject = it.source_id LEFT JOIN users u ON u.id = e.actor_id
		WHERE e.project_id = $1 AND e.action IN ('item.pull', 'item.return')
		ORDER BY 1, 3`, projectID, itemID, EventPulled, EventReturned)
	if err != nil {
		return nil, mapErr(err, "item history", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ItemEvent, error) {
		var e ItemEvent
		err := r.Scan(&e.At, &e.Who, &e.What, &e.Detail)
		return e, err
	})
	if err != nil {
		return nil, mapErr(err, "item history", "")
	}
	if len(out) == 0 {
		return nil, attune.NotFound("no such item in this project")
	}
	return out, nil
}
