package reports

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	eview "github.com/attune/attune/web/views/experiment"
)

// ExperimentPage compares judge variants (?judge=name or name@N, repeated;
// every variant with answers when none is named) on the project's frozen
// gold items, side by side per rubric item, with the items behind each
// judge's figures one click away in the report's drill-down.
func (s *Handler) ExperimentPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		if errors.Is(err, attune.ErrForbidden) {
			return attune.Forbidden("Only a lead of this project can run its judge experiments.")
		}
		return err
	}
	x, err := s.experimentOf(r, p)
	if err != nil {
		return err
	}
	page := eview.Page{
		Chrome:      s.Chrome(r, "Judge experiment · "+p.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), ReportURL: reportURL(p.ID, nil),
		Form: eview.Form{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/experiment", p.ID))}, Note: x.note,
	}
	for _, v := range x.all {
		page.Form.Options = append(page.Form.Options, eview.Option{Value: v.String(),
			Label: fmt.Sprintf("%s (%d answer sets)", variantLabel(v.Variant), v.AnswerSets), Checked: slices.Contains(x.variants, v.Variant)})
	}
	if x.result != nil {
		page.Result = experimentView(p.ID, x.in, x.epsilon, x.raters, x.names, x.result)
	}
	s.Render(w, r, http.StatusOK, eview.View(page))
	return nil
}

// experimentRun is an experiment as its page and the API read it: the
// variants that have answered, those compared, and the comparison — or,
// when there is nothing to compare, a note that says why.
type experimentRun struct {
	all      []store.JudgeVariant
	variants []experiment.Variant
	note     string
	in       experiment.Input
	epsilon  float64 // the alt-test's, the project's own or the default
	raters   store.ExperimentRaters
	names    map[int64]string
	result   *experiment.Result
}

// experimentOf runs the experiment the request asks for (?judge=, see
// ExperimentPage) on p's frozen gold items. The input is read anew on
// every request; only its computation is reused, and only for an input
// equal in every answer.
func (s *Handler) experimentOf(r *http.Request, p *attune.Project) (*experimentRun, error) {
	ctx := r.Context()
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	x := &experimentRun{}
	if x.all, err = s.DB.ListJudgeVariants(ctx, p.ID); err != nil {
		return nil, err
	}
	picked := r.URL.Query()["judge"]
	for _, spec := range picked {
		v, err := experiment.ParseVariant(spec)
		if err != nil {
			return nil, attune.Invalid("judge", err.Error())
		}
		x.variants = append(x.variants, v)
	}
	if len(picked) == 0 {
		for _, v := range x.all {
			x.variants = append(x.variants, v.Variant)
		}
	}
	if len(x.variants) == 0 {
		x.note = "No judge or prompt version has answered in this project yet: run a judge first."
		return x, nil
	}
	in, raters, err := s.DB.ExperimentInput(ctx, p.ID, x.variants)
	if err != nil {
		return nil, err
	}
	project, err := s.DB.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	x.names = map[int64]string{}
	for _, r := range project {
		x.names[r.ID] = kit.RaterLabel(r.Name, r.Kind, !r.Account)
	}
	if len(in.Items) == 0 {
		x.note = "No item has gold answers and at least two people's answers yet: adjudicate or apply consensus first."
		return x, nil
	}
	in.Def = def
	// The project's ε is the lead's own setting: an unusual one is used,
	// and marked.
	x.epsilon = p.Epsilon
	if x.epsilon == 0 {
		x.epsilon = report.DefaultEpsilon
	}
	in.Bootstrap = report.DefaultBootstrap
	if x.result, err = s.experiments.Run(in); err != nil {
		return nil, err
	}
	// The alt-test is the report's, on the same items and rules, so that
	// both pages give one answer.
	if x.result, err = report.ExperimentAltTests(ctx, s.DB, p, x.result, raters.Variants, x.epsilon); err != nil {
		return nil, err
	}
	x.in, x.raters = in, raters
	return x, nil
}

// APIExperiment returns the experiment page's comparison (?judge=, as
// there), computed and cached as for the page.
func (s *Handler) APIExperiment(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberLead {
		return 0, nil, attune.Forbidden("only a lead of this project can run its judge experiments")
	}
	x, err := s.experimentOf(r, p)
	if err != nil {
		return 0, nil, err
	}
	type available struct {
		Variant    string `json:"variant"`
		AnswerSets int    `json:"answer_sets"`
	}
	out := struct {
		Available []available `json:"available"`
		Compared  []string    `json:"compared"`
		Note      string      `json:"note"`
		Epsilon   *float64    `json:"epsilon"`
		// Bootstrap says how the intervals were made.
		Bootstrap *struct {
			Replicates int     `json:"replicates"`
			Level      float64 `json:"level"`
		} `json:"bootstrap"`
		Result *experiment.Result `json:"result"`
	}{Available: []available{}, Compared: []string{}, Note: x.note, Result: x.result}
	for _, v := range x.all {
		out.Available = append(out.Available, available{v.String(), v.AnswerSets})
	}
	for _, v := range x.variants {
		out.Compared = append(out.Compared, v.String())
	}
	if x.result != nil {
		eps := x.epsilon
		out.Epsilon = &eps
		if b := x.in.Bootstrap; b.Replicates > 0 {
			out.Bootstrap = &struct {
				Replicates int     `json:"replicates"`
				Level      float64 `json:"level"`
			}{b.Replicates, b.Level}
		}
	}
	return http.StatusOK, out, nil
}

// variantLabel names a variant for people: "judge · prompt v2".
func variantLabel(v experiment.Variant) string {
	if v.Version > 1 {
		return fmt.Sprintf("%s · prompt v%d", v.Judge, v.Version)
	}
	return v.Judge
}

// experimentView shapes an experiment's result for the page; raters are
// the variants' and people's rater ids, which the drill-down links name,
// and names the raters' names as pages write them. Every figure links to
// the frozen items behind it: the alt-test and kappa with a person to the
// items where the variant and the people (or that person) differ, kappa
// with gold to those where it differs from gold, the safety gate's
// figures to its misses and false alarms.
func experimentView(projectID int64, in experiment.Input, epsilon float64, raters store.ExperimentRaters, names map[int64]string, res *experiment.Result) *eview.Result {
	out := &eview.Result{Items: res.Items, Variants: len(res.Variants), Epsilon: strconv.FormatFloat(epsilon, 'f', -1, 64),
		EpsilonUnusual: !agreement.AltEpsilonUsual(epsilon)}
	out.AltItems = "The alternative annotator test is the agreement report's: it runs on every item a variant and at least two people answered, not only on the frozen items, so that both pages give the same answer."
	if b := in.Bootstrap; b.Replicates > 0 {
		out.Intervals = fmt.Sprintf("Kappa with gold and the mean absolute error carry each its own %.0f%% bootstrap interval over the frozen items (%d replicates, the same resamples for every variant). "+
			"A difference from the best carries a simultaneous %.0f%% interval (max-t bootstrap over all pairs of variants): a variant is marked worse only when it excludes 0, "+
			"so the chance that any variant as good as the best is marked worse is at most %.0f%%, however many are compared.",
			b.Level*100, b.Replicates, b.Level*100, (1-b.Level)*100)
	}
	rater := func(v int) string { return strconv.FormatInt(raters.Variants[v], 10) }
	drill := func(key, a, b string, extra ...string) templ.SafeURL {
		v := url.Values{"item": {key}, "a": {a}, "b": {b}, "set": {"frozen"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return drillURL(projectID, v)
	}
	for _, ri := range res.RubricItems {
		it := eview.RubricItem{Key: ri.Key}
		if d, ok := in.Def.Item(ri.Key); ok {
			it.Label = d.Label
		}
		for v, row := range ri.Variants {
			people, gold := drill(ri.Key, rater(v), "people"), drill(ri.Key, rater(v), "gold")
			// The alt-test runs on every item shared with the people, as
			// the report's does, not only on the frozen ones.
			shared := people
			if row.AltTest.Items == "shared" {
				shared = drillURL(projectID, url.Values{"item": {ri.Key}, "a": {rater(v)}, "b": {"people"}})
			}
			alt := eview.Alt{Epsilon: strconv.FormatFloat(row.AltTest.Epsilon, 'f', -1, 64), Humans: row.AltTest.Humans, Passed: row.AltTest.Passed,
				WinningRate: experimentFigure(row.AltTest.WinningRate, shared), Advantage: experimentFigure(row.AltTest.AdvantageProbability, shared),
				URL: shared}
			switch {
			case row.AltTest.Result == string(agreement.AltCannotTell) && row.AltTest.Progress != "":
				alt.Verdict = "cannot tell: " + row.AltTest.Progress
			case row.AltTest.Result == string(agreement.AltCannotTell):
				alt.Verdict = "cannot tell: " + row.AltTest.Reason
			case row.AltTest.Passed && row.AltTest.FewHumans:
				alt.Verdict = fmt.Sprintf("passed, but on %d annotators", row.AltTest.Humans)
			case row.AltTest.Passed:
				alt.Verdict = "passed"
			default:
				alt.Verdict = "failed"
			}
			ir := eview.ItemRow{Variant: row.Variant, Best: row.Variant == ri.Best, Answered: row.Answered,
				Kappa: experimentFigure(row.KappaGold, gold), KappaDiff: experimentFigure(row.KappaDiff, gold),
				VersusBest: row.VersusBest, Alt: alt}
			lo, hi := math.Inf(1), math.Inf(-1)
			for h, pk := range row.KappaPeople {
				person := raters.Humans[h]
				name := names[person]
				if name == "" {
					name = pk.Person
				}
				ir.People = append(ir.People, eview.Person{Name: name, Items: pk.Items,
					Kappa: experimentFigure(pk.Kappa, drill(ri.Key, rater(v), strconv.FormatInt(person, 10)))})
				if pk.Kappa.Value != nil {
					lo, hi = min(lo, *pk.Kappa.Value), max(hi, *pk.Kappa.Value)
				}
			}
			switch {
			case len(ir.People) == 0:
				ir.PeopleRange = "no person"
			case math.IsInf(lo, 1):
				ir.PeopleRange = "undefined"
			case lo == hi:
				ir.PeopleRange = fmt.Sprintf("%.2f", lo)
			default:
				ir.PeopleRange = fmt.Sprintf("%.2f to %.2f", lo, hi)
			}
			it.Rows = append(it.Rows, ir)
		}
		out.RubricItems = append(out.RubricItems, it)
	}
	criteria := in.Def.Kind == rubric.Criteria
	for v, row := range res.Scores {
		sr := eview.ScoreRow{Variant: row.Variant, Best: row.VersusBest == experiment.VerdictBest, VersusBest: row.VersusBest, Misses: len(row.Gate.Misses), GoldFailed: row.Gate.GoldFailed,
			Sensitivity: experimentFigure(row.Gate.Sensitivity, ""), Specificity: experimentFigure(row.Gate.Specificity, ""),
			PassAgreement: experimentFigure(row.PassAgreement, ""), MAE: experimentFigure(row.MAE, ""), MAEDiff: experimentFigure(row.MAEDiff, ""),
			Cost: "—", Latency: "—"}
		if criteria && len(in.Def.Scoring.Gate) > 0 {
			// The misses: gold failed the safety gate, the variant held
			// it; they are what sensitivity falls short by. The false
			// alarms are what specificity falls short by.
			sr.MissesURL = drill("@gate", rater(v), "gold", "va", "held", "vb", "failed")
			sr.Sensitivity.URL = sr.MissesURL
			sr.Specificity.URL = drill("@gate", rater(v), "gold", "va", "failed", "vb", "held")
		}
		if criteria {
			sr.PassAgreement.URL = drill("@pass", rater(v), "gold")
		}
		if row.CostPerItem != nil {
			sr.Cost = fmt.Sprintf("$%.4f", *row.CostPerItem)
			sr.Latency = fmt.Sprintf("%.0f ms", row.LatencyMS)
		}
		out.Scores = append(out.Scores, sr)
	}
	return out
}

// experimentFigure formats a figure of an experiment to two decimals,
// with its interval, linked to url when set.
func experimentFigure(st experiment.Stat, u templ.SafeURL) eview.Figure {
	if st.Value == nil {
		if st.Reason == "" {
			st.Reason = "undefined"
		}
		return eview.Figure{Reason: st.Reason}
	}
	f := eview.Figure{Value: fmt.Sprintf("%.2f", *st.Value), URL: u}
	if st.Lower != nil && st.Upper != nil {
		f.Interval = fmt.Sprintf("%.2f–%.2f", *st.Lower, *st.Upper)
	}
	return f
}
