package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/browse"
)

// browsePath is the items browser of a project with a query (nil: none).
func browsePath(projectID int64, q url.Values) string {
	p := fmt.Sprintf("/projects/%d/browse", projectID)
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// The query parameters of an item search, shared by the browser's form
// and the API (docs/api.md): q, id, meta (repeated, key=value), min, max,
// gold, safety, flagged, disagree, rater, sort and cursor.
var searchParams = []string{"q", "id", "meta", "min", "max", "gold", "safety", "flagged", "disagree", "rater", "sort"}

// readItemSearch reads a search from a query string, checked against the
// project's rubric: the one reading behind the browser and the API, so
// that both find the same items.
func readItemSearch(q url.Values, def *rubric.Definition) (store.ItemSearch, error) {
	s := store.ItemSearch{Text: q.Get("q"), SourceID: q.Get("id"), Gold: q.Get("gold"), Sort: q.Get("sort"), Cursor: q.Get("cursor")}
	if err := store.CheckSearchText(s.Text); err != nil {
		return s, err
	}
	for _, m := range q["meta"] {
		if strings.TrimSpace(m) == "" {
			continue
		}
		k, v, ok := strings.Cut(m, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return s, attune.Invalid("meta", fmt.Sprintf("write a meta field as key=value, not %q", m))
		}
		s.Meta = append(s.Meta, store.MetaMatch{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
	}
	count := func(name string) (int, bool, error) {
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, false, attune.Invalid(name, fmt.Sprintf("give a number of people from 0 up, not %q", v))
		}
		return n, true, nil
	}
	var err error
	if s.MinLabels, _, err = count("min"); err != nil {
		return s, err
	}
	if n, ok, err := count("max"); err != nil {
		return s, err
	} else if ok {
		s.MaxLabels = &n
	}
	if !slices.Contains([]string{"", store.GoldOpen, store.GoldAutomatic, store.GoldAdjudicated, store.GoldTrustedJudge}, s.Gold) {
		return s, attune.Invalid("gold", fmt.Sprintf("%q is not a gold status: open, automatic, adjudicated or trusted_judge", s.Gold))
	}
	if s.Sort != "" && !slices.Contains(store.SearchSorts, s.Sort) {
		return s, attune.Invalid("sort", fmt.Sprintf("%q is not an order: %s", s.Sort, strings.Join(store.SearchSorts, ", ")))
	}
	if flag(q, "safety") {
		s.Concern = []store.RubricAnswer{}
		for key, values := range gold.SafetyAnswers(def) {
			for _, v := range values {
				s.Concern = append(s.Concern, store.RubricAnswer{Key: key, Value: string(v)})
			}
		}
	}
	s.Flagged = flag(q, "flagged")
	if k := q.Get("disagree"); k != "" {
		if _, ok := def.Item(k); !ok {
			return s, attune.Invalid("disagree", fmt.Sprintf("%q is not an item of the rubric", k))
		}
		s.JudgeDisagrees = k
	}
	if v := q.Get("rater"); v != "" {
		if s.RaterID, err = strconv.ParseInt(v, 10, 64); err != nil || s.RaterID <= 0 {
			return s, attune.Invalid("rater", fmt.Sprintf("give a rater by number, not %q", v))
		}
	}
	return s, nil
}

// flag reads a yes/no query parameter: 1, true, yes or on is yes.
func flag(q url.Values, name string) bool {
	switch strings.ToLower(q.Get(name)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// browserProject loads the project of a lead-only items browser route.
func (s *Handler) browserProject(r *http.Request) (*attune.Project, *rubric.Definition, error) {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		if errors.Is(err, attune.ErrForbidden) {
			return nil, nil, attune.Forbidden("Only a lead of this project can browse its items.")
		}
		return nil, nil, err
	}
	def, err := s.DB.FindRubricByID(r.Context(), p.RubricVersionID)
	return p, def, err
}

// The items browser's meta columns: at most browseMaxColumns chosen, keys
// of at most browseMaxKey bytes; a row shows at most browseMetaFields of
// its other fields, each value cut to browseMetaValue bytes.
const (
	browseMaxColumns = 8
	browseMaxKey     = 100
	browseMetaFields = 20
	browseMetaValue  = 160
	browseCellValue  = 80
)

// readBrowseColumns reads the meta keys chosen as columns (col, repeated),
// in order, without repeats.
func readBrowseColumns(q url.Values) ([]string, error) {
	var cols []string
	for _, c := range q["col"] {
		c = strings.TrimSpace(c)
		switch {
		case c == "" || slices.Contains(cols, c):
			continue
		case len(c) > browseMaxKey:
			return nil, attune.Invalid("col", fmt.Sprintf("a meta key is at most %d bytes; this one is %d", browseMaxKey, len(c)))
		}
		cols = append(cols, c)
	}
	if len(cols) > browseMaxColumns {
		return nil, attune.Invalid("col", fmt.Sprintf("choose at most %d meta fields as columns, not %d", browseMaxColumns, len(cols)))
	}
	return cols, nil
}

// browseQuery is what the items browser reads from its query.
type browseQuery struct {
	search store.ItemSearch
	cols   []string
}

// BrowseItems is the items browser: a GET form over the project's items,
// a keyset page at a time. A parameter it cannot read is left out of the
// search, its message shown by its field, with 422.
func (s *Handler) BrowseItems(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, def, err := s.browserProject(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	bq, problems, err := kit.ReadLeniently(q, func(q url.Values) (browseQuery, error) {
		search, err := readItemSearch(q, def)
		if err != nil {
			return browseQuery{}, err
		}
		cols, err := readBrowseColumns(q)
		return browseQuery{search: search, cols: cols}, err
	})
	if err != nil {
		return err
	}
	search := bq.search
	search.Limit, search.Count = kit.DefaultPageSize, true
	db, readFrom := s.HeavyReads(r)
	res, err := db.SearchItems(ctx, p.ID, search)
	var ve *attune.ValidationError
	if errors.As(err, &ve) && search.Cursor != "" {
		// A cursor of another search: the first page, saying why.
		if problems == nil {
			problems = map[string]string{}
		}
		problems["cursor"] = kit.PublicText(err)
		search.Cursor = ""
		res, err = db.SearchItems(ctx, p.ID, search)
	}
	if err != nil {
		return err
	}
	raters, err := s.DB.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return err
	}
	// The view's own query, without the cursor and what could not be
	// read: the base of its pages.
	base := url.Values{}
	for _, k := range append(slices.Clone(searchParams), "col") {
		if _, bad := problems[k]; bad {
			continue
		}
		for _, v := range q[k] {
			if strings.TrimSpace(v) != "" {
				base.Add(k, v)
			}
		}
	}
	page := browse.SearchPage{
		Chrome:      s.Chrome(r, "Items · "+p.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)),
		ReadFrom:   readFrom,
		TextSearch: strings.TrimSpace(search.Text) != "", Columns: bq.cols, SystemKey: p.SystemKey,
	}
	// The form shows what was asked, a refused value too, so that it can
	// be mended where it stands.
	f := browse.Form{Action: templ.SafeURL(browsePath(p.ID, nil)), Text: q.Get("q"), ID: q.Get("id"),
		Min: q.Get("min"), Max: q.Get("max"), Safety: search.Concern != nil, Flagged: search.Flagged, Errors: problems}
	for _, m := range q["meta"] {
		if strings.TrimSpace(m) != "" {
			f.Meta = append(f.Meta, m)
		}
	}
	f.Meta = append(f.Meta, "")
	f.Gold = options(search.Gold, [][2]string{{"", "any"}, {store.GoldOpen, "no gold yet"}, {store.GoldAutomatic, "set by the consensus rule"}, {store.GoldAdjudicated, "adjudicated"}, {store.GoldTrustedJudge, "kept by the trusted judge"}})
	keys := [][2]string{{"", "—"}}
	for _, it := range def.Items {
		keys = append(keys, [2]string{it.Key, it.Key})
	}
	f.Disagree = options(search.JudgeDisagrees, keys)
	who := [][2]string{{"", "anyone"}}
	for _, rt := range raters {
		who = append(who, [2]string{strconv.FormatInt(rt.ID, 10), kit.RaterLabel(rt.Name, rt.Kind, !rt.Account)})
	}
	f.Rater = options(strconv.FormatInt(search.RaterID, 10), who)
	f.Sort = options(search.Sort, [][2]string{{store.SortOldest, "oldest first"}, {store.SortNewest, "newest first"},
		{store.SortSource, "by item id"}, {store.SortLabels, "most people first"}})
	f.Summary = browseFilterSummary(search, who)
	seen := map[string]bool{}
	for _, it := range res.Items {
		row := browse.Row{URL: templ.SafeURL(kit.BrowseItemPath(p.ID, it.ID)), SourceID: it.SourceID,
			Opening: it.Opening, People: it.People, Judges: it.Judges, Gold: it.Gold, Flags: it.Flags, Pulled: it.Pulled}
		for _, m := range it.Snippet {
			row.Snippet = append(row.Snippet, browse.Mark{Text: m.Text, Match: m.Match})
		}
		row.Cells, row.Meta, row.MetaMore = metaFields(it.Meta, bq.cols, seen)
		row.System, _ = itemSystem(it.Meta, p.SystemKey, browseCellValue)
		page.Rows = append(page.Rows, row)
	}
	offered := slices.Clone(bq.cols)
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if !slices.Contains(offered, k) && len(offered) < 30 {
			offered = append(offered, k)
		}
	}
	for _, k := range offered {
		f.Columns = append(f.Columns, browse.Check{Value: k, Checked: slices.Contains(bq.cols, k)})
	}
	page.Form = f
	switch {
	case res.MoreMatches():
		page.Matches = fmt.Sprintf("More than %d items match.", store.MatchCountBound)
	case res.Matches == 0:
		page.Matches = "No item matches."
	default:
		page.Matches = fmt.Sprintf("%d %s.", res.Matches, kit.Plural(res.Matches, "item matches", "items match"))
	}
	switch n := len(res.Items); {
	case n == 0 && search.Cursor != "":
		page.Summary = "No more items match."
	case n == 0:
	case res.Next != "" && search.Cursor == "":
		page.Summary = fmt.Sprintf("This page lists the first %d; more follow.", n)
	case res.Next != "":
		page.Summary = fmt.Sprintf("This page lists %d; more follow.", n)
	case search.Cursor != "":
		page.Summary = fmt.Sprintf("This page lists %d, the last.", n)
	}
	if res.Unindexed > 0 {
		page.Summary += fmt.Sprintf(" %d %s still being indexed: the text search does not find %s yet.",
			res.Unindexed, kit.Plural(res.Unindexed, "item is", "items are"), kit.Plural(res.Unindexed, "it", "them"))
	}
	if search.Cursor != "" {
		page.FirstURL = templ.SafeURL(browsePath(p.ID, base))
	}
	if res.Next != "" {
		next := url.Values{}
		for k, v := range base {
			next[k] = v
		}
		next.Set("cursor", res.Next)
		page.NextURL = templ.SafeURL(browsePath(p.ID, next))
	}
	status := http.StatusOK
	if len(problems) > 0 {
		status = http.StatusUnprocessableEntity
	}
	s.Render(w, r, status, browse.Search(page))
	return nil
}

// metaFields splits an item's meta object into the values of the chosen
// columns ("" where it has none) and its other fields, at most
// browseMetaFields of them in key order, with how many more there are; it
// adds every key it meets to seen. A meta that is not an object shows
// whole, under no key.
func metaFields(meta []byte, cols []string, seen map[string]bool) ([]string, []browse.MetaField, int) {
	cells := make([]string, len(cols))
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(meta, &obj); err != nil {
		if v := compactPreview(meta, browseMetaValue); v != "" && v != "null" {
			return cells, []browse.MetaField{{Key: "", Value: v}}, 0
		}
		return cells, nil, 0
	}
	var rest []browse.MetaField
	more := 0
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		seen[k] = true
		if i := slices.Index(cols, k); i >= 0 {
			cells[i] = metaValue(obj[k], browseCellValue)
			continue
		}
		if len(rest) == browseMetaFields {
			more++
			continue
		}
		rest = append(rest, browse.MetaField{Key: k, Value: metaValue(obj[k], browseMetaValue)})
	}
	return cells, rest, more
}

// itemSystem is the system an item's meta names under key, as the items
// browser shows meta values (metaValue, cut to limit bytes), and whether
// it names one: a missing or null field names none.
func itemSystem(meta []byte, key string, limit int) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(meta, &obj) != nil {
		return "", false
	}
	raw, ok := obj[key]
	if !ok || string(raw) == "null" {
		return "", false
	}
	return metaValue(raw, limit), true
}

// metaValue is a meta value as text: a string as it is, anything else as
// compact JSON, cut to limit bytes with "…".
func metaValue(raw json.RawMessage, limit int) string {
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		if len(str) > limit {
			cut := limit
			for cut > 0 && !utf8.RuneStart(str[cut]) {
				cut--
			}
			return str[:cut] + "…"
		}
		return str
	}
	return compactPreview(raw, limit)
}

// browseFilterSummary says in a line what the search keeps, for the
// folded form: "dialogue says “sleep” · lang=en · newest first".
func browseFilterSummary(s store.ItemSearch, raters [][2]string) string {
	var parts []string
	if t := strings.TrimSpace(s.Text); t != "" {
		parts = append(parts, "dialogue says “"+t+"”")
	}
	if s.SourceID != "" {
		parts = append(parts, "item "+s.SourceID)
	}
	for _, m := range s.Meta {
		parts = append(parts, m.Key+"="+m.Value)
	}
	switch {
	case s.MinLabels > 0 && s.MaxLabels != nil:
		parts = append(parts, fmt.Sprintf("%d to %d people", s.MinLabels, *s.MaxLabels))
	case s.MinLabels > 0:
		parts = append(parts, fmt.Sprintf("at least %d %s", s.MinLabels, kit.Plural(s.MinLabels, "person", "people")))
	case s.MaxLabels != nil:
		parts = append(parts, fmt.Sprintf("at most %d %s", *s.MaxLabels, kit.Plural(*s.MaxLabels, "person", "people")))
	}
	if s.Gold != "" {
		parts = append(parts, "gold "+s.Gold)
	}
	if s.Concern != nil {
		parts = append(parts, "a safety concern")
	}
	if s.Flagged {
		parts = append(parts, "flagged")
	}
	if s.JudgeDisagrees != "" {
		parts = append(parts, "a judge differs on "+s.JudgeDisagrees)
	}
	if s.RaterID > 0 {
		id := strconv.FormatInt(s.RaterID, 10)
		for _, r := range raters {
			if r[0] == id {
				parts = append(parts, "answered by "+r[1])
			}
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "every item")
	}
	if s.Sort != "" && s.Sort != store.SortOldest {
		parts = append(parts, map[string]string{store.SortNewest: "newest first", store.SortSource: "by item id", store.SortLabels: "most people first"}[s.Sort])
	}
	return strings.Join(parts, " · ")
}

// options makes a select's options from value, label pairs, with value
// selected.
func options(value string, pairs [][2]string) []browse.Option {
	out := make([]browse.Option, len(pairs))
	for i, p := range pairs {
		out[i] = browse.Option{Value: p[0], Label: p[1], Selected: p[0] == value}
	}
	return out
}

// BrowseItemMeta is an item's whole meta as a JSON file, for the item
// whose page shows only the start of it.
func (s *Handler) BrowseItemMeta(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.browserProject(r)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	it, err := s.DB.FindItem(r.Context(), p.ID, itemID)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="item-%d-meta.json"`, it.ID))
	_, err = w.Write(it.Meta)
	return err
}

// itemDetail is everything known of one item, for its page and the API.
type itemDetail struct {
	item          *attune.Item
	def           *rubric.Definition
	sets          []store.ItemAnswerSet
	scores        []scoring.Result // in the order of sets
	gold          *store.ItemGold  // nil without gold
	goldScore     scoring.Result
	adjudications []store.PastAdjudication
	flags         []attune.Flag
	history       []store.ItemEvent
}

// loadItemDetail reads an item of the project with its answers, gold,
// flags and history, and scores every answer set and the gold with the
// scoring engine.
func (s *Handler) loadItemDetail(ctx context.Context, p *attune.Project, def *rubric.Definition, itemID int64) (*itemDetail, error) {
	d := &itemDetail{def: def}
	var err error
	if d.item, err = s.DB.FindItem(ctx, p.ID, itemID); err != nil {
		return nil, err
	}
	if d.sets, err = s.DB.ItemAnswerSets(ctx, p.ID, itemID); err != nil {
		return nil, err
	}
	facts := labeling.FactsOf(d.item)
	for _, a := range d.sets {
		res, err := scoring.Score(def, kit.ToAnswers(a.Answers), facts)
		if err != nil {
			return nil, err
		}
		d.scores = append(d.scores, res)
	}
	switch d.gold, err = s.DB.FindGold(ctx, itemID); {
	case err == nil:
		if d.goldScore, err = scoring.Score(def, kit.ToAnswers(d.gold.Answers), facts); err != nil {
			return nil, err
		}
	case !kit.IsNotFound(err):
		return nil, err
	}
	if d.adjudications, err = s.DB.ListAdjudications(ctx, itemID); err != nil {
		return nil, err
	}
	if d.flags, err = s.DB.ListFlags(ctx, store.FlagFilter{ProjectID: p.ID, ItemID: itemID}); err != nil {
		return nil, err
	}
	if d.history, err = s.DB.ItemHistory(ctx, p.ID, itemID); err != nil {
		return nil, err
	}
	return d, nil
}

// BrowseItem is one item's page in the items browser.
func (s *Handler) BrowseItem(w http.ResponseWriter, r *http.Request) error {
	p, def, err := s.browserProject(r)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	d, err := s.loadItemDetail(r.Context(), p, def, itemID)
	if err != nil {
		return err
	}
	it := d.item
	page := browse.ItemPage{
		Chrome:      s.Chrome(r, it.SourceID+" · "+p.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), BrowserURL: templ.SafeURL(browsePath(p.ID, nil)),
		AdjudicateURL: templ.SafeURL(adjudicatePath(p.ID, it.ID)),
		SourceID:      it.SourceID, ItemID: it.ID, Kind: it.Kind, Sensitive: it.Sensitive,
	}
	if meta, more := indentPreview(it.Meta, metaPreviewBytes); meta != "{}" && meta != "" {
		page.Meta = meta
		if more > 0 {
			page.MetaMore = fmt.Sprintf("… %d more bytes of meta are not shown here.", more)
			page.MetaURL = templ.SafeURL(kit.BrowseItemPath(p.ID, it.ID) + "/meta.json")
		}
	}
	for _, m := range it.Messages {
		page.Dialogue = append(page.Dialogue, browse.Turn{Role: m.Role, Content: m.Content})
	}
	for i, a := range d.sets {
		page.Raters = append(page.Raters, browse.Rater{Name: a.Name, Judge: a.Kind == "judge", Model: a.Model,
			Submitted: a.Submitted.UTC().Format(timeFormat), Rationale: a.Rationale, Score: browseScore(def, d.scores[i]),
			Concern: gold.SafetyConcern(def, kit.ToAnswers(a.Answers))})
	}
	for _, ri := range def.Items {
		row := browse.AnswerRow{Key: ri.Key, Label: ri.Label}
		for _, a := range d.sets {
			row.Cells = append(row.Cells, browse.Cell{Value: a.Answers[ri.Key], Rationale: a.Rationales[ri.Key], Method: a.Methods[ri.Key]})
		}
		if d.gold != nil {
			row.Gold = d.gold.Answers[ri.Key]
		}
		page.Rows = append(page.Rows, row)
	}
	if g := d.gold; g != nil {
		page.Gold = &browse.Gold{Method: g.Method, By: g.DecidedBy, At: g.DecidedAt.UTC().Format(timeFormat), Note: g.Note,
			Score: browseScore(def, d.goldScore)}
	}
	for _, a := range d.adjudications {
		page.Adjudications = append(page.Adjudications, browse.Adjudication{By: a.DecidedBy, At: a.DecidedAt.UTC().Format(timeFormat),
			Answers: answerPairs(a.Answers), Note: a.Note})
	}
	for _, f := range d.flags {
		page.Flags = append(page.Flags, browse.Flag{Reason: f.Reason, Note: f.Note, Annotator: f.Annotator,
			At: f.FlaggedAt.UTC().Format(timeFormat), Resolution: string(f.Resolution)})
	}
	for _, e := range d.history {
		page.History = append(page.History, browse.Event{At: e.At.UTC().Format(timeFormat), Who: e.Who, What: e.What, Detail: e.Detail})
	}
	for _, e := range d.history {
		switch e.What {
		case store.EventPulled:
			page.Pulled = true
		case store.EventReturned:
			page.Pulled = false
		}
	}
	s.Render(w, r, http.StatusOK, browse.Item(page))
	return nil
}

// browseScore writes the engine's result in words.
func browseScore(def *rubric.Definition, res scoring.Result) browse.Score {
	sc := scoreView(def, res)
	return browse.Score{Score: sc.Score, Pass: sc.Pass, Gate: sc.Gate, Failed: sc.Failed, Mean: sc.Mean}
}

// answerPairs writes answers as key=value, by key.
func answerPairs(answers map[string]string) string {
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + answers[k]
	}
	return strings.Join(keys, " ")
}
