package reports

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

// drillPageSize is how many items a page of a drill-down lists.
const drillPageSize = 50

// drillURL is the address of a drill-down list with the given query:
// item (the rubric item's key, or @gate or @pass for the engine's safety
// gate or pass, see outcomeItems), a (a rater's id, or "people"), b (a
// rater's id, "people", "gold" or "consensus", the people's consensus
// other than a), and optionally va and vb (one cell of their confusion
// matrix), boundary (k for the boundary k|k+1), na=missing (NA answers
// left out, as the report does when NA is missing) and set=frozen (only
// the items a judge experiment compares on).
func drillURL(projectID int64, q url.Values) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/projects/%d/report/items?%s", projectID, q.Encode()))
}

// drillSide is one side of a drill-down: a rater, the people, their
// consensus or the gold.
type drillSide struct {
	rater     int64
	people    bool
	gold      bool
	consensus bool
	name      string
}

// startLabel writes a side's name at the start of a form's label: a
// phrase of attune's ("the gold") capitalized, a rater's name as it is
// stored, since an email or a name has its own case.
func startLabel(name string, rater bool) string {
	if rater {
		return name
	}
	return kit.Capitalize(name)
}

// readSide reads a or b: a rater of the project by id, "people" (also the
// default) or, where allowed (side b), "gold" or "consensus".
func readSide(field, v string, raters []store.ProjectRater, otherOK bool) (drillSide, error) {
	switch v {
	case "", "people":
		return drillSide{people: true, name: "the people"}, nil
	case "gold":
		if otherOK {
			return drillSide{gold: true, name: "the gold"}, nil
		}
	case "consensus":
		if otherOK {
			return drillSide{consensus: true, name: "the people's consensus"}, nil
		}
	default:
		id, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			for _, r := range raters {
				if r.ID == id {
					return drillSide{rater: id, name: kit.RaterLabel(r.Name, r.Kind, !r.Account)}, nil
				}
			}
		}
	}
	return drillSide{}, attune.Invalid(field, fmt.Sprintf("%q is not a rater of this project", v))
}

// numericBoundaries are the boundaries k|k+1 of an item whose answers,
// NA aside, are whole numbers following each other; none otherwise.
func numericBoundaries(def *rubric.Definition, it *rubric.Item) []int {
	var nums []int
	for _, v := range def.Allowed(it) {
		if v == rubric.NA {
			continue
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return nil
		}
		nums = append(nums, n)
	}
	var out []int
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			return nil
		}
		out = append(out, nums[i-1])
	}
	return out
}

// drillScope is what narrows a drill-down besides its two sides and their
// answers: NA left out (na=missing) and the experiment's frozen items
// (set=frozen). Links carry it so that a list counts what its figure did.
type drillScope struct {
	naMissing bool
	frozen    bool
}

// readDrillScope reads na and set from a drill-down's query.
func readDrillScope(q url.Values) (drillScope, error) {
	var sc drillScope
	switch v := q.Get("na"); v {
	case "", "category":
	case "missing":
		sc.naMissing = true
	default:
		return sc, attune.Invalid("na", fmt.Sprintf("%q is neither category nor missing", v))
	}
	switch v := q.Get("set"); v {
	case "":
	case "frozen":
		sc.frozen = true
	default:
		return sc, attune.Invalid("set", fmt.Sprintf("%q is not a set of items; the one there is, is frozen", v))
	}
	return sc, nil
}

// set writes the scope into a drill-down's query.
func (sc drillScope) set(v url.Values) url.Values {
	if sc.naMissing {
		v.Set("na", "missing")
	}
	if sc.frozen {
		v.Set("set", "frozen")
	}
	return v
}

// hidden is the scope as the drill-down form's hidden fields.
func (sc drillScope) hidden() []rview.Hidden {
	var h []rview.Hidden
	for k, vs := range sc.set(url.Values{}) {
		h = append(h, rview.Hidden{Name: k, Value: vs[0]})
	}
	slices.SortFunc(h, func(a, b rview.Hidden) int { return strings.Compare(a.Name, b.Name) })
	return h
}

// sentence says how the scope narrows the list, or "".
func (sc drillScope) sentence() string {
	var s string
	if sc.frozen {
		s += " Only the items a judge experiment compares on: those with gold answers and at least two people's."
	}
	if sc.naMissing {
		s += " NA answers are left out, as missing."
	}
	return s
}

// ReportItems lists the items behind a figure of the report (see
// drillURL), a page at a time, each with its dialogue and every rater's
// answer, rationale and, for a judge, its method and raw reply.
func (s *Handler) ReportItems(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		if errors.Is(err, attune.ErrForbidden) {
			return attune.Forbidden("Only a lead of this project can read its agreement report.")
		}
		return err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	raters, err := s.DB.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	key := q.Get("item")
	if key == "" && len(def.Items) > 0 {
		key = def.Items[0].Key
	}
	scope, err := readDrillScope(q)
	if err != nil {
		return err
	}
	a, err := readSide("a", q.Get("a"), raters, false)
	if err != nil {
		return err
	}
	b, err := readSide("b", q.Get("b"), raters, true)
	if err != nil {
		return err
	}
	if a.rater != 0 && a.rater == b.rater {
		return attune.Invalid("b", "choose two different raters")
	}
	if _, isOutcome := outcomeKinds[key]; isOutcome {
		if b.consensus {
			return attune.Invalid("b", "the engine's outputs compare with the people's majority: choose people")
		}
		return s.outcomeItems(w, r, p, def, raters, key, a, b, scope)
	}
	it, ok := def.Item(key)
	if !ok {
		return attune.Invalid("item", fmt.Sprintf("%q is not an item of the rubric %s", key, p.RubricRef))
	}
	switch {
	case a.people && (b.rater != 0 || b.consensus):
		return attune.Invalid("a", "put the rater first: a is the rater, b the people, their consensus or the gold")
	}
	f := store.DrillFilter{Key: key, A: a.rater, B: b.rater, Gold: b.gold, ValueA: q.Get("va"), ValueB: q.Get("vb"),
		NAMissing: scope.naMissing, Frozen: scope.frozen, Limit: drillPageSize}
	if b.consensus {
		f.Consensus, f.Median = true, report.NumericScale(def, it, scope.naMissing)
	}
	for field, v := range map[string]string{"va": f.ValueA, "vb": f.ValueB} {
		if v != "" && !def.Allows(it, rubric.Value(v)) {
			return attune.Invalid(field, fmt.Sprintf("%q is not an answer of %s", v, key))
		}
	}
	switch q.Get("fails") {
	case "":
	case "1":
		for _, v := range def.Allowed(it) {
			if def.Fails(it, v) {
				f.Failing = append(f.Failing, string(v))
			}
		}
		if len(f.Failing) == 0 {
			return attune.Invalid("fails", fmt.Sprintf("no answer of %s fails, so none carries turns", key))
		}
	default:
		return attune.Invalid("fails", "give 1 to list the items both sides call failing, or leave it out")
	}
	boundaries := numericBoundaries(def, it)
	if v := q.Get("boundary"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(boundaries, k) {
			return attune.Invalid("boundary", fmt.Sprintf("%q is not a boundary of %s's scale", v, key))
		}
		f.Boundary = k
	}
	if v := q.Get("after"); v != "" {
		if f.After, err = strconv.ParseInt(v, 10, 64); err != nil || f.After < 0 {
			return attune.Invalid("after", "give the item to list after by its number")
		}
	}
	res, err := s.DB.DrillItems(ctx, p.ID, f)
	if err != nil {
		return err
	}

	base := scope.set(url.Values{"item": {key}, "a": {q.Get("a")}, "b": {q.Get("b")}})
	for _, k := range []string{"va", "vb", "boundary", "fails"} {
		if v := q.Get(k); v != "" {
			base.Set(k, v)
		}
	}
	title := a.name + " against " + b.name
	bName := b.name
	if a.people && b.people {
		title, bName = "the people among themselves", "another person"
	}
	page := rview.DrillPage{
		Chrome:      s.Chrome(r, key+" · "+title, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)),
		ReportURL: templ.SafeURL(string(reportURL(p.ID, url.Values{"item": {key}})) + "#item"),
		Key:       key, Label: it.Label, Title: title,
		Filter: drillSentence(a.name, bName, f) + scope.sentence(),
	}
	if a.rater != 0 && b.rater != 0 {
		// The pair's confusion matrix, one click back.
		page.ConfusionURL = templ.SafeURL(string(reportURL(p.ID, url.Values{"item": {key}, "a": {q.Get("a")}, "b": {q.Get("b")}})) + "#item")
	}
	if f.Boundary > 0 {
		for _, g := range it.BoundaryGuidance(rubric.Value(strconv.Itoa(f.Boundary)), rubric.Value(strconv.Itoa(f.Boundary+1))) {
			page.Guidance = append(page.Guidance, rview.Guidance{Title: g.Title, Text: g.Text})
		}
	}
	page.Form = rview.DrillForm{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/report/items", p.ID)),
		Hidden: append(failsHidden(f.Failing, []rview.Hidden{{Name: "item", Value: key}, {Name: "a", Value: q.Get("a")}, {Name: "b", Value: q.Get("b")}}), scope.hidden()...),
		SideA:  startLabel(a.name, a.rater != 0), SideB: startLabel(bName, b.rater != 0 && !(a.people && b.people))}
	answers := []rview.Option{{Value: "", Label: "any answer"}}
	for _, v := range def.Allowed(it) {
		answers = append(answers, rview.Option{Value: string(v), Label: string(v)})
	}
	page.Form.ValueA = selected(answers, f.ValueA)
	page.Form.ValueB = selected(answers, f.ValueB)
	if len(boundaries) > 0 {
		opts := []rview.Option{{Value: "", Label: "any"}}
		for _, k := range boundaries {
			opts = append(opts, rview.Option{Value: strconv.Itoa(k), Label: fmt.Sprintf("%d|%d", k, k+1)})
		}
		page.Form.Boundary = selected(opts, q.Get("boundary"))
	}

	for _, d := range res.Items {
		row := rview.DrillItem{SourceID: d.SourceID, ItemURL: templ.SafeURL(kit.BrowseItemPath(p.ID, d.ItemID))}
		for _, m := range d.Messages {
			row.Dialogue = append(row.Dialogue, rview.Turn{Role: m.Role, Content: m.Content})
		}
		var sideA, sideB []string
		for _, l := range d.Labels {
			dl := rview.DrillLabel{Rater: kit.RaterLabel(l.Name, l.Kind, l.Imported), Value: l.Value, Rationale: l.Rationale, Judge: l.Kind == "judge"}
			if dl.Judge {
				dl.Method, dl.Raw = l.Method, l.Raw
				if dl.Method == "" {
					dl.Method = "imported"
				}
			}
			switch {
			case l.RaterID == a.rater || a.people && l.Kind == "human":
				dl.Side = "A"
				sideA = append(sideA, l.Value)
			case l.RaterID == b.rater || (b.people || b.consensus) && l.Kind == "human":
				dl.Side = "B"
				sideB = append(sideB, l.Value)
			}
			row.Labels = append(row.Labels, dl)
		}
		row.Evidence = turnGrid(def, it, d)
		if d.Gold != "" {
			row.Gold = d.Gold + " (" + d.GoldMethod + ")"
			if b.gold {
				sideB = append(sideB, d.Gold)
			}
		}
		switch {
		case a.people && b.people:
			row.Summary = "people: " + strings.Join(sideA, ", ")
		case b.consensus:
			row.Summary = fmt.Sprintf("%s: %s · the people: %s", a.name, strings.Join(sideA, ", "), strings.Join(sideB, ", "))
		default:
			row.Summary = fmt.Sprintf("%s: %s · %s: %s", a.name, strings.Join(sideA, ", "), b.name, strings.Join(sideB, ", "))
		}
		page.Items = append(page.Items, row)
	}
	if f.After > 0 {
		page.FirstURL = drillURL(p.ID, base)
	}
	if res.Next > 0 {
		next := url.Values{}
		for k, v := range base {
			next[k] = v
		}
		next.Set("after", strconv.FormatInt(res.Next, 10))
		page.More, page.NextURL = true, drillURL(p.ID, next)
	}
	s.Render(w, r, http.StatusOK, rview.Drill(page))
	return nil
}

// failsHidden keeps fails=1 in the drill-down form, so that narrowing the
// answers keeps to the failing ones.
func failsHidden(failing []string, h []rview.Hidden) []rview.Hidden {
	if len(failing) > 0 {
		h = append(h, rview.Hidden{Name: "fails", Value: "1"})
	}
	return h
}

// turnGrid sets an item's dialogue turn by turn beside the turns each
// rater with a failing answer marked, numbered as the workspace numbers
// them (dataset.TurnNumbers); nil when none of them marked a turn.
func turnGrid(def *rubric.Definition, it *rubric.Item, d store.DrillItem) *rview.TurnGrid {
	g := &rview.TurnGrid{}
	var marks []map[int]bool
	markedAny := false
	for _, l := range d.Labels {
		if !def.Fails(it, rubric.Value(l.Value)) {
			continue
		}
		r := rview.GridRater{Rater: kit.RaterLabel(l.Name, l.Kind, l.Imported), Value: l.Value, Turns: "none marked"}
		m := map[int]bool{}
		if len(l.Evidence) > 0 {
			r.Turns, markedAny = "turns "+labeling.TurnsText(l.Evidence), true
			if len(l.Evidence) == 1 {
				r.Turns = "turn " + labeling.TurnsText(l.Evidence)
			}
		}
		for _, t := range l.Evidence {
			m[t] = true
		}
		g.Raters = append(g.Raters, r)
		marks = append(marks, m)
	}
	if !markedAny {
		return nil
	}
	roles := make([]dataset.Message, len(d.Messages))
	for i, m := range d.Messages {
		roles[i] = dataset.Message{Role: m.Role}
	}
	for i, n := range dataset.TurnNumbers(roles) {
		msg := rview.Turn{Role: d.Messages[i].Role, Content: d.Messages[i].Content}
		if k := len(g.Rows) - 1; k >= 0 && n > 0 && g.Rows[k].Turn == n {
			g.Rows[k].Messages = append(g.Rows[k].Messages, msg)
			continue
		}
		row := rview.GridTurn{Turn: n, Messages: []rview.Turn{msg}, Marked: make([]bool, len(marks))}
		for c, m := range marks {
			row.Marked[c] = n > 0 && m[n]
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// drillSentence says which items a drill-down lists.
func drillSentence(a, b string, f store.DrillFilter) string {
	var s string
	if len(f.Failing) > 0 {
		s = fmt.Sprintf("Items where %s and %s both gave a failing answer (%s)", a, b, strings.Join(f.Failing, ", "))
		if f.ValueA != "" {
			s += fmt.Sprintf(", %s answering %s", a, f.ValueA)
		}
		if f.ValueB != "" {
			s += fmt.Sprintf(", %s answering %s", b, f.ValueB)
		}
	} else if f.ValueA != "" && f.ValueB != "" {
		s = fmt.Sprintf("Items where %s answered %s and %s answered %s", a, f.ValueA, b, f.ValueB)
	} else {
		s = fmt.Sprintf("Items where %s and %s answered differently", a, b)
		if f.ValueA != "" {
			s += fmt.Sprintf(", %s answering %s", a, f.ValueA)
		}
		if f.ValueB != "" {
			s += fmt.Sprintf(", %s answering %s", b, f.ValueB)
		}
	}
	if f.Boundary > 0 {
		s += fmt.Sprintf(", across the boundary %d|%d (one answered %d or lower, the other %d or higher)", f.Boundary, f.Boundary+1, f.Boundary, f.Boundary+1)
	}
	switch {
	case f.Consensus && f.Median:
		s += ". The people's consensus is their median answer (the lower middle one of an even number), where at least two answered"
	case f.Consensus:
		s += ". The people's consensus is the one answer most of them gave; an item where two answers tie, or fewer than two people answered, has none"
	}
	return s + "."
}

// selected returns a copy of opts with the option whose value is v marked.
func selected(opts []rview.Option, v string) []rview.Option {
	opts = slices.Clone(opts)
	for i := range opts {
		opts[i].Selected = opts[i].Value == v
	}
	return opts
}
