package reports

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

// summaryColumns are the figures of the summary table, in order.
var summaryColumns = []struct{ key, name string }{
	{"percent_agreement", "Observed agreement"},
	{"krippendorff_alpha", "Krippendorff's α"},
	{"fleiss_kappa", "Fleiss' κ"},
	{"lights_kappa", "Light's κ"},
	{"gwet_ac1", "Gwet's AC1"},
	{"gwet_ac2", "Gwet's AC2"},
}

// reportView shapes a report as the page shows it: numbers written out,
// colours chosen, links made.
func (s *Handler) reportView(r *http.Request, p *attune.Project, rr *reportRequest, rep *report.Report) rview.Page {
	q := r.URL.Query()
	names := map[int64]string{}
	for _, x := range rep.Raters {
		names[x.ID] = kit.RaterLabel(x.Name, x.Kind, x.Imported)
	}
	explain := map[string]string{}
	for _, d := range rep.Definitions {
		explain[d.Key] = d.Sentence
	}
	// The rubric item shown in depth: the one asked for, or the first.
	cur := 0
	for i, it := range rep.RubricItems {
		if it.Key == q.Get("item") {
			cur = i
		}
	}
	with := func(extra ...string) url.Values {
		v := url.Values{}
		for k, vs := range rr.query {
			v[k] = append([]string(nil), vs...)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	// drill links a figure to the items behind it, NA left out where the
	// report leaves it out. a and b are as drillURL takes them.
	scope := drillScope{naMissing: rr.filters.NAMissing}
	drill := func(key, a, b string, extra ...string) templ.SafeURL {
		v := scope.set(url.Values{"item": {key}, "a": {a}, "b": {b}})
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return drillURL(p.ID, v)
	}
	id := func(rater int64) string { return strconv.FormatInt(rater, 10) }
	page := rview.Page{
		Chrome:        s.Chrome(r, "Agreement · "+p.Name, "home"),
		ProjectName:   p.Name,
		ProjectURL:    templ.SafeURL(kit.ProjectPath(p.ID)),
		Rubric:        rep.Project.Rubric,
		NANote:        rep.NANote,
		JSONURL:       templ.SafeURL(reportPath(p.ID) + ".json" + reportQuery(rr.query)),
		ExperimentURL: templ.SafeURL(fmt.Sprintf("/projects/%d/experiment", p.ID)),
		SystemsURL:    templ.SafeURL(fmt.Sprintf("/projects/%d/systems", p.ID)),
		FailuresURL:   templ.SafeURL(fmt.Sprintf("/projects/%d/failures", p.ID)),
		TrustURL:      templ.SafeURL(fmt.Sprintf("/projects/%d/trust", p.ID)),
		CSVURL:        templ.SafeURL(reportPath(p.ID) + ".csv" + reportQuery(rr.query)),
		Filters:       rr.filters,
		Import:        labelsImportForm(p.ID),
		ReadFrom:      rr.readFrom,
	}
	if b := rep.Bootstrap; b.Replicates > 0 {
		page.Intervals = fmt.Sprintf("Intervals are %.0f%% bootstrap intervals over items (%d replicates, fixed seed): BCa (bias-corrected and accelerated) at a level widened for the number of items, joined with the jackknife interval on Fisher's z scale. A figure no resample of the items moves, as when no item shows a disagreement, gets none.", b.Level*100, b.Replicates)
	} else {
		page.Intervals = "No intervals were computed."
	}
	for _, d := range rep.Definitions {
		page.Definitions = append(page.Definitions, rview.Explained{Key: d.Key, Name: d.Name, Sentence: d.Sentence})
	}
	for _, c := range summaryColumns {
		page.Columns = append(page.Columns, rview.Column{Key: c.key, Name: c.name, Explain: explain[c.key]})
	}
	for _, c := range rep.Calibration {
		row := rview.CalibrationRow{Rater: kit.RaterLabel(c.Name, c.Kind, false), N: c.N,
			Accuracy: strconv.FormatFloat(100*c.Accuracy, 'f', 0, 64) + "%",
			Leniency: reportSigned(report.Stat{Value: c.Leniency, Reason: "no 1–5 rubric item"}), DriftingOn: strings.Join(c.DriftingOn, ", ")}
		var runs, steps []string
		for _, pt := range c.Runs {
			runs = append(runs, strconv.FormatFloat(100*pt.Accuracy, 'f', 0, 64)+"%")
		}
		for _, pt := range c.StepAt {
			steps = append(steps, fmt.Sprintf("run %d (%s)", pt.Run, pt.At.UTC().Format("2006-01-02")))
		}
		row.Runs, row.Steps = strings.Join(runs, ", "), strings.Join(steps, ", ")
		row.CannotTell = cannotTell(c.Runs)
		page.Calibration = append(page.Calibration, row)
	}
	page.Empty = true
	for _, it := range rep.RubricItems {
		if it.Items > 0 || len(it.Pairs) > 0 || len(it.Judges) > 0 {
			page.Empty = false
		}
	}
	if len(rep.RubricItems) == 0 {
		return page
	}
	page.Filters.Item = rep.RubricItems[cur].Key
	page.Verdicts = reportVerdicts(rep, names,
		func(key string) templ.SafeURL {
			return templ.SafeURL(string(reportURL(p.ID, with("item", key))) + "#item")
		},
		func(key string, judge int64) templ.SafeURL { return drill(key, id(judge), "people") })

	for i, it := range rep.RubricItems {
		st := it.Statistics
		kappa := reportFigure(st.LightsKappa, true)
		if st.LightsKappaPairs > 1 && st.LightsKappaMin != nil {
			kappa.Interval = fmt.Sprintf("mean of %d pairs, %s to %s", st.LightsKappaPairs, reportNum(*st.LightsKappaMin), reportNum(*st.LightsKappaMax))
		}
		row := rview.SummaryRow{
			Key: it.Key, Label: it.Label, Current: i == cur, Items: it.Items, Raters: it.Raters,
			URL: templ.SafeURL(string(reportURL(p.ID, with("item", it.Key))) + "#item"),
			Figures: []rview.Figure{
				reportFigure(st.PercentAgreement, false), reportFigure(st.KrippendorffAlpha, true), reportFigure(st.FleissKappa, true),
				kappa, reportFigure(st.GwetAC1, true), reportFigure(st.GwetAC2, true),
			},
		}
		// Every figure here is the annotators among themselves.
		for k := range row.Figures {
			row.Figures[k].URL = drill(it.Key, "people", "people")
		}
		switch {
		case it.Missing.Errors > 0 && it.Missing.NA > 0:
			row.Missing = fmt.Sprintf("%d ERROR and %d NA left out", it.Missing.Errors, it.Missing.NA)
		case it.Missing.Errors > 0:
			row.Missing = fmt.Sprintf("%d ERROR left out", it.Missing.Errors)
		case it.Missing.NA > 0:
			row.Missing = fmt.Sprintf("%d NA left out", it.Missing.NA)
		}
		page.Summary = append(page.Summary, row)
	}

	it := rep.RubricItems[cur]
	d := rview.ItemDetail{Key: it.Key, Label: it.Label, Scale: strings.Join(it.Scale, ", "), Level: it.Level, Weights: "with " + it.Weights + " weights"}
	if it.Weights == "none" {
		d.Weights = "unweighted"
	}
	for _, x := range rep.RubricItems {
		d.Tabs = append(d.Tabs, rview.Tab{Key: x.Key, Current: x.Key == it.Key, URL: templ.SafeURL(string(reportURL(p.ID, with("item", x.Key))) + "#item")})
	}
	d.Pairs, d.PairList = reportPairMatrix(rep, it, names, func(a, b int64) (items, confusion templ.SafeURL) {
		return drill(it.Key, id(a), id(b)),
			templ.SafeURL(string(reportURL(p.ID, with("item", it.Key, "a", id(a), "b", id(b)))) + "#item")
	})
	d.Confusion = reportConfusion(it, names, q.Get("a"), q.Get("b"), func(a, b int64, va, vb string) templ.SafeURL {
		if va != "" {
			return drill(it.Key, id(a), id(b), "va", va, "vb", vb)
		}
		return drill(it.Key, id(a), id(b))
	})
	if it.Boundaries != nil {
		d.Boundaries = reportBoundaries(it, names, drill)
		d.Boundaries.Explain = explain["boundaries"]
	}
	if it.Evidence != nil {
		d.Evidence = reportEvidence(it.Evidence, names, func(a string) templ.SafeURL { return drill(it.Key, a, "people", "fails", "1") })
		d.Evidence.Explain = explain["evidence"]
	}
	page.Item = d

	page.Annotators.Keys = make([]string, len(rep.RubricItems))
	for i, x := range rep.RubricItems {
		page.Annotators.Keys[i] = x.Key
	}
	for _, rt := range rep.Raters {
		if rt.Kind == "judge" {
			continue
		}
		row := rview.AnnotatorRow{Name: names[rt.ID], AnswerSets: rt.AnswerSets, Agreement: reportUndefined("no item shared with another annotator"),
			KappaMean: reportUndefined("no item shared with another annotator here")}
		var agree []float64
		for k, x := range rep.RubricItems {
			lenient := reportUndefined("no labels here")
			for _, a := range x.Annotators {
				if a.Rater != rt.ID {
					continue
				}
				if a.Agreement.Value != nil {
					agree = append(agree, *a.Agreement.Value)
				}
				lenient = reportSigned(a.Leniency)
				if k == cur {
					row.KappaMean = reportFigure(a.KappaMean, true)
					row.KappaMean.URL = drill(x.Key, id(rt.ID), "people")
				}
			}
			row.Leniency = append(row.Leniency, lenient)
		}
		if len(agree) > 0 {
			row.Agreement = rview.Figure{Value: reportNum(reportMean(agree))}
		}
		page.Annotators.Rows = append(page.Annotators.Rows, row)
	}

	for _, rt := range rep.Raters {
		if rt.Kind != "judge" {
			continue
		}
		jb := rview.JudgeBlock{Name: names[rt.ID], Verdict: "The judge has no labels on this rubric item."}
		passed, rated, raises := 0, 0, 0
		for k, x := range rep.RubricItems {
			for _, j := range x.Judges {
				if j.Rater != rt.ID {
					continue
				}
				rated++
				// The alt-test, kappa and alpha with the judge all set the
				// judge against the people: they link to the items where
				// it differs from them; the annotators' own alpha and
				// kappa range to the items where they differ among
				// themselves; the consensus kappa to the items where the
				// judge differs from the people's consensus.
				people, among := drill(x.Key, id(rt.ID), "people"), drill(x.Key, "people", "people")
				row := rview.JudgeRow{Key: x.Key, Items: j.Items, Shared: j.Shared, KappaMean: reportFigure(j.KappaMean, true), HumanRange: "—",
					Consensus: reportFigure(j.Consensus.CohenKappa, true), Alpha: reportFigure(j.Alpha, true), AlphaWithJudge: reportFigure(j.AlphaWithJudge, true),
					Epsilon:     strconv.FormatFloat(j.AltTest.Epsilon, 'f', -1, 64),
					WinningRate: reportFigure(j.AltTest.WinningRate, false), Advantage: reportFigure(j.AltTest.AdvantageProbability, false),
					Current:   k == cur,
					PeopleURL: people, PeopleAmongURL: among,
					GoldURL: drill(x.Key, id(rt.ID), "gold")}
				for _, f := range []*rview.Figure{&row.KappaMean, &row.AlphaWithJudge, &row.WinningRate, &row.Advantage} {
					f.URL = people
				}
				row.Alpha.URL = among
				row.Consensus.URL = drill(x.Key, id(rt.ID), "consensus")
				if j.AnnotatorKappaMin != nil {
					row.HumanRange = reportNum(*j.AnnotatorKappaMin) + " to " + reportNum(*j.AnnotatorKappaMax)
				}
				row.Alt, row.AltClass = altResult(j)
				if row.AltClass == "passed" {
					passed++
				}
				if j.Alpha.Value != nil && j.AlphaWithJudge.Value != nil && *j.AlphaWithJudge.Value >= *j.Alpha.Value {
					raises++
				}
				if k == cur {
					jb.Verdict = j.Verdict
				}
				jb.Rows = append(jb.Rows, row)
			}
		}
		jb.Summary = fmt.Sprintf("Passes the alternative annotator test at ε = %s on %d of %d rubric items; adding it as a rater keeps or raises alpha on %d.",
			kit.AltEpsilonLabel(rep.AltTest.Epsilon, rep.AltTest.EpsilonUnusual), passed, rated, raises)
		page.Judges = append(page.Judges, jb)
	}

	e := rep.Engine
	page.Engine = rview.Engine{Scored: e.Scored, Incomplete: e.Incomplete}
	for _, o := range []struct {
		key, name string
		o         *report.Outcome
	}{{"pass", "Pass or fail", e.Pass}, {"gate", "Safety gate", e.SafetyGate}} {
		if o.o == nil {
			continue
		}
		ov := rview.Outcome{Key: o.key, Name: o.name, Items: o.o.Items, Raters: o.o.Raters,
			Figures: []rview.Figure{reportFigure(o.o.PercentAgreement, false), reportFigure(o.o.KrippendorffAlpha, true), reportFigure(o.o.GwetAC1, true)}}
		for _, pr := range o.o.Pairs {
			ov.Pairs = append(ov.Pairs, linkedPair(rview.PairRow{A: names[pr.A], B: names[pr.B], N: pr.N,
				Figures: []rview.Figure{reportFigure(pr.Agreement, false), reportFigure(pr.CohenKappa, true)}},
				drillURL(p.ID, url.Values{"item": {"@" + o.key}, "a": {id(pr.A)}, "b": {id(pr.B)}})))
		}
		for _, j := range o.o.Judges {
			ov.Judges = append(ov.Judges, linkedPair(rview.PairRow{A: names[j.Rater], B: "annotators' majority", N: j.Consensus.N,
				Figures: []rview.Figure{reportFigure(j.Consensus.Agreement, false), reportFigure(j.Consensus.CohenKappa, true)}},
				drillURL(p.ID, url.Values{"item": {"@" + o.key}, "a": {id(j.Rater)}, "b": {"people"}})))
		}
		page.Engine.Outcomes = append(page.Engine.Outcomes, ov)
	}
	for _, sp := range e.Score.Pairs {
		page.Engine.Scores = append(page.Engine.Scores, rview.PairRow{A: names[sp.A], B: names[sp.B], N: sp.N,
			Figures: []rview.Figure{reportFigure(sp.Spearman, true), reportFigure(sp.Kendall, true), reportSigned(sp.MeanDiff)}})
	}
	for _, j := range e.Score.Judges {
		page.Engine.JudgeScore = append(page.Engine.JudgeScore, rview.PairRow{A: names[j.Rater], B: "annotators' median", N: j.N,
			Figures: []rview.Figure{reportFigure(j.Spearman, true)}})
	}
	return page
}

// Krippendorff's conventional reading of alpha: 0.800 and over is
// reliable, from 0.667 good for tentative conclusions only, below that
// not to be relied on.
const (
	alphaGood      = 0.8
	alphaTentative = 0.667
)

// altResult reads a judge's alternative annotator test on one rubric item
// in a word, joined with its latest robustness probe there
// (report.JudgeItem.Certification: "passed, but unstable" when a probe
// failed), and the class that colours it.
func altResult(j report.JudgeItem) (word, class string) {
	a := j.AltTest
	word = j.Certification
	if word == "" {
		word = report.AltWord(a)
	}
	switch {
	case a.WinningRate.Value == nil, a.Result == "cannot_tell":
		return word, "unknown"
	case a.Passed:
		return word, "passed"
	}
	return word, "failed"
}

// alphaBand reads an alpha in a word, and the class that colours it.
func alphaBand(s report.Stat) (word, class string) {
	switch {
	case s.Value == nil:
		return "undefined", "undefined"
	case *s.Value >= alphaGood:
		return "good", "good"
	case *s.Value >= alphaTentative:
		return "tentative", "fair"
	}
	return "poor", "poor"
}

// reportVerdicts are the report's conclusions, first on the page: each
// judge's alt-test over every rubric item, and each rubric item's alpha
// among the annotators with its band and each judge's alt-test there.
// item links to a rubric item below, people to the items where a judge
// and the people differ.
func reportVerdicts(rep *report.Report, names map[int64]string, item func(key string) templ.SafeURL, people func(key string, judge int64) templ.SafeURL) rview.Verdicts {
	v := rview.Verdicts{Epsilon: kit.AltEpsilonLabel(rep.AltTest.Epsilon, rep.AltTest.EpsilonUnusual)}
	var judges []int64
	for _, rt := range rep.Raters {
		if rt.Kind == "judge" {
			judges = append(judges, rt.ID)
		}
	}
	counts := make([]rview.JudgeVerdict, len(judges))
	seen := make([]bool, len(judges))
	// few: some rubric item could not be told for too few annotators;
	// allowed: some verdict rests on fewer than three, as allowed.
	few, allowed := make([]bool, len(judges)), make([]bool, len(judges))
	for _, it := range rep.RubricItems {
		alpha := reportFigure(it.Statistics.KrippendorffAlpha, true)
		alpha.URL = item(it.Key)
		band, class := alphaBand(it.Statistics.KrippendorffAlpha)
		alpha.Class = class
		iv := rview.ItemVerdict{Key: it.Key, Label: it.Label, URL: item(it.Key), Alpha: alpha, Band: band}
		for k, id := range judges {
			cell := rview.AltCell{}
			for _, j := range it.Judges {
				if j.Rater != id {
					continue
				}
				seen[k] = true
				a := j.AltTest
				cell = rview.AltCell{URL: people(it.Key, id)}
				cell.Word, cell.Class = altResult(j)
				switch cell.Class {
				case "unknown":
					counts[k].Unknown++
					if a.WinningRate.Value != nil {
						cell.Title = fmt.Sprintf("%s on %s: cannot tell, %s", names[id], it.Key, a.Reason)
						few[k] = true
						continue
					}
					cell.Title = fmt.Sprintf("%s on %s: no annotator has %d items in common with it and another annotator (%d of its %d items were labelled by people)",
						names[id], it.Key, a.MinItems, j.Shared, j.Items)
					continue
				case "passed":
					counts[k].Passed++
				default:
					counts[k].Failed++
				}
				cell.Rate = reportNum(*a.WinningRate.Value)
				cell.Title = fmt.Sprintf("%s on %s: wins %s of the %d annotators tested at ε = %s (0.5 or more passes)",
					names[id], it.Key, cell.Rate, a.Tested, strconv.FormatFloat(a.Epsilon, 'f', -1, 64))
				if a.FewHumans {
					cell.Title += "; " + a.Reason
					allowed[k] = true
				}
			}
			iv.Judges = append(iv.Judges, cell)
		}
		v.Items = append(v.Items, iv)
	}
	for k, id := range judges {
		jv := counts[k]
		jv.Name = names[id]
		rated := jv.Passed + jv.Failed + jv.Unknown
		switch {
		case !seen[k]:
			jv.Result, jv.Class = "No labels under these filters", "unknown"
		case jv.Passed == rated:
			jv.Result, jv.Class = "Can replace an annotator on every rubric item", "passed"
		case jv.Passed > 0:
			jv.Result, jv.Class = fmt.Sprintf("Can replace an annotator on %d of %d rubric items", jv.Passed, rated), "mixed"
		case jv.Failed > 0:
			jv.Result, jv.Class = "Cannot replace an annotator", "failed"
		case few[k]:
			jv.Result, jv.Class = "Cannot tell yet: fewer than three annotators with enough items shared with it", "unknown"
		default:
			jv.Result, jv.Class = "Cannot tell yet: too few items shared with the people", "unknown"
		}
		if allowed[k] && jv.Class != "unknown" {
			jv.Result += ", but on fewer than three annotators on some (allowed)"
		}
		v.Judges = append(v.Judges, jv)
		v.JudgeNames = append(v.JudgeNames, jv.Name)
	}
	return v
}

func reportQuery(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func reportMean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func reportNum(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

func reportUndefined(reason string) rview.Figure { return rview.Figure{Value: "—", Reason: reason} }

// figure writes a figure with its interval; graded ones (chance-corrected
// agreement) are coloured by the usual reading: 0.8 and over reliable,
// from 0.667 tentative, below that poor.
func reportFigure(s report.Stat, graded bool) rview.Figure {
	if s.Value == nil {
		return reportUndefined(s.Reason)
	}
	f := rview.Figure{Value: reportNum(*s.Value)}
	if s.CI != nil {
		f.Interval = reportNum(s.CI.Lower) + " to " + reportNum(s.CI.Upper)
	}
	if s.Withheld != nil {
		f.NoInterval = s.Withheld.String()
	}
	if graded {
		switch v := *s.Value; {
		case v >= 0.8:
			f.Class = "good"
		case v >= 0.667:
			f.Class = "fair"
		default:
			f.Class = "poor"
		}
	}
	return f
}

// signed writes an offset with its sign, so that harsh and lenient read
// apart at a glance.
func reportSigned(s report.Stat) rview.Figure {
	if s.Value == nil {
		return reportUndefined(s.Reason)
	}
	f := rview.Figure{Value: fmt.Sprintf("%+.2f", *s.Value)}
	switch {
	case *s.Value <= -0.1:
		f.Class = "harsh"
	case *s.Value >= 0.1:
		f.Class = "lenient"
	}
	return f
}

// linkedPair links a pair's count and every figure to the items where
// the two differ.
func linkedPair(row rview.PairRow, u templ.SafeURL) rview.PairRow {
	row.URL = u
	for i := range row.Figures {
		row.Figures[i].URL = u
	}
	return row
}

// reportPairMatrix draws every pair of raters' kappa on one rubric item,
// each cell linking to the items where the pair differs, and lists the
// same pairs with their confusion matrices one click away. link gives a
// pair's two addresses.
func reportPairMatrix(rep *report.Report, it report.RubricItem, names map[int64]string,
	link func(a, b int64) (items, confusion templ.SafeURL)) (rview.Heatmap, []rview.PairLink) {
	var ids []int64
	seen := map[int64]bool{}
	for _, rt := range rep.Raters {
		for _, p := range it.Pairs {
			if (p.A == rt.ID || p.B == rt.ID) && !seen[rt.ID] {
				seen[rt.ID] = true
				ids = append(ids, rt.ID)
			}
		}
	}
	h := rview.Heatmap{Title: "Cohen's κ of every pair of raters", RowHead: "raters", ColHead: "the same raters",
		Caption: "Click a cell for the items where the pair differs; each pair's confusion matrix is listed below. Darker is higher agreement."}
	pairs := map[[2]int64]report.Pair{}
	for _, p := range it.Pairs {
		pairs[[2]int64{p.A, p.B}] = p
		pairs[[2]int64{p.B, p.A}] = p
	}
	for _, a := range ids {
		h.Rows = append(h.Rows, names[a])
		h.Cols = append(h.Cols, names[a])
		var row []rview.Cell
		for _, b := range ids {
			p, ok := pairs[[2]int64{a, b}]
			switch {
			case a == b:
				row = append(row, rview.Cell{Text: "", Title: names[a], Class: "heat-self"})
			case !ok:
				row = append(row, rview.Cell{Text: "·", Title: names[a] + " and " + names[b] + " share no item", Class: "heat-none"})
			default:
				// The row's rater is side A, so that the list reads as the
				// cell does.
				items, _ := link(a, b)
				c := rview.Cell{Text: "—", Class: "heat-none", URL: items}
				if v := p.CohenKappa.Value; v != nil {
					c.Text, c.Class = reportNum(*v), reportHeat(*v)
				}
				c.Title = fmt.Sprintf("%s and %s: κ %s over %d items; click for the items where they differ", names[a], names[b], reportFigureText(p.CohenKappa), p.N)
				row = append(row, c)
			}
		}
		h.Cells = append(h.Cells, row)
	}
	var list []rview.PairLink
	for _, p := range it.Pairs {
		items, confusion := link(p.A, p.B)
		kappa := reportFigure(p.CohenKappa, true)
		kappa.URL = items
		list = append(list, rview.PairLink{A: names[p.A], B: names[p.B], N: p.N, Kappa: kappa, ItemsURL: items, ConfusionURL: confusion})
	}
	return h, list
}

func reportFigureText(s report.Stat) string {
	f := reportFigure(s, false)
	if f.Reason != "" {
		return "undefined (" + f.Reason + ")"
	}
	if f.Interval != "" {
		return f.Value + " (" + f.Interval + ")"
	}
	if f.NoInterval != "" {
		return f.Value + " (" + f.NoInterval + ")"
	}
	return f.Value
}

// kappaHeat picks the colour of a kappa: six steps from below 0 to 0.8 and
// over.
func reportHeat(v float64) string {
	switch {
	case v < 0:
		return "heat-0"
	case v < 0.2:
		return "heat-1"
	case v < 0.4:
		return "heat-2"
	case v < 0.6:
		return "heat-3"
	case v < 0.8:
		return "heat-4"
	}
	return "heat-5"
}

// confusion draws the confusion matrix of the pair asked for (a and b are
// rater ids, in either order), or of the first pair.
func reportConfusion(it report.RubricItem, names map[int64]string, a, b string, link func(a, b int64, va, vb string) templ.SafeURL) *rview.Confusion {
	if len(it.Pairs) == 0 {
		return nil
	}
	p := it.Pairs[0]
	flip := false
	for _, x := range it.Pairs {
		xa, xb := strconv.FormatInt(x.A, 10), strconv.FormatInt(x.B, 10)
		if xa == a && xb == b {
			p, flip = x, false
		}
		if xa == b && xb == a {
			p, flip = x, true
		}
	}
	ra, rb := names[p.A], names[p.B]
	ida, idb := p.A, p.B
	cells := p.Confusion
	if flip {
		ra, rb = rb, ra
		ida, idb = idb, ida
		t := make([][]int, len(cells))
		for i := range cells {
			t[i] = make([]int, len(cells))
			for j := range cells {
				t[i][j] = cells[j][i]
			}
		}
		cells = t
	}
	most := 0
	for _, row := range cells {
		for _, c := range row {
			most = max(most, c)
		}
	}
	h := rview.Heatmap{Title: "Confusion matrix: " + ra + " against " + rb, RowHead: ra + "'s answers", ColHead: rb + "'s", Rows: it.Scale, Cols: it.Scale,
		Caption: "Items by the answer each gave; the diagonal is agreement."}
	for i, row := range cells {
		var out []rview.Cell
		for j, c := range row {
			cl := "heat-none"
			if c > 0 {
				cl = fmt.Sprintf("heat-%d", 1+4*c/max(most, 1))
			}
			cell := rview.Cell{Text: strconv.Itoa(c), Class: cl,
				Title: fmt.Sprintf("%d items: %s said %s, %s said %s", c, ra, it.Scale[i], rb, it.Scale[j])}
			if c > 0 {
				cell.URL = link(ida, idb, it.Scale[i], it.Scale[j])
			}
			out = append(out, cell)
		}
		h.Cells = append(h.Cells, out)
	}
	return &rview.Confusion{A: ra, B: rb, Heatmap: h, ItemsURL: link(ida, idb, "", ""),
		Figures: fmt.Sprintf("%d items · observed agreement %s · Cohen's κ %s", p.N, reportFigureText(p.Agreement), reportFigureText(p.CohenKappa))}
}

// reportBoundaries shapes where a 1–5 item's disagreement falls: a row per
// boundary, the people's share and each judge's, each linking to the
// items whose answers lie on either side of it.
func reportBoundaries(it report.RubricItem, names map[int64]string, drill func(key, a, b string, extra ...string) templ.SafeURL) *rview.BoundaryTable {
	b := it.Boundaries
	t := &rview.BoundaryTable{}
	for _, j := range b.Judges {
		t.Judges = append(t.Judges, names[j.Rater])
	}
	share := func(bd agreement.Boundary, a string, k int) rview.Share {
		if bd.Share == nil {
			return rview.Share{Text: "—", Title: "no disagreement"}
		}
		return rview.Share{Text: fmt.Sprintf("%.0f %%", *bd.Share*100),
			Title: fmt.Sprintf("%d disagreeing %s cross it", bd.Crossing, kit.Plural(bd.Crossing, "pair", "pairs")),
			URL:   drill(it.Key, a, "people", "boundary", strconv.Itoa(k))}
	}
	for i, bd := range b.Annotators.Boundaries {
		row := rview.BoundaryRow{Boundary: bd.Lower + "|" + bd.Upper}
		k, err := strconv.Atoi(bd.Lower)
		if err != nil {
			continue
		}
		row.Shares = append(row.Shares, share(bd, "people", k))
		for _, j := range b.Judges {
			row.Shares = append(row.Shares, share(j.Boundaries[i], strconv.FormatInt(j.Rater, 10), k))
		}
		if i < len(b.Guidance) {
			row.Guidance = b.Guidance[i].Texts
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// cannotTell names a judge's runs that could not have been a step, by
// reason, in the order the reasons first came.
func cannotTell(points []calibration.RunPoint) string {
	var reasons []string
	runs := map[string][]string{}
	for _, pt := range points {
		if !pt.CannotTell {
			continue
		}
		if _, ok := runs[pt.Reason]; !ok {
			reasons = append(reasons, pt.Reason)
		}
		runs[pt.Reason] = append(runs[pt.Reason], strconv.FormatInt(pt.Run, 10))
	}
	var out []string
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s %s: %s", kit.Plural(len(runs[r]), "run", "runs"), strings.Join(runs[r], ", "), r))
	}
	return strings.Join(out, "; ")
}

// reportEvidence shapes the agreement on where a rubric item fails: the
// people's row, then a row per judge, each with what it rests on and
// "too few" in place of figures below the minimum of items. failing links
// a side (a rater's id, or people) to the items where it and the people
// both gave a failing answer.
func reportEvidence(e *report.EvidenceAgreement, names map[int64]string, failing func(a string) templ.SafeURL) *rview.EvidenceTable {
	t := &rview.EvidenceTable{}
	row := func(who string, f report.EvidenceFigures, url templ.SafeURL) rview.EvidenceRow {
		r := rview.EvidenceRow{Who: who, Overlap: reportFigure(f.Overlap, false), Alpha: reportFigure(f.Alpha, true),
			Counts: fmt.Sprintf("%d %s, %d %s, %d with a turn in common", f.Items, kit.Plural(f.Items, "item", "items"),
				f.Pairs, kit.Plural(f.Pairs, "pair", "pairs"), f.Overlapping)}
		if f.TooFew {
			r.TooFew = fmt.Sprintf("too few: %d %s where two both marked turns, %d needed", f.Items, kit.Plural(f.Items, "item", "items"), f.MinItems)
		}
		if f.Pairs > 0 {
			r.URL = url
		}
		return r
	}
	t.Rows = append(t.Rows, row("The people among themselves", e.People, failing("people")))
	for _, j := range e.Judges {
		t.Rows = append(t.Rows, row(names[j.Rater]+" against the people", j.EvidenceFigures, failing(strconv.FormatInt(j.Rater, 10))))
	}
	return t
}
