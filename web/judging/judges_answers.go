package judging

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// runItemsPerPage is how many items a page of a run's answers lists.
const runItemsPerPage = 50

// RunItems lists a run's items with the judge's answers, a page at a time;
// ?errors=1 keeps the items with an ERROR answer.
func (s *Handler) RunItems(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	errorsOnly := q.Get("errors") == "1"
	pageNo, err := strconv.Atoi(q.Get("page"))
	if err != nil || pageNo < 1 {
		pageNo = 1
	}
	// Past the last page is an empty page, not an overflowing offset.
	pageNo = min(pageNo, runs.MaxItems/runItemsPerPage+1)
	offset := (pageNo - 1) * runItemsPerPage
	items, total, err := s.DB.ListRunItems(ctx, run, store.RunItemFilter{ErrorsOnly: errorsOnly, Offset: offset, Limit: runItemsPerPage})
	if err != nil {
		return err
	}
	base := runPath(p.ID, run.ID)
	list := func(page int, errs bool) templ.SafeURL {
		v := url.Values{}
		if errs {
			v.Set("errors", "1")
		}
		if page > 1 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return templ.SafeURL(base + "/items")
		}
		return templ.SafeURL(base + "/items?" + v.Encode())
	}
	page := judgeview.ItemsPage{
		Chrome:      s.Chrome(r, fmt.Sprintf("Answers · run %d", run.ID), "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), RunURL: templ.SafeURL(base), RunID: run.ID,
		JudgeName: run.JudgeName, ErrorsOnly: errorsOnly, AllURL: list(1, false), ErrorsURL: list(1, true), Total: total,
	}
	for _, it := range def.Items {
		page.Keys = append(page.Keys, it.Key)
	}
	for _, it := range items {
		row := judgeview.ItemRow{
			URL: templ.SafeURL(fmt.Sprintf("%s/items/%d", base, it.ItemID)), SourceID: it.SourceID, Answered: it.Answered,
			Errors: it.Errors, Calls: it.Calls, Cost: usd(it.CostUSD),
		}
		for _, k := range page.Keys {
			row.Values = append(row.Values, it.Values[k])
		}
		page.Items = append(page.Items, row)
	}
	if len(items) > 0 {
		page.From, page.To = offset+1, offset+len(items)
	}
	if pageNo > 1 {
		page.PrevURL = list(pageNo-1, errorsOnly)
	}
	if offset+len(items) < total {
		page.NextURL = list(pageNo+1, errorsOnly)
	}
	s.Render(w, r, http.StatusOK, judgeview.Items(page))
	return nil
}

// runItemRead is what is known of one item of a run: the judge's answers
// (the run's rater's), every call the judge made for it, the people's
// answers, the checks a person's answers get applied to the judge's, and
// the engine's result on each answer set — the judge's first (nil before
// it answered), then each person's. The run's item page and the API show
// it.
type runItemRead struct {
	item    *attune.Item
	def     *rubric.Definition
	answers []store.JudgeAnswer
	calls   []store.CallRecord
	people  []store.RaterAnswers
	notes   rubric.Issues
	scores  []*scoring.Result
}

// readRunItem reads the item named in the path for run, of project p.
func (s *Handler) readRunItem(r *http.Request, p *attune.Project, run *attune.JudgeRun) (*runItemRead, error) {
	ctx := r.Context()
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return nil, err
	}
	x := &runItemRead{}
	if x.item, err = s.DB.FindItem(ctx, p.ID, itemID); err != nil {
		return nil, err
	}
	if x.def, err = s.DB.FindRubricByID(ctx, p.RubricVersionID); err != nil {
		return nil, err
	}
	if x.answers, err = s.DB.JudgeItemAnswers(ctx, run.RaterID, x.item.ID); err != nil {
		return nil, err
	}
	if x.calls, err = s.DB.JudgeItemCalls(ctx, run.JudgeID, x.item.ID); err != nil {
		return nil, err
	}
	if x.people, err = s.DB.HumanAnswerSets(ctx, p.ID, x.item.ID); err != nil {
		return nil, err
	}
	facts := labeling.FactsOf(x.item)
	judgeAnswers := x.judgeAnswers()
	// The judge's answers get the checks a person's get on this item, as
	// a judge's (ERROR allowed); a rubric item not answered yet is no note.
	for _, is := range x.def.Validate(kit.ToAnswers(judgeAnswers), facts, rubric.Options{AllowError: true}) {
		if _, answered := judgeAnswers[is.Item]; answered {
			x.notes = append(x.notes, is)
		}
	}
	sets := []map[string]string{judgeAnswers}
	for _, h := range x.people {
		sets = append(sets, h.Answers)
	}
	for i, set := range sets {
		if i == 0 && len(x.answers) == 0 {
			// Scoring no answers would show a judge that failed every
			// check, when it has simply not been asked yet.
			x.scores = append(x.scores, nil)
			continue
		}
		res, err := scoring.Score(x.def, kit.ToAnswers(set), facts)
		if err != nil {
			return nil, err
		}
		x.scores = append(x.scores, &res)
	}
	return x, nil
}

// judgeAnswers are the judge's values by rubric item key.
func (x *runItemRead) judgeAnswers() map[string]string {
	out := map[string]string{}
	for _, a := range x.answers {
		out[a.Key] = a.Value
	}
	return out
}

// RunItem shows a judge's answers for one item — how each was reached and
// every call it made — beside the people's, each answer set scored by the
// same engine with the item's facts.
func (s *Handler) RunItem(w http.ResponseWriter, r *http.Request) error {
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	x, err := s.readRunItem(r, p, run)
	if err != nil {
		return err
	}
	item, def := x.item, x.def
	base := runPath(p.ID, run.ID)
	page := judgeview.ItemPage{
		Chrome:      s.Chrome(r, run.JudgeName+" on "+item.SourceID, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), RunURL: templ.SafeURL(base),
		ItemsURL: templ.SafeURL(base + "/items"), RunID: run.ID, JudgeName: run.JudgeName, SourceID: item.SourceID,
	}
	for _, m := range item.Messages {
		page.Dialogue = append(page.Dialogue, judgeview.Message{Role: m.Role, Content: m.Content})
	}

	byKey := map[string]store.JudgeAnswer{}
	for _, a := range x.answers {
		byKey[a.Key] = a
	}
	for _, it := range def.Items {
		a, ok := byKey[it.Key]
		if !ok {
			continue
		}
		method, reasked := methodOf(a.Method)
		v := judgeview.Answer{
			Key: a.Key, Label: itemLabel(def, a.Key), Value: a.Value, Method: method, Reasked: reasked,
			Distribution: shares(def, a.Distribution), Rationale: a.Rationale, PromptHash: a.PromptHash, Raw: a.Raw,
			Reason: a.Reason,
		}
		if a.WeightedScore != nil {
			v.Weighted = fmt.Sprintf("%.2f", *a.WeightedScore)
		}
		if len(a.Samples) > 0 {
			v.Samples = strings.Join(a.Samples, ", ")
			if a.Spread != nil {
				v.Spread = num(*a.Spread)
			}
		}
		if a.RunID != run.ID {
			v.OtherRun = fmt.Sprintf("run %d", a.RunID)
		}
		page.Answers = append(page.Answers, v)
	}
	for _, is := range x.notes {
		page.Notes = append(page.Notes, judgeview.Note{Severity: string(is.Severity), Message: is.Message})
	}

	judgeAnswers := x.judgeAnswers()
	sets := []map[string]string{judgeAnswers}
	page.Compare.Raters = []string{run.JudgeName + " (judge)"}
	for _, h := range x.people {
		sets = append(sets, h.Answers)
		page.Compare.Raters = append(page.Compare.Raters, h.Name)
	}
	for _, it := range def.Items {
		row := judgeview.CompareRow{Key: it.Key, Label: itemLabel(def, it.Key)}
		for i, set := range sets {
			v := set[it.Key]
			row.Differ = append(row.Differ, i > 0 && v != "" && judgeAnswers[it.Key] != "" && v != judgeAnswers[it.Key])
			if v == "" {
				v = "—"
			}
			row.Values = append(row.Values, v)
		}
		page.Compare.Rows = append(page.Compare.Rows, row)
	}
	for _, res := range x.scores {
		if res == nil {
			page.Compare.Score = append(page.Compare.Score, "—")
			page.Compare.Pass = append(page.Compare.Pass, "—")
			page.Compare.Gate = append(page.Compare.Gate, "—")
			page.Compare.Failed = append(page.Compare.Failed, "—")
			continue
		}
		score, pass, gate, failed := engineCells(def, *res)
		page.Compare.Score = append(page.Compare.Score, score)
		page.Compare.Pass = append(page.Compare.Pass, pass)
		page.Compare.Gate = append(page.Compare.Gate, gate)
		page.Compare.Failed = append(page.Compare.Failed, failed)
	}

	for _, c := range x.calls {
		page.Calls = append(page.Calls, judgeview.Call{
			ID: c.ID, Run: c.RunID, RubricItem: c.RubricItemKey, Sample: c.Sample, Reask: c.Reask, OK: c.OK, Raw: c.Raw, Error: c.Error,
			Tokens: kit.Tokens(int64(c.InputTokens), int64(c.CachedTokens), int64(c.OutputTokens)), Cost: usd(c.CostUSD),
			Latency: fmt.Sprintf("%d ms", c.Latency.Milliseconds()), At: c.At.UTC().Format("2006-01-02 15:04:05 UTC"),
		})
	}
	s.Render(w, r, http.StatusOK, judgeview.Item(page))
	return nil
}

// engineCells writes the engine's result for one answer set: the score,
// pass, the safety gate and the failed checks ("—" where the rubric's kind
// has none).
func engineCells(def *rubric.Definition, res scoring.Result) (score, pass, gate, failed string) {
	score, pass, gate, failed = "—", "—", "—", "none"
	if res.Score != nil {
		score = num(*res.Score)
		if def.Kind == rubric.Criteria {
			score = fmt.Sprintf("%.3f", *res.Score)
		}
	}
	if res.Pass != nil {
		pass = "fail"
		if *res.Pass {
			pass = "pass"
		}
	}
	if def.Kind == rubric.Criteria {
		gate = "passed"
		if res.SafetyGateFailed {
			gate = "failed: " + strings.Join(res.FailedSafety, ", ")
		}
	}
	if len(res.FailedChecks) > 0 {
		failed = strings.Join(res.FailedChecks, ", ")
	}
	return score, pass, gate, failed
}
