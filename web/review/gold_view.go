package review

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/internal/labeling"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/annotate"
	goldview "github.com/attune/attune/web/views/gold"
)

// timeFormat is how the gold pages write a moment.
const timeFormat = "2 Jan 2006, 15:04 UTC"

func goldLinks(p *attune.Project) goldview.Links {
	return goldview.Links{
		Project:     templ.SafeURL(kit.ProjectPath(p.ID)),
		Queue:       templ.SafeURL(queuePath(p.ID)),
		Gold:        templ.SafeURL(goldPath(p.ID)),
		Apply:       templ.SafeURL(goldPath(p.ID) + "/auto"),
		Calibration: templ.SafeURL(calibrationPath(p.ID)),
	}
}

func countsView(c store.GoldCounts) goldview.Counts {
	return goldview.Counts{Items: c.Items, Labelling: c.Labelling, Automatic: c.Automatic, Adjudicated: c.Adjudicated,
		Queue: c.Queue, Pending: c.Pending, Open: c.Open()}
}

// exportsView lists the downloads of the gold set page.
func exportsView(projectID int64) []goldview.Export {
	url := func(d export.Dataset, f export.Format) templ.SafeURL {
		return templ.SafeURL(exportPath(projectID, d, f))
	}
	return []goldview.Export{
		{Key: string(export.Gold), Title: "Gold set", Help: "one row per item: its gold on every rubric item, the engine's score of it, how it was decided and by whom, and the item's agreement",
			CSV: url(export.Gold, export.CSV), JSONL: url(export.Gold, export.JSONL), WithRaters: url(export.Gold, export.CSV) + "?raters=1"},
		{Key: string(export.Labels), Title: "Every label", Help: "long form: one row per item, rater (people and judges) and rubric item, with rationales and time spent",
			CSV: url(export.Labels, export.CSV), JSONL: url(export.Labels, export.JSONL)},
		{Key: string(export.JudgeCalls), Title: "Judge calls", Help: "every call a judge made: model, prompt hash, tokens, cost and the raw reply",
			CSV: url(export.JudgeCalls, export.CSV), JSONL: url(export.JudgeCalls, export.JSONL)},
		{Key: string(export.Flags), Title: "Flags", Help: "every flag annotators raised on an item: reason, note, who and when, and how a lead resolved it",
			CSV: url(export.Flags, export.CSV), JSONL: url(export.Flags, export.JSONL)},
	}
}

// datasetsView lists the downloads of the dataset export.
func datasetsView(projectID int64) []goldview.DatasetExport {
	url := func(w export.Which, f export.Format, soft bool) templ.SafeURL {
		return templ.SafeURL(datasetPath(projectID, f, export.RecordOptions{Which: w, Soft: soft}))
	}
	var out []goldview.DatasetExport
	for _, d := range []struct {
		which       export.Which
		title, help string
	}{
		{export.WhichGold, "Gold set", "the items with gold on every rubric item"},
		{export.WhichLabels, "Every item", "open items too, their gold empty"},
	} {
		out = append(out, goldview.DatasetExport{Key: string(d.which), Title: d.title, Help: d.help,
			JSONL: url(d.which, export.JSONL, false), Parquet: url(d.which, export.Parquet, false),
			SoftJSONL: url(d.which, export.JSONL, true), SoftParquet: url(d.which, export.Parquet, true)})
	}
	return out
}

func (s *Handler) goldSetView(r *http.Request, p *attune.Project) (goldview.SetPage, error) {
	ctx := r.Context()
	c, err := s.DB.CountGold(ctx, p.ID)
	if err != nil {
		return goldview.SetPage{}, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return goldview.SetPage{}, err
	}
	page := goldview.SetPage{
		Chrome:      s.Chrome(r, "Gold set · "+p.Name, "home"),
		ProjectName: p.Name,
		Rubric:      p.RubricRef,
		Links:       goldLinks(p),
		Counts:      countsView(c),
		Settings:    templ.SafeURL(goldPath(p.ID) + "/settings"),
		MaxSpread:   strconv.Itoa(c.MaxSpread),
		SpreadLimit: gold.MaxSpreadLimit,
		Exports:     exportsView(p.ID),
		Datasets:    datasetsView(p.ID),
	}
	for i := range def.Items {
		if gold.Numeric(def, &def.Items[i]) {
			page.Numeric = true
		}
	}
	return page, nil
}

func (s *Handler) queueView(r *http.Request, p *attune.Project) (goldview.QueuePage, error) {
	ctx := r.Context()
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	n = max(n, 1)
	c, err := s.DB.CountGold(ctx, p.ID)
	if err != nil {
		return goldview.QueuePage{}, err
	}
	ds, total, err := s.DB.ListDisagreements(ctx, p.ID, (n-1)*queuePageSize, queuePageSize)
	if err != nil {
		return goldview.QueuePage{}, err
	}
	page := goldview.QueuePage{
		Chrome:      s.Chrome(r, "Disagreements · "+p.Name, "home"),
		ProjectName: p.Name,
		Links:       goldLinks(p),
		Counts:      countsView(c),
		Page:        n,
		Pages:       (total + queuePageSize - 1) / queuePageSize,
	}
	for i, d := range ds {
		page.Rows = append(page.Rows, goldview.QueueRow{
			Position: (n-1)*queuePageSize + i + 1, SourceID: d.SourceID, URL: templ.SafeURL(adjudicatePath(p.ID, d.ItemID)),
			Safety: d.Safety, Signal: d.Signal, Spread: fmt.Sprintf("%.2f", d.Spread()), Reason: d.Reason, Raters: d.HumanRaters,
		})
	}
	if n > 1 {
		page.Prev = templ.SafeURL(fmt.Sprintf("%s?page=%d", queuePath(p.ID), n-1))
	}
	if n < page.Pages {
		page.Next = templ.SafeURL(fmt.Sprintf("%s?page=%d", queuePath(p.ID), n+1))
	}
	if total == 0 {
		page.EmptyWhy = emptyQueueWhy(c)
	}
	if total > 0 {
		head := ds
		if n > 1 || len(head) == 0 {
			if head, _, err = s.DB.ListDisagreements(ctx, p.ID, 0, 1); err != nil {
				return page, err
			}
		}
		if len(head) > 0 {
			page.Start = templ.SafeURL(adjudicatePath(p.ID, head[0].ItemID))
		}
	}
	return page, nil
}

// emptyQueueWhy says where a project's items stand when no disagreement
// waits: labels settle their items as they arrive, so an empty queue means
// items still being labelled, or settled, or (after a change of the
// setting or the overlap) waiting for a lead's run of the rule.
func emptyQueueWhy(c store.GoldCounts) string {
	if c.Items == 0 {
		return "The project has no items yet."
	}
	var parts []string
	if c.Labelling > 0 {
		parts = append(parts, fmt.Sprintf("%d %s still being labelled", c.Labelling, kit.Plural(c.Labelling, "item is", "items are")))
	}
	if c.Automatic > 0 {
		parts = append(parts, fmt.Sprintf("%d settled by consensus", c.Automatic))
	}
	if c.Adjudicated > 0 {
		parts = append(parts, fmt.Sprintf("%d settled by a lead", c.Adjudicated))
	}
	why := ""
	if len(parts) > 0 { // each starts with its count
		why = strings.Join(parts, "; ") + "."
	}
	if c.Pending > 0 {
		why = strings.TrimSpace(why + fmt.Sprintf(" %d %s complete labels the rule has not judged as they are now (judged under another setting or overlap, or answered by a judge since): apply the consensus rule.",
			c.Pending, kit.Plural(c.Pending, "item has", "items have")))
	}
	return why
}

// scoreView writes the engine's result in words.
func scoreView(def *rubric.Definition, res scoring.Result) goldview.Score {
	sc := goldview.Score{Score: "—", Failed: strings.Join(res.FailedChecks, ", ")}
	if res.Score != nil {
		sc.Score = strconv.FormatFloat(*res.Score, 'f', -1, 64)
	}
	if res.Pass != nil {
		sc.Pass = map[bool]string{true: "pass", false: "fail"}[*res.Pass]
	}
	if len(def.Scoring.Gate) > 0 {
		sc.Gate = map[bool]string{true: "failed", false: "passed"}[res.SafetyGateFailed]
	}
	if res.DimensionMean != nil {
		sc.Mean = strconv.FormatFloat(*res.DimensionMean, 'f', 2, 64)
	}
	return sc
}

// adjudicationView builds the page of one item: the dialogue, every
// rater's answers with the engine's scores, and the gold form holding in
// (what was posted) or, without it, the item's gold as it stands.
func (s *Handler) adjudicationView(r *http.Request, p *attune.Project, itemID int64, in *goldInput, issues rubric.Issues) (goldview.ItemPage, error) {
	ctx := r.Context()
	var page goldview.ItemPage
	item, err := s.DB.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return page, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return page, err
	}
	sets, err := s.DB.ItemAnswerSets(ctx, p.ID, itemID)
	if err != nil {
		return page, err
	}
	spread, err := s.DB.GoldMaxSpread(ctx, p.ID)
	if err != nil {
		return page, err
	}
	current, err := s.DB.FindGold(ctx, itemID)
	if err != nil && !kit.IsNotFound(err) {
		return page, err
	}
	history, err := s.DB.ListAdjudications(ctx, itemID)
	if err != nil {
		return page, err
	}
	facts := labeling.FactsOf(item)
	d := gold.Decide(def, facts, adjudication.HumanAnswers(sets), spread)
	consensus := map[string]gold.ItemConsensus{}
	for _, ic := range d.Items {
		consensus[ic.Key] = ic
	}

	page = goldview.ItemPage{
		Chrome:      s.Chrome(r, "Adjudicate "+item.SourceID, "home"),
		ProjectName: p.Name,
		ItemID:      item.ID,
		SourceID:    item.SourceID,
		ItemURL:     templ.SafeURL(kit.BrowseItemPath(p.ID, item.ID)),
		Links:       goldLinks(p),
		Dialogue:    annotate.DialogueOf(def, *item, nil),
	}
	var all []rubric.Answers
	for _, a := range sets {
		all = append(all, kit.ToAnswers(a.Answers))
	}
	rank := gold.RankOf(def, facts, d, all)
	page.Safety, page.Signal = rank.Safety, rank.Signal
	if d.Decided {
		page.Verdict = "The people agree: " + d.Reason + "."
	} else {
		page.Verdict = "The rule leaves it to you: " + d.Reason + "."
	}
	v, err := s.DB.FindVerdict(ctx, p.ID, itemID)
	switch {
	case err == nil:
		page.Position, page.Total = v.Position, v.Total
	case !kit.IsNotFound(err):
		return page, err
	}
	next, err := s.DB.NextDisagreement(ctx, p.ID, itemID)
	switch {
	case err == nil:
		page.Next = templ.SafeURL(adjudicatePath(p.ID, next))
	case !errors.Is(err, attune.ErrNotFound):
		return page, err
	}

	// The raters, with the engine's score of each one's answers.
	names := make([]string, len(sets))
	for i, a := range sets {
		names[i] = a.Name
	}
	short := shortNames(names)
	for i, a := range sets {
		res, err := scoring.Score(def, kit.ToAnswers(a.Answers), facts)
		if err != nil {
			return page, err
		}
		page.Compare.Raters = append(page.Compare.Raters, goldview.Rater{
			Name: a.Name, Short: short[i], Judge: a.Kind == "judge", Model: a.Model, Score: scoreView(def, res), Note: a.Rationale,
			Concern: gold.SafetyConcern(def, kit.ToAnswers(a.Answers)),
		})
	}
	if d.Decided {
		res, err := scoring.Score(def, d.Answers, facts)
		if err != nil {
			return page, err
		}
		page.Compare.Consensus = scoreView(def, res)
	}

	// The gold as it stands.
	answers := map[string]string{}
	if current != nil {
		res, err := scoring.Score(def, kit.ToAnswers(current.Answers), facts)
		if err != nil {
			return page, err
		}
		c := &goldview.Current{Method: current.Method, By: current.DecidedBy, At: current.DecidedAt.UTC().Format(timeFormat),
			Note: current.Note, Score: scoreView(def, res)}
		page.Current = c
		answers = current.Answers
	}
	note := ""
	if in != nil {
		answers, note = in.answers, in.note
	}

	// The form: one row per rubric item, the safety gate's first, with
	// each rater's answer, the consensus and the gold input; what they
	// wrote and the item's definition are in the row, shown on demand.
	rv, probs := annotate.RubricOf(def, facts, answers, nil, issues)
	page.Form = goldview.Form{
		Action:   templ.SafeURL(adjudicatePath(p.ID, itemID) + "/gold"),
		Rubric:   rv.Ref,
		Title:    rv.Title,
		Kind:     rv.Kind,
		Note:     note,
		NoteMax:  gold.MaxNote,
		Problems: probs,
	}
	for _, g := range rv.Groups {
		gg := goldview.Group{Title: g.Title, Weight: g.Weight}
		for _, iv := range g.Items {
			ic := consensus[iv.Key]
			gi := goldview.Item{Item: iv, Consensus: string(ic.Value), Reason: ic.Reason, Gate: def.InGate(iv.Key)}
			seen := ""
			for i, a := range sets {
				v := a.Answers[iv.Key]
				gi.Ratings = append(gi.Ratings, goldview.Chip{Who: a.Name, Short: short[i], Value: v, Judge: a.Kind == "judge",
					Differs: ic.Decided && v != string(ic.Value), Rationale: a.Rationales[iv.Key], Method: a.Methods[iv.Key], Raw: a.Raws[iv.Key]})
				switch {
				case v == "":
				case seen == "":
					seen = v
				case v != seen:
					gi.Differs = true
				}
			}
			if ic.Decided {
				page.Form.HasConsensus = true
			}
			gg.Items = append(gg.Items, gi)
		}
		page.Form.Groups = append(page.Form.Groups, gg)
	}
	page.Form.Groups = gateFirst(def, page.Form.Groups)
	for _, h := range history {
		keys := make([]string, 0, len(h.Answers))
		for k := range h.Answers {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return itemIndex(def, a) - itemIndex(def, b) })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " " + h.Answers[k]
		}
		page.History = append(page.History, goldview.Past{By: h.DecidedBy, At: h.DecidedAt.UTC().Format(timeFormat),
			Answers: strings.Join(parts, " · "), Note: h.Note})
	}
	return page, nil
}

// itemIndex is the position of a rubric item, for showing answers in
// rubric order.
func itemIndex(def *rubric.Definition, key string) int {
	for i, it := range def.Items {
		if it.Key == key {
			return i
		}
	}
	return len(def.Items)
}

// gateFirst puts the rubric's safety gate first: within each group its
// items lead, and the groups holding any of them lead the rest, each part
// in the rubric's order. The rubric says which items those are.
func gateFirst(def *rubric.Definition, groups []goldview.Group) []goldview.Group {
	var gated, rest []goldview.Group
	for _, g := range groups {
		byKey := map[string]goldview.Item{}
		keys := make([]string, len(g.Items))
		for i, it := range g.Items {
			byKey[it.Key], keys[i] = it, it.Key
		}
		g.Items = g.Items[:0:0]
		for _, k := range def.GateFirst(keys) {
			g.Items = append(g.Items, byKey[k])
		}
		if len(g.Items) > 0 && g.Items[0].Gate {
			gated = append(gated, g)
		} else {
			rest = append(rest, g)
		}
	}
	return append(gated, rest...)
}

// shortNames are what the chips call the raters: the first word of each
// name (of an email, the part before the @), or the whole name where two
// raters would share the word.
func shortNames(names []string) []string {
	first := func(n string) string {
		n = strings.TrimSpace(n)
		if at := strings.IndexByte(n, '@'); at > 0 {
			n = n[:at]
		}
		if f := strings.Fields(n); len(f) > 0 {
			return f[0]
		}
		return n
	}
	count := map[string]int{}
	for _, n := range names {
		count[first(n)]++
	}
	out := make([]string, len(names))
	for i, n := range names {
		if out[i] = first(n); count[out[i]] > 1 || out[i] == "" {
			out[i] = n
		}
	}
	return out
}
