package web

import (
	"errors"
	"fmt"
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
	eview "github.com/attune/attune/web/views/experiment"
)

// experimentPage compares judge variants (?judge=name or name@N, repeated;
// every variant with answers when none is named) on the project's frozen
// gold items, side by side per rubric item, with the items behind each
// judge's figures one click away in the report's drill-down.
func (s *Server) experimentPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		if errors.Is(err, attune.ErrForbidden) {
			return attune.Forbidden("Only a lead of this project can run its judge experiments.")
		}
		return err
	}
	def, err := s.rubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	all, err := s.db.ListJudgeVariants(ctx, p.ID)
	if err != nil {
		return err
	}
	picked := r.URL.Query()["judge"]
	var variants []experiment.Variant
	for _, spec := range picked {
		v, err := experiment.ParseVariant(spec)
		if err != nil {
			return attune.Invalid("judge", err.Error())
		}
		variants = append(variants, v)
	}
	if len(picked) == 0 {
		for _, v := range all {
			variants = append(variants, v.Variant)
		}
	}
	page := eview.Page{
		Chrome:      s.chrome(r, "Judge experiment · "+p.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(projectPath(p.ID)), ReportURL: reportURL(p.ID, nil),
		Form: eview.Form{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/experiment", p.ID))},
	}
	for _, v := range all {
		page.Form.Options = append(page.Form.Options, eview.Option{Value: v.String(),
			Label: fmt.Sprintf("%s (%d answer sets)", variantLabel(v.Variant), v.AnswerSets), Checked: slices.Contains(variants, v.Variant)})
	}
	if len(variants) == 0 {
		page.Note = "No judge or prompt version has answered in this project yet: run a judge first."
		s.render(w, r, http.StatusOK, eview.View(page))
		return nil
	}
	in, raters, err := s.db.ExperimentInput(ctx, p.ID, variants)
	if err != nil {
		return err
	}
	if len(in.Items) == 0 {
		page.Note = "No item has gold answers and at least two people's answers yet: adjudicate or apply consensus first."
		s.render(w, r, http.StatusOK, eview.View(page))
		return nil
	}
	in.Def = def
	in.Alt = agreement.AltOptions{Epsilon: p.Epsilon}
	if in.Alt.Epsilon == 0 {
		in.Alt.Epsilon = report.DefaultEpsilon
	}
	in.Bootstrap = report.DefaultBootstrap
	res, err := experiment.Run(in)
	if err != nil {
		return err
	}
	page.Result = experimentView(p.ID, in, raters, res)
	s.render(w, r, http.StatusOK, eview.View(page))
	return nil
}

// variantLabel names a variant for people: "judge · prompt v2".
func variantLabel(v experiment.Variant) string {
	if v.Version > 1 {
		return fmt.Sprintf("%s · prompt v%d", v.Judge, v.Version)
	}
	return v.Judge
}

// experimentView shapes an experiment's result for the page; raters are
// the variants' rater ids, which the drill-down links name.
func experimentView(projectID int64, in experiment.Input, raters []int64, res *experiment.Result) *eview.Result {
	out := &eview.Result{Items: res.Items, Variants: len(res.Variants), Epsilon: strconv.FormatFloat(in.Alt.Epsilon, 'f', -1, 64)}
	if b := in.Bootstrap; b.Replicates > 0 {
		out.Intervals = fmt.Sprintf("Intervals are %.0f%% paired bootstrap intervals over the frozen items (%d replicates, the same resamples for every variant).",
			b.Level*100, b.Replicates)
	}
	rater := func(v int) string { return strconv.FormatInt(raters[v], 10) }
	for _, ri := range res.RubricItems {
		it := eview.RubricItem{Key: ri.Key}
		if d, ok := in.Def.Item(ri.Key); ok {
			it.Label = d.Label
		}
		for v, row := range ri.Variants {
			alt := eview.Alt{Epsilon: strconv.FormatFloat(row.AltTest.Epsilon, 'f', -1, 64), Humans: row.AltTest.Humans, Passed: row.AltTest.Passed,
				WinningRate: experimentFigure(row.AltTest.WinningRate, ""), Advantage: experimentFigure(row.AltTest.AdvantageProbability, "")}
			switch {
			case row.AltTest.WinningRate.Value == nil:
				alt.Verdict = "not tested"
			case row.AltTest.Passed:
				alt.Verdict = "passed"
			default:
				alt.Verdict = "not passed"
			}
			it.Rows = append(it.Rows, eview.ItemRow{Variant: row.Variant, Best: row.Variant == ri.Best, Answered: row.Answered,
				Kappa:     experimentFigure(row.KappaGold, drillURL(projectID, url.Values{"item": {ri.Key}, "a": {rater(v)}, "b": {"gold"}})),
				KappaDiff: experimentFigure(row.KappaDiff, ""), Alt: alt})
		}
		out.RubricItems = append(out.RubricItems, it)
	}
	best := -1
	for v, row := range res.Scores {
		if row.MAE.Value != nil && (best < 0 || *row.MAE.Value < *res.Scores[best].MAE.Value) {
			best = v
		}
	}
	criteria := in.Def.Kind == rubric.Criteria
	for v, row := range res.Scores {
		sr := eview.ScoreRow{Variant: row.Variant, Best: v == best, Misses: len(row.Gate.Misses), GoldFailed: row.Gate.GoldFailed,
			Sensitivity: experimentFigure(row.Gate.Sensitivity, ""), Specificity: experimentFigure(row.Gate.Specificity, ""),
			PassAgreement: experimentFigure(row.PassAgreement, ""), MAE: experimentFigure(row.MAE, ""), MAEDiff: experimentFigure(row.MAEDiff, ""),
			Cost: "—", Latency: "—"}
		if criteria && len(in.Def.Scoring.Gate) > 0 {
			// The misses: gold failed the safety gate, the variant held it.
			sr.MissesURL = drillURL(projectID, url.Values{"item": {"@gate"}, "a": {rater(v)}, "b": {"gold"}, "va": {"held"}, "vb": {"failed"}})
		}
		if criteria && sr.PassAgreement.Reason == "" {
			sr.PassAgreement.URL = drillURL(projectID, url.Values{"item": {"@pass"}, "a": {rater(v)}, "b": {"gold"}})
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
