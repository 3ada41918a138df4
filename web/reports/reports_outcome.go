package reports

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

// drillScan bounds the items one page of an outcome drill-down scores: a
// page ends there even with fewer matches, and the next goes on from it.
const drillScan = 2000

// outcomeKind is an engine output a drill-down lists by: what the engine
// makes of a rater's whole answer set.
type outcomeKind struct {
	name     string // for sentences
	yes, no  string // the two outcomes, as the query and the page write them
	positive func(scoring.Result) bool
}

// outcomeKinds are the outputs by their item parameter.
var outcomeKinds = map[string]outcomeKind{
	"@gate": {"the safety gate", "failed", "held", func(r scoring.Result) bool { return r.SafetyGateFailed }},
	"@pass": {"pass or fail", "pass", "fail", func(r scoring.Result) bool { return r.Pass != nil && *r.Pass }},
}

// errScanned stops the stream of answer sets once a page has enough.
var errScanned = errors.New("scanned enough")

// outcomeItems lists the items where a rater's engine outcome (safety
// gate or pass) differs from the people's majority, another rater's or
// the gold's, or falls in one cell of theirs, with every rater's outcome
// and failed safety checks. Only complete answer sets are scored, as in
// the report; an item without a majority among the people is left out.
// With the frozen scope, only the items a judge experiment compares on.
func (s *Handler) outcomeItems(w http.ResponseWriter, r *http.Request, p *attune.Project, def *rubric.Definition,
	raters []store.ProjectRater, key string, a, b drillSide, scope drillScope) error {
	ctx := r.Context()
	kind := outcomeKinds[key]
	q := r.URL.Query()
	if def.Kind != rubric.Criteria {
		return attune.Invalid("item", "the safety gate and pass or fail are a criteria rubric's; this project's rubric scores 1–5")
	}
	if a.rater == 0 {
		return attune.Invalid("a", "choose the rater whose outcomes to list")
	}
	va, vb := q.Get("va"), q.Get("vb")
	for field, v := range map[string]string{"va": va, "vb": vb} {
		if v != "" && v != kind.yes && v != kind.no {
			return attune.Invalid(field, fmt.Sprintf("%s is %s or %s", kind.name, kind.yes, kind.no))
		}
	}
	var after int64
	if v := q.Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return attune.Invalid("after", "give the item to list after by its number")
		}
	}
	names := map[int64]string{}
	humans := map[int64]bool{}
	for _, x := range raters {
		names[x.ID] = kit.RaterLabel(x.Name, x.Kind, !x.Account)
		humans[x.ID] = x.Kind == "human"
	}
	// outcome scores one answer set; ok is false for an incomplete one.
	outcome := func(ans map[string]string) (string, []string, bool) {
		for _, it := range def.Items {
			if _, has := ans[it.Key]; !has {
				return "", nil, false
			}
		}
		res, err := scoring.Score(def, kit.ToAnswers(ans), rubric.Facts{})
		if err != nil {
			return "", nil, false
		}
		if kind.positive(res) {
			return kind.yes, res.FailedSafety, true
		}
		return kind.no, res.FailedSafety, true
	}

	// Read the answer sets of the next items, a bounded number of them.
	type scanned struct {
		id   int64
		sets map[int64]map[string]string
	}
	var items []scanned
	err := s.DB.StreamAnswerSets(ctx, p.ID, store.AgreementFilter{MinItemID: after + 1}, func(as *store.AnswerSetLabels) error {
		if len(items) == 0 || items[len(items)-1].id != as.ItemID {
			if len(items) == drillScan {
				return errScanned
			}
			items = append(items, scanned{id: as.ItemID, sets: map[int64]map[string]string{}})
		}
		set := map[string]string{}
		for _, l := range as.Labels {
			set[l.Key] = l.Value
		}
		items[len(items)-1].sets[as.RaterID] = set
		return nil
	})
	full := errors.Is(err, errScanned)
	if err != nil && !full {
		return err
	}
	var gold map[int64]map[string]string
	if b.gold && len(items) > 0 {
		if gold, err = s.DB.GoldSets(ctx, p.ID, items[0].id, items[len(items)-1].id); err != nil {
			return err
		}
	}
	var frozen map[int64]bool
	if scope.frozen && len(items) > 0 {
		if frozen, err = s.DB.FrozenItems(ctx, p.ID, items[0].id, items[len(items)-1].id); err != nil {
			return err
		}
	}
	type match struct {
		id       int64
		aOut, bs string
		sets     map[int64]map[string]string
	}
	var matches []match
	var last int64
	for _, it := range items {
		if len(matches) > drillPageSize {
			break
		}
		last = it.id
		if scope.frozen && !frozen[it.id] {
			continue
		}
		aOut, _, ok := outcome(it.sets[a.rater])
		if !ok {
			continue
		}
		var bOut string
		switch {
		case b.gold:
			if bOut, _, ok = outcome(gold[it.id]); !ok {
				continue
			}
		case b.rater != 0:
			if bOut, _, ok = outcome(it.sets[b.rater]); !ok {
				continue
			}
		default:
			yes, no := 0, 0
			for id, set := range it.sets {
				if id == a.rater || !humans[id] {
					continue
				}
				if o, _, ok := outcome(set); ok && o == kind.yes {
					yes++
				} else if ok {
					no++
				}
			}
			switch {
			case yes > no:
				bOut = kind.yes
			case no > yes:
				bOut = kind.no
			default:
				continue
			}
		}
		keep := aOut != bOut
		if va != "" && vb != "" {
			keep = aOut == va && bOut == vb
		} else if (va != "" && aOut != va) || (vb != "" && bOut != vb) {
			keep = false
		}
		if keep {
			matches = append(matches, match{it.id, aOut, bOut, it.sets})
		}
	}
	more := full || len(matches) > drillPageSize
	if len(matches) > drillPageSize {
		matches = matches[:drillPageSize]
		last = matches[len(matches)-1].id
	}

	bName := b.name
	if b.people {
		bName = "the people's majority"
	}
	page := rview.DrillPage{
		Chrome:      s.Chrome(r, kind.name+" · "+a.name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)),
		ReportURL: templ.SafeURL(string(reportURL(p.ID, nil)) + "#engine"),
		Key:       key, Label: "What the scoring engine makes of each rater's answers: " + kind.name + ".",
		Title: a.name + " against " + bName,
	}
	if va != "" && vb != "" {
		page.Filter = fmt.Sprintf("Items where %s for %s and %s for %s.", kind.name+" is "+va, a.name, kind.name+" is "+vb, bName)
	} else {
		page.Filter = fmt.Sprintf("Items where %s and %s differ on %s.", a.name, bName, kind.name)
	}
	page.Filter += scope.sentence()
	opts := []rview.Option{{Value: "", Label: "either"}, {Value: kind.yes, Label: kind.yes}, {Value: kind.no, Label: kind.no}}
	page.Form = rview.DrillForm{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/report/items", p.ID)),
		Hidden: append([]rview.Hidden{{Name: "item", Value: key}, {Name: "a", Value: q.Get("a")}, {Name: "b", Value: q.Get("b")}}, scope.hidden()...),
		SideA:  startLabel(a.name, a.rater != 0), SideB: startLabel(bName, b.rater != 0 && bName == b.name), ValueA: selected(opts, va), ValueB: selected(opts, vb)}
	ids := make([]int64, len(matches))
	for i, m := range matches {
		ids[i] = m.id
	}
	dialogues, err := s.DB.DrillDialogues(ctx, p.ID, ids)
	if err != nil {
		return err
	}
	for i, d := range dialogues {
		m := matches[i]
		row := rview.DrillItem{SourceID: d.SourceID, ItemURL: templ.SafeURL(kit.BrowseItemPath(p.ID, d.ItemID)), Summary: fmt.Sprintf("%s: %s · %s: %s", a.name, m.aOut, bName, m.bs)}
		for _, t := range d.Messages {
			row.Dialogue = append(row.Dialogue, rview.Turn{Role: t.Role, Content: t.Content})
		}
		for _, x := range raters {
			set, has := m.sets[x.ID]
			if !has {
				continue
			}
			dl := rview.DrillLabel{Rater: names[x.ID], Value: "incomplete answers: not scored", Judge: x.Kind == "judge"}
			if o, failed, ok := outcome(set); ok {
				dl.Value = o
				if len(failed) > 0 {
					dl.Rationale = "failed safety checks: " + strings.Join(failed, ", ")
				}
			}
			if x.ID == a.rater {
				dl.Side = "A"
			}
			row.Labels = append(row.Labels, dl)
		}
		if b.gold {
			if o, failed, ok := outcome(gold[m.id]); ok {
				row.Gold = o
				if len(failed) > 0 {
					row.Gold += " (failed safety checks: " + strings.Join(failed, ", ") + ")"
				}
			}
		}
		page.Items = append(page.Items, row)
	}
	base := scope.set(url.Values{"item": {key}, "a": {q.Get("a")}, "b": {q.Get("b")}})
	for _, k := range []string{"va", "vb"} {
		if v := q.Get(k); v != "" {
			base.Set(k, v)
		}
	}
	if after > 0 {
		page.FirstURL = drillURL(p.ID, base)
	}
	if more && last > 0 {
		next := url.Values{}
		for k, v := range base {
			next[k] = v
		}
		next.Set("after", strconv.FormatInt(last, 10))
		page.More, page.NextURL = true, drillURL(p.ID, next)
	}
	s.Render(w, r, http.StatusOK, rview.Drill(page))
	return nil
}
