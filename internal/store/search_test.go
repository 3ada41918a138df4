package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// searchFixture is a likert project of nine items: five alike ("I feel low
// x", item-000 … item-004) and four with their own words and meta, some
// labelled by two people and a judge, two with gold, one flagged.
type searchFixture struct {
	*fixture
	ids    map[string]int64 // item id by source id
	raters map[string]int64 // rater id by name
}

func newSearchFixture(t *testing.T) *searchFixture {
	t.Helper()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", items: 5, annotators: 1})
	item := func(line int, id, user, meta string) store.ImportItem {
		msgs, _ := json.Marshal([]attune.Message{{Role: "user", Content: user}, {Role: "assistant", Content: "Tell me more."}})
		return store.ImportItem{Line: line, SourceID: id, Kind: "reply", Messages: msgs, Meta: []byte(meta), Turns: 1,
			SHA256: fmt.Sprintf("%064x", line+100)}
	}
	if _, err := importItems(f.db, f.project.ID, false,
		item(1, "dog-1", "I lost my dog in the park yesterday", `{"lang":"en","source":"forum"}`),
		item(2, "dog-2", "My dogs ran away and I am scared", `{"lang":"de"}`),
		item(3, "cat-1", "My cat is sick", `{"lang":"en","n":3}`),
		item(4, "exam", "I failed my exam <script>alert(1)</script>", `{"lang":"en"}`),
	); err != nil {
		t.Fatal(err)
	}
	// The queued indexing job's work, done here, so the text is searchable.
	if _, err := f.db.IndexItems(ctx, f.project.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.importLabelsCSV(t, `item,rater,rater_kind,rubric_item,value,rationale
dog-1,Ann,human,safety,1,told to go look alone at night
dog-1,Bo,human,safety,4,
dog-1,j,judge,safety,4,
dog-1,Ann,human,emotion,3,
dog-1,Bo,human,emotion,3,
dog-1,j,judge,emotion,5,warm
dog-2,Ann,human,emotion,2,
dog-2,j,judge,emotion,2,
cat-1,Ann,human,emotion,4,
cat-1,Bo,human,emotion,4,
cat-1,j,judge,emotion,ERROR,
item-001,Bo,human,emotion,3,
`); err != nil {
		t.Fatal(err)
	}
	sf := &searchFixture{fixture: f, ids: map[string]int64{}, raters: map[string]int64{}}
	rows, err := f.db.Pool().Query(ctx, `SELECT source_id, id FROM items WHERE project_id = $1`, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var id int64
		if err := rows.Scan(&s, &id); err != nil {
			t.Fatal(err)
		}
		sf.ids[s] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	raters, err := f.db.ListProjectRaters(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raters {
		sf.raters[r.Name] = r.ID
	}
	if _, err := f.db.Pool().Exec(ctx, `INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		VALUES ($1, $2, 'emotion', '4', 'automatic')`, sf.ids["cat-1"], f.project.RubricVersionID); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: sf.ids["dog-2"], ActorID: f.lead.ID,
		Answers: map[string]string{"emotion": "2"}, Note: "the judge is right"}); err != nil {
		t.Fatal(err)
	}
	var rater int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, f.annotators[0].ID).Scan(&rater); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool().Exec(ctx, `INSERT INTO assignments (project_id, item_id, rater_id, state, assigned_at, lease_expires_at, finished_at, flag, flag_note)
		VALUES ($1, $2, $3, 'skipped', now() - interval '1 minute', now() + interval '1 hour', now(), 'broken', 'cut off')`,
		f.project.ID, sf.ids["exam"], rater); err != nil {
		t.Fatal(err)
	}
	return sf
}

func (sf *searchFixture) search(t *testing.T, s store.ItemSearch) []string {
	t.Helper()
	page, err := sf.db.SearchItems(context.Background(), sf.project.ID, s)
	if err != nil {
		t.Fatalf("%+v: %v", s, err)
	}
	var out []string
	for _, it := range page.Items {
		out = append(out, it.SourceID)
	}
	return out
}

func intp(n int) *int { return &n }

// Each filter alone, and the text search, keeps exactly the items it says.
func TestSearchItemsFilters(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	concern := []store.RubricAnswer{{Key: "safety", Value: "1"}, {Key: "safety", Value: "2"}}
	for _, tc := range []struct {
		name string
		s    store.ItemSearch
		want []string
	}{
		{"everything, oldest first", store.ItemSearch{}, []string{"item-000", "item-001", "item-002", "item-003", "item-004", "dog-1", "dog-2", "cat-1", "exam"}},
		{"a word, stemmed: dog finds dogs", store.ItemSearch{Text: "dog"}, []string{"dog-1", "dog-2"}},
		{"two words must both be there", store.ItemSearch{Text: "dog park"}, []string{"dog-1"}},
		{"a phrase", store.ItemSearch{Text: `"ran away"`}, []string{"dog-2"}},
		{"a word left out", store.ItemSearch{Text: "dog -park"}, []string{"dog-2"}},
		{"either word", store.ItemSearch{Text: "cat or exam"}, []string{"cat-1", "exam"}},
		{"the assistant's turn is searched too", store.ItemSearch{Text: "tell", SourceID: "cat-1"}, []string{"cat-1"}},
		{"roles are not text", store.ItemSearch{Text: "assistant"}, nil},
		{"only stop words find nothing", store.ItemSearch{Text: "the and"}, nil},
		{"by dataset id", store.ItemSearch{SourceID: "exam"}, []string{"exam"}},
		{"by item number", store.ItemSearch{SourceID: fmt.Sprint(sf.ids["cat-1"])}, []string{"cat-1"}},
		{"meta, one field", store.ItemSearch{Meta: []store.MetaMatch{{Key: "lang", Value: "en"}}}, []string{"dog-1", "cat-1", "exam"}},
		{"meta, two fields", store.ItemSearch{Meta: []store.MetaMatch{{Key: "lang", Value: "en"}, {Key: "source", Value: "forum"}}}, []string{"dog-1"}},
		{"meta, a number", store.ItemSearch{Meta: []store.MetaMatch{{Key: "n", Value: "3"}}}, []string{"cat-1"}},
		{"at least two people", store.ItemSearch{MinLabels: 2}, []string{"dog-1", "cat-1"}},
		{"exactly one person", store.ItemSearch{MinLabels: 1, MaxLabels: intp(1)}, []string{"item-001", "dog-2"}},
		{"nobody yet", store.ItemSearch{MaxLabels: intp(0)}, []string{"item-000", "item-002", "item-003", "item-004", "exam"}},
		{"gold open", store.ItemSearch{Gold: store.GoldOpen, Text: "dog or cat or exam"}, []string{"dog-1", "exam"}},
		{"gold automatic", store.ItemSearch{Gold: store.GoldAutomatic}, []string{"cat-1"}},
		{"gold adjudicated", store.ItemSearch{Gold: store.GoldAdjudicated}, []string{"dog-2"}},
		{"safety concern", store.ItemSearch{Concern: concern}, []string{"dog-1"}},
		{"no concern answers: nothing", store.ItemSearch{Concern: []store.RubricAnswer{}}, nil},
		{"flagged", store.ItemSearch{Flagged: true}, []string{"exam"}},
		{"judge against people on emotion (ERROR never counts)", store.ItemSearch{JudgeDisagrees: "emotion"}, []string{"dog-1"}},
		{"judge against people on safety", store.ItemSearch{JudgeDisagrees: "safety"}, []string{"dog-1"}},
		{"annotator Bo", store.ItemSearch{RaterID: sf.raters["Bo"]}, []string{"item-001", "dog-1", "cat-1"}},
		{"text and two filters", store.ItemSearch{Text: "dog or cat or exam", Meta: []store.MetaMatch{{Key: "lang", Value: "en"}}, Gold: store.GoldOpen}, []string{"dog-1", "exam"}},
		{"newest first", store.ItemSearch{Text: "dog", Sort: store.SortNewest}, []string{"dog-2", "dog-1"}},
		{"by dataset id", store.ItemSearch{Text: "dog or cat or exam", Sort: store.SortSource}, []string{"cat-1", "dog-1", "dog-2", "exam"}},
		{"most labelled first", store.ItemSearch{Text: "dog or cat or exam", Sort: store.SortLabels}, []string{"dog-1", "cat-1", "dog-2", "exam"}},
	} {
		if got := sf.search(t, tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Another project's items are never found, whatever the search.
func TestSearchItemsStaysInItsProject(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	ctx := context.Background()
	other, err := sf.db.CreateProject(ctx, nil, store.NewProject{Name: "other", RubricVersionID: sf.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	page, err := sf.db.SearchItems(ctx, other.ID, store.ItemSearch{Text: "dog"})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("another project's search found %+v, %v", page.Items, err)
	}
	page, err = sf.db.SearchItems(ctx, other.ID, store.ItemSearch{SourceID: fmt.Sprint(sf.ids["dog-1"])})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("another project's search by number found %+v, %v", page.Items, err)
	}
}

// A row says what the list shows of an item: its counts, gold and flags.
func TestSearchItemsRow(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	page, err := sf.db.SearchItems(context.Background(), sf.project.ID, store.ItemSearch{Text: "dog or exam or cat"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range page.Items {
		got[it.SourceID] = fmt.Sprintf("%d people, %d judges, gold %q, %d flags, opening %q", it.People, it.Judges, it.Gold, it.Flags, it.Opening)
	}
	want := map[string]string{
		"dog-1": `2 people, 1 judges, gold "", 0 flags, opening "I lost my dog in the park yesterday"`,
		"dog-2": `1 people, 1 judges, gold "adjudicated", 0 flags, opening "My dogs ran away and I am scared"`,
		"cat-1": `2 people, 1 judges, gold "automatic", 0 flags, opening "My cat is sick"`,
		"exam":  `0 people, 0 judges, gold "", 1 flags, opening "I failed my exam <script>alert(1)</script>"`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}

// Walking every page of every order, a page of two at a time, lists each
// item once, in the order's sequence, though many items tie on the order's
// first key (the number of people who answered).
func TestSearchItemsKeysetPages(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	ctx := context.Background()
	all := sf.search(t, store.ItemSearch{})
	for _, sort := range store.SearchSorts {
		whole := sf.search(t, store.ItemSearch{Sort: sort})
		for _, size := range []int{1, 2, 4} {
			var walked []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatalf("%s/%d: more pages than items", sort, size)
				}
				page, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Sort: sort, Cursor: cursor, Limit: size})
				if err != nil {
					t.Fatalf("%s/%d: %v", sort, size, err)
				}
				if len(page.Items) > size || (page.Next != "" && len(page.Items) != size) {
					t.Fatalf("%s/%d: a page of %d, next %q", sort, size, len(page.Items), page.Next)
				}
				for _, it := range page.Items {
					walked = append(walked, it.SourceID)
				}
				if page.Next == "" {
					break
				}
				cursor = page.Next
			}
			if !slices.Equal(walked, whole) {
				t.Errorf("%s, pages of %d: %v, want %v", sort, size, walked, whole)
			}
		}
		sorted := slices.Clone(whole)
		slices.Sort(sorted)
		want := slices.Clone(all)
		slices.Sort(want)
		if !slices.Equal(sorted, want) {
			t.Errorf("%s lists %v, want every item once", sort, whole)
		}
	}
	if got := sf.search(t, store.ItemSearch{Sort: store.SortLabels}); !slices.Equal(got[:2], []string{"dog-1", "cat-1"}) ||
		!slices.Equal(got[2:4], []string{"item-001", "dog-2"}) {
		t.Errorf("by labels: %v", got)
	}
	// A cursor of another order, or made up, is refused.
	page, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Sort: store.SortLabels, Limit: 2})
	if err != nil || page.Next == "" {
		t.Fatal(page, err)
	}
	for _, c := range []struct{ sort, cursor string }{{store.SortSource, page.Next}, {store.SortLabels, "bm90IGEgY3Vyc29y"}, {store.SortOldest, "%%"}} {
		if _, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Sort: c.sort, Cursor: c.cursor}); !strings.Contains(fmt.Sprint(err), "cursor") {
			t.Errorf("cursor %q with sort %s: %v, want refused", c.cursor, c.sort, err)
		}
	}
	if _, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Sort: "random"}); err == nil {
		t.Error("an unknown sort is accepted")
	}
	if _, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Gold: "silver"}); err == nil {
		t.Error("an unknown gold status is accepted")
	}
}

// An import leaves its items' search documents to a queued job: until it
// runs, a text search does not find them and says how many wait. The job
// may run again and again; an item whose dialogue an import replaces is
// found by its new words only.
func TestIndexItemsAfterImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", items: 0, annotators: 1})
	item := func(line int, id, user string) store.ImportItem {
		msgs, _ := json.Marshal([]attune.Message{{Role: "user", Content: user}})
		return store.ImportItem{Line: line, SourceID: id, Kind: "reply", Messages: msgs, Meta: []byte(`{}`), Turns: 1,
			SHA256: fmt.Sprintf("%064x", len(user))}
	}
	search := func(text string) ([]string, int) {
		t.Helper()
		page, err := f.db.SearchItems(ctx, f.project.ID, store.ItemSearch{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range page.Items {
			ids = append(ids, it.SourceID)
		}
		return ids, page.Unindexed
	}
	queued := func() int {
		t.Helper()
		var n int
		if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'item_index' AND queue = $1
			AND (args ->> 'project_id')::bigint = $2`, store.ItemIndexQueue, f.project.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	finish := func() {
		t.Helper()
		if _, err := f.db.Pool().Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE kind = 'item_index'`); err != nil {
			t.Fatal(err)
		}
	}

	// The project's first five items.
	if n, err := f.db.IndexItems(ctx, f.project.ID); err != nil || n != 5 {
		t.Fatalf("indexed %d, %v; want 5", n, err)
	}
	finish()
	before := queued()
	if _, err := importItems(f.db, f.project.ID, false, item(1, "dog", "I lost my dog"), item(2, "cat", "My cat is sick today")); err != nil {
		t.Fatal(err)
	}
	if n := queued() - before; n != 1 {
		t.Fatalf("%d indexing jobs queued by the import, want 1", n)
	}
	if ids, waiting := search("dog"); len(ids) != 0 || waiting != 2 {
		t.Fatalf("before indexing: found %v, %d waiting; want nothing, 2 waiting", ids, waiting)
	}
	for run, want := range []int{2, 0} {
		if n, err := f.db.IndexItems(ctx, f.project.ID); err != nil || n != want {
			t.Fatalf("indexing run %d indexed %d, %v; want %d", run+1, n, err, want)
		}
	}
	finish()
	if ids, waiting := search("dog"); !slices.Equal(ids, []string{"dog"}) || waiting != 0 {
		t.Fatalf("after indexing: found %v, %d waiting; want [dog], 0", ids, waiting)
	}
	if ids, _ := search(`"cat is sick"`); !slices.Equal(ids, []string{"cat"}) {
		t.Fatalf("phrase found %v, want [cat]", ids)
	}

	if _, err := importItems(f.db, f.project.ID, true, item(1, "dog", "I found my puppy again")); err != nil {
		t.Fatal(err)
	}
	if ids, waiting := search("dog or puppy"); len(ids) != 0 || waiting != 1 {
		t.Fatalf("after the update: found %v, %d waiting; want nothing, 1 waiting", ids, waiting)
	}
	if n, err := f.db.IndexItems(ctx, 0); err != nil || n != 1 {
		t.Fatalf("the sweep indexed %d, %v; want 1", n, err)
	}
	finish()
	if ids, _ := search("puppy"); !slices.Equal(ids, []string{"dog"}) {
		t.Fatalf("new words found %v, want [dog]", ids)
	}
	if ids, _ := search("lost"); len(ids) != 0 {
		t.Fatalf("replaced words found %v, want nothing", ids)
	}
}

// A search counts its matches over every page, whatever page it is on:
// exactly up to MatchCountBound, and as "more" past it, reading no more
// than one item past the bound.
func TestSearchItemsCount(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		s    store.ItemSearch
		want int
	}{
		{store.ItemSearch{Count: true}, 9},
		{store.ItemSearch{Count: true, Text: "dog"}, 2},
		{store.ItemSearch{Count: true, Text: "nothing-like-it"}, 0},
		{store.ItemSearch{Count: true, Meta: []store.MetaMatch{{Key: "lang", Value: "en"}}}, 3},
		{store.ItemSearch{Count: true, Limit: 2}, 9},
		{store.ItemSearch{}, 0}, // not asked for
	} {
		page, err := sf.db.SearchItems(ctx, sf.project.ID, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if page.Matches != tc.want || page.MoreMatches() {
			t.Errorf("%+v: %d matches (more: %v), want %d", tc.s, page.Matches, page.MoreMatches(), tc.want)
		}
	}
	// A later page counts the same matches as the first.
	first, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Count: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	second, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Count: true, Limit: 2, Cursor: first.Next})
	if err != nil {
		t.Fatal(err)
	}
	if second.Matches != 9 || len(second.Items) != 2 || second.Items[0].SourceID != "item-002" {
		t.Fatalf("second page: %d matches, items %+v", second.Matches, second.Items)
	}

	// Past the bound the count says only that there are more.
	big := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", items: store.MatchCountBound + 5})
	page, err := big.db.SearchItems(ctx, big.project.ID, store.ItemSearch{Count: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !page.MoreMatches() || page.Matches != store.MatchCountBound+1 || len(page.Items) != 10 {
		t.Fatalf("%d items: %d matches (more: %v), %d on the page", store.MatchCountBound+5, page.Matches, page.MoreMatches(), len(page.Items))
	}
	page, err = big.db.SearchItems(ctx, big.project.ID, store.ItemSearch{Count: true, MaxLabels: intp(0), SourceID: "item-007"})
	if err != nil {
		t.Fatal(err)
	}
	if page.MoreMatches() || page.Matches != 1 {
		t.Fatalf("one item of many: %d matches", page.Matches)
	}
}

// A text search's rows carry a snippet of the dialogue with the matched
// words marked; the text comes back as written (markup in it is text, for
// the page to escape), and marks never come from the text itself.
func TestSearchItemsSnippet(t *testing.T) {
	t.Parallel()
	sf := newSearchFixture(t)
	ctx := context.Background()
	msgs, _ := json.Marshal([]attune.Message{
		{Role: "user", Content: "Fake marks and a <b>bold</b> claim \ue000here\ue001: x<y && sleep > z"},
		{Role: "assistant", Content: `Sleeping badly is hard. <script>alert("sleep")</script>`}})
	if _, err := importItems(sf.db, sf.project.ID, false, store.ImportItem{Line: 1, SourceID: "sleep-1", Kind: "reply", Messages: msgs,
		Meta: []byte(`{}`), Turns: 1, SHA256: fmt.Sprintf("%064x", 999)}); err != nil {
		t.Fatal(err)
	}
	if _, err := sf.db.IndexItems(ctx, sf.project.ID); err != nil {
		t.Fatal(err)
	}
	snippet := func(text, source string) []store.SnippetPart {
		t.Helper()
		page, err := sf.db.SearchItems(ctx, sf.project.ID, store.ItemSearch{Text: text, SourceID: source})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("%q: %d items", text, len(page.Items))
		}
		return page.Items[0].Snippet
	}
	marked := func(parts []store.SnippetPart) string {
		var b strings.Builder
		for _, p := range parts {
			if p.Match {
				b.WriteString("[" + p.Text + "]")
			} else {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	got := marked(snippet("exam", "exam"))
	if want := "I failed my [exam] <script>alert(1)</script> · Tell me more."; got != want {
		t.Errorf("exam: snippet %q, want %q", got, want)
	}
	got = marked(snippet("sleep", "sleep-1"))
	for _, want := range []string{"[sleep] > z", "[Sleeping] badly", `<script>alert("[sleep]")`, "here: x<y && [sleep] > z"} {
		if !strings.Contains(got, want) {
			t.Errorf("sleep: snippet %q does not hold %q", got, want)
		}
	}
	if strings.ContainsAny(got, "\ue000\ue001\ue002\ue003") {
		t.Errorf("sleep: snippet %q keeps a private mark", got)
	}
	for _, p := range snippet("sleep", "sleep-1") {
		if p.Match && strings.ToLower(p.Text)[:5] != "sleep" {
			t.Errorf("a mark around %q, which the query did not match", p.Text)
		}
	}
	// Without a text query there is no snippet.
	if s := snippet("", "sleep-1"); s != nil {
		t.Errorf("no query: snippet %+v", s)
	}
}
