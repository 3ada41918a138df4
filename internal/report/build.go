package report

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Build reads the project's answer sets once and returns its agreement
// report. It fails with an attune.ErrInvalid error when opts asks for a
// rubric version other than the project's, and with the store's errors.
// A project without labels gives a report whose figures are undefined, not
// an error.
func Build(ctx context.Context, db *store.DB, p *attune.Project, opts Options) (*Report, error) {
	if opts.Rubric != "" && opts.Rubric != p.RubricRef {
		return nil, attune.Invalid("rubric", fmt.Sprintf("this project labels with %s for its whole life; there is no report for %s", p.RubricRef, opts.Rubric))
	}
	if err := checkBootstrap(opts.Bootstrap); err != nil {
		return nil, attune.Invalid("replicates", err.Error())
	}
	fig, err := readFigureOptions(opts)
	if err != nil {
		return nil, err
	}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	all, err := db.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Project:   Project{ID: p.ID, Name: p.Name, Rubric: p.RubricRef, Kind: string(def.Kind)},
		Filter:    Filter{Annotators: []int64{}, Judges: []int64{}, Rubric: p.RubricRef},
		Bootstrap: Bootstrap{Replicates: opts.Bootstrap.Replicates, Level: opts.Bootstrap.Level, Seed: opts.Bootstrap.Seed},
		AltTest: AltSettings{Epsilon: fig.alt.Epsilon, Scoring: "default", Q: fig.alt.Q, MinItems: fig.alt.MinItems,
			EpsilonUnusual: !agreement.AltEpsilonUsual(fig.alt.Epsilon), AllowFewHumans: fig.alt.AllowFewHumans, TTestFrom: agreement.DefaultAltTTestFrom},
		Raters: []Rater{},
	}
	if fig.scoring != nil {
		r.AltTest.Scoring = fig.scoring.String()
	}
	if !opts.From.IsZero() {
		r.Filter.From = opts.From.UTC().Format(dateLayout)
	}
	if !opts.To.IsZero() {
		r.Filter.To = opts.To.UTC().Format(dateLayout)
	}
	r.NA, r.NANote = "category", "NA is counted as an answer of its own, like YES and NO."
	if opts.NAMissing {
		r.NA, r.NANote = "missing", "NA is treated as missing: NA labels are left out, as if the rater had given no answer."
	}
	if !slices.ContainsFunc(def.Answers, func(a rubric.Answer) bool { return a.Value == rubric.NA }) {
		r.NANote = "The rubric has no NA answer."
	}
	// ListProjectRaters gives people first, the order of the fold.
	var humans, judges []int64
	for _, pr := range all {
		var keep []int64
		if pr.Kind == "judge" {
			keep = opts.Judges
		} else {
			keep = opts.Annotators
		}
		if keep != nil && !slices.Contains(keep, pr.ID) {
			continue
		}
		if pr.Kind == "judge" {
			judges = append(judges, pr.ID)
			r.Filter.Judges = append(r.Filter.Judges, pr.ID)
		} else {
			humans = append(humans, pr.ID)
			r.Filter.Annotators = append(r.Filter.Annotators, pr.ID)
		}
		r.Raters = append(r.Raters, Rater{ID: pr.ID, Name: pr.Name, Kind: pr.Kind, Imported: pr.Kind == "human" && !pr.Account, AnswerSets: pr.AnswerSets})
	}
	filter := store.AgreementFilter{From: opts.From, To: opts.To}
	if len(humans)+len(judges) < len(all) {
		filter.RaterIDs = append(append([]int64{}, humans...), judges...)
	}
	f, err := readCounts(ctx, db, p.ID, def, humans, judges, opts.NAMissing, fig.scoring, filter)
	if err != nil {
		return nil, err
	}
	// The figures of each rubric item only read the counts: they are
	// computed on every core at once (their intervals are most of the
	// work when there are many raters, hence many pairs).
	r.RubricItems = make([]RubricItem, len(f.items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(f.items)) {
		wg.Go(func() {
			for k := range next {
				r.RubricItems[k] = f.rubricItem(k, opts.Bootstrap, fig)
			}
		})
	}
	for k := range f.items {
		next <- k
	}
	close(next)
	wg.Wait()
	evidence, err := readEvidence(ctx, db, p.ID, def, humans, judges, filter)
	if err != nil {
		return nil, err
	}
	for k, e := range evidence {
		r.RubricItems[k].Evidence = e
	}
	r.Engine = f.engineReport(opts.Bootstrap)
	latest, err := probes.Latest(ctx, db, p)
	if err != nil {
		return nil, err
	}
	Certify(r, latest)
	history, err := db.CalibrationHistory(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	r.Calibration = make([]RaterCalibration, 0, len(history))
	for _, h := range history {
		rc := RaterCalibration{Rater: h.RaterID, Name: h.Name, Kind: h.Kind, Summary: calibration.Summarize(def, h.Records)}
		if h.Kind == "judge" {
			rc.Runs = calibration.Sentinels(def, h.Records)
			for _, pt := range rc.Runs {
				if pt.Step {
					rc.StepAt = append(rc.StepAt, pt)
				}
			}
		}
		r.Calibration = append(r.Calibration, rc)
	}
	r.Definitions = definitions(def.Kind)
	if opts.EstimateJudge != "" {
		if r.Estimates, err = evaluation.EstimateEvery(ctx, db, p, def, opts.EstimateJudge); err != nil {
			return nil, err
		}
	}
	return r, nil
}

const dateLayout = "2006-01-02"

// figureOptions are the checked choices of how figures are computed.
type figureOptions struct {
	level   *agreement.Level      // nil: each rubric item's default
	scoring *agreement.AltScoring // nil: each rubric item's default
	alt     agreement.AltOptions  // with the defaults filled in
}

// readFigureOptions checks the level and the alt-test's options, naming
// the field at fault in an attune.ErrInvalid error.
func readFigureOptions(opts Options) (figureOptions, error) {
	var fig figureOptions
	if opts.Level != "" {
		l, err := agreement.ParseLevel(opts.Level)
		if err != nil {
			return fig, attune.Invalid("level", "choose nominal, ordinal, interval or ratio")
		}
		fig.level = &l
	}
	if opts.Alt.Scoring != "" {
		sc, err := agreement.ParseAltScoring(opts.Alt.Scoring)
		if err != nil {
			return fig, attune.Invalid("alt_scoring", "choose accuracy or neg_rmse")
		}
		fig.scoring = &sc
	}
	if msg := agreement.AltEpsilonProblem(opts.Alt.Epsilon, opts.Alt.AllowUnusualEpsilon); msg != "" {
		return fig, attune.Invalid("epsilon", msg+".")
	}
	if opts.Alt.MinItems != 0 && opts.Alt.MinItems < 2 {
		return fig, attune.Invalid("alt_min_items", "an annotator needs at least 2 items to be tested")
	}
	fig.alt = agreement.AltOptions{Epsilon: opts.Alt.Epsilon, AllowUnusualEpsilon: opts.Alt.AllowUnusualEpsilon, Q: agreement.DefaultAltQ,
		MinItems: opts.Alt.MinItems, AllowFewHumans: opts.Alt.AllowFewHumans}
	if fig.alt.MinItems == 0 {
		fig.alt.MinItems = agreement.DefaultAltMinItems
	}
	return fig, nil
}

// partItems is the least number of items worth reading in a part of its
// own: below it, a second query costs more than it saves.
const partItems = 20_000

// readCounts reads the project's answer sets and folds them into counts
// (ids of people and of judges; raters are ordered people first). A
// large project is read in two halves of its items at once, on two
// connections, each folded on its own and the counts added up, so that
// PostgreSQL and the counting here both use a machine's second core.
func readCounts(ctx context.Context, db *store.DB, projectID int64, def *rubric.Definition, humans, judges []int64, naMissing bool, alt *agreement.AltScoring, filter store.AgreementFilter) (*fold, error) {
	parts := []store.AgreementFilter{filter}
	if len(humans)+len(judges) > 0 {
		lo, hi, err := db.ItemIDRange(ctx, projectID)
		if err != nil {
			return nil, err
		}
		if hi-lo >= 2*partItems && runtime.GOMAXPROCS(0) > 1 {
			mid := lo + (hi-lo)/2
			a, b := filter, filter
			a.MinItemID, a.MaxItemID = lo, mid
			b.MinItemID, b.MaxItemID = mid+1, hi
			parts = []store.AgreementFilter{a, b}
		}
	} else {
		parts = nil
	}
	folds := make([]*fold, max(len(parts), 1))
	for i := range folds {
		f, err := newFold(def, humans, judges, naMissing, alt)
		if err != nil {
			return nil, err
		}
		folds[i] = f
	}
	// The parts are read at once when two lead-read slots are free, one
	// after the other when only one is.
	if err := db.StreamAnswerSetParts(ctx, projectID, parts, func(i int, as *store.AnswerSetLabels) error { return folds[i].add(as) }); err != nil {
		return nil, err
	}
	for i := range parts {
		folds[i].finish()
	}
	for _, g := range folds[1:] {
		folds[0].merge(g)
	}
	return folds[0], nil
}

// pairStats are the figures of a pair of raters, in order.
func pairStats(numeric bool, w agreement.Weighting) ([]agreement.Reach, []func(agreement.Contingency) agreement.Estimate) {
	reach := []agreement.Reach{{}, agreement.KappaReach(w), {}}
	stats := []func(agreement.Contingency) agreement.Estimate{
		func(c agreement.Contingency) agreement.Estimate {
			return agreement.PairAgreement(c, agreement.NoWeights)
		},
		func(c agreement.Contingency) agreement.Estimate { return agreement.CohenKappa(c, w) },
	}
	if numeric {
		stats = append(stats, agreement.Spearman)
	}
	return reach[:len(stats)], stats
}

// rubricItem computes the figures of rubric item k from its counts.
func (f *fold) rubricItem(k int, b agreement.Bootstrap, fig figureOptions) RubricItem {
	is, kc := &f.items[k], &f.keys[k]
	q := is.scale.Len()
	level, w := agreement.Nominal, agreement.NoWeights
	if is.numeric {
		level, w = agreement.Ordinal, agreement.QuadraticWeights
	}
	if fig.level != nil {
		level = *fig.level
	}
	out := RubricItem{
		Key: is.key, Label: is.label, Scale: is.scale.Labels(), Level: level.String(), Weights: w.String(),
		Missing:    Missing{Errors: kc.errors, NA: kc.na},
		Pairs:      []Pair{},
		Annotators: []Annotator{},
		Judges:     []JudgeItem{},
	}
	units := kc.humans.units(is.scale)
	out.Items = units.Items()
	reach, stats := pairStats(is.numeric, w)
	for r := range f.humans {
		if kc.rated[r] > 0 {
			out.Raters++
		}
	}
	alpha := func(u agreement.Units) agreement.Estimate { return agreement.KrippendorffAlpha(u, level) }
	es := bootUnits(units, b, seedFor(b.Seed, is.key+"/annotators"),
		[]agreement.Reach{{}, agreement.AlphaReach(level), agreement.ChanceReach, agreement.ChanceReach, agreement.AC2Reach(w)},
		agreement.PercentAgreement,
		alpha,
		func(u agreement.Units) agreement.Estimate { return agreement.FleissKappa(u, agreement.NoWeights) },
		agreement.GwetAC1,
		func(u agreement.Units) agreement.Estimate { return agreement.GwetAC2(u, w) })
	st := &out.Statistics
	st.PercentAgreement, st.KrippendorffAlpha, st.FleissKappa, st.GwetAC1, st.GwetAC2 = stat(es[0]), stat(es[1]), stat(es[2]), stat(es[3]), stat(es[4])
	if out.Raters < 2 {
		for _, s := range []*Stat{&st.PercentAgreement, &st.KrippendorffAlpha, &st.FleissKappa, &st.GwetAC1, &st.GwetAC2} {
			*s = Stat{Reason: agreement.ReasonFewRaters}
		}
	}

	// Every pair, with its interval; remembered by slot for what follows.
	type pairFigures struct {
		c     agreement.Contingency
		kappa agreement.Estimate
	}
	figures := make([]*pairFigures, len(kc.pairs)) // by slot; nil: no items shared
	for s, cells := range kc.pairs {
		if cells == nil {
			continue
		}
		c := contingency(is.scale, cells)
		a, bb := f.slotAB[s][0], f.slotAB[s][1]
		es := bootPairs(c, b, seedFor(b.Seed, fmt.Sprintf("%s/pair/%d/%d", is.key, f.raters[a], f.raters[bb])), reach, stats...)
		p := Pair{A: f.raters[a], B: f.raters[bb], N: c.N(), Agreement: stat(es[0]), CohenKappa: stat(es[1]), Confusion: c.Counts()}
		if is.numeric {
			sp := stat(es[2])
			p.Spearman = &sp
		}
		out.Pairs = append(out.Pairs, p)
		figures[s] = &pairFigures{c: c, kappa: es[1]}
	}
	slices.SortFunc(out.Pairs, func(x, y Pair) int { return pairOrder(f, x.A, x.B) - pairOrder(f, y.A, y.B) })

	// Annotators' kappas with each other.
	var human []float64
	var only *agreement.Estimate
	for s, pf := range figures {
		a, bb := f.slotAB[s][0], f.slotAB[s][1]
		if pf != nil && a < f.humans && bb < f.humans && pf.kappa.Defined {
			human = append(human, pf.kappa.Value)
			e := pf.kappa
			only = &e
		}
	}
	humanPairs := 0
	for s, pf := range figures {
		if pf != nil && f.slotAB[s][1] < f.humans {
			humanPairs++
		}
	}
	st.LightsKappaPairs = len(human)
	switch {
	case out.Raters == 2 && humanPairs == 1 && only != nil:
		st.LightsKappa = stat(*only)
	case len(human) > 0:
		st.LightsKappa = value(mean(human))
	case out.Raters < 2:
		st.LightsKappa = Stat{Reason: agreement.ReasonFewRaters}
	default:
		st.LightsKappa = Stat{Reason: "no pair of annotators has a defined kappa"}
	}
	var hmin, hmax *float64
	if len(human) > 0 {
		lo, hi := slices.Min(human), slices.Max(human)
		hmin, hmax = &lo, &hi
		st.LightsKappaMin, st.LightsKappaMax = hmin, hmax
	}

	// Each annotator against the others.
	for h := range f.humans {
		if kc.rated[h] == 0 {
			continue
		}
		a := Annotator{Rater: f.raters[h], Items: kc.rated[h], Shared: kc.shared[h]}
		var agree, n int
		var offset float64
		var kappas []float64
		for s, pf := range figures {
			x, y := f.slotAB[s][0], f.slotAB[s][1]
			if pf == nil || y >= f.humans || (x != h && y != h) {
				continue
			}
			cells := pf.c.Counts()
			for i := range q {
				for j := range q {
					c := cells[i][j]
					if c == 0 {
						continue
					}
					n += c
					if i == j {
						agree += c
					}
					d := is.x[i] - is.x[j] // x's answer minus y's
					if y == h {
						d = -d
					}
					offset += float64(c) * d
				}
			}
			if pf.kappa.Defined {
				kappas = append(kappas, pf.kappa.Value)
			}
		}
		a.Agreement, a.KappaMean, a.Leniency = Stat{Reason: "no item shared with another annotator"}, Stat{Reason: "no defined kappa with another annotator"}, Stat{Reason: "no item shared with another annotator"}
		if n > 0 {
			a.Agreement = value(float64(agree) / float64(n))
			a.Leniency = value(offset / float64(n))
		}
		if len(kappas) > 0 {
			a.KappaMean = value(mean(kappas))
		}
		out.Annotators = append(out.Annotators, a)
	}

	// Each judge against the annotators.
	for j := range len(f.raters) - f.humans {
		r := f.humans + j
		if kc.rated[r] == 0 {
			continue
		}
		ji := JudgeItem{Rater: f.raters[r], Items: kc.rated[r], Shared: kc.shared[r], VsAnnotators: []Versus{}, AnnotatorKappaMin: hmin, AnnotatorKappaMax: hmax}
		var kappas []float64
		for h := range f.humans {
			s := f.slotOf[h*len(f.raters)+r]
			if s < 0 {
				continue
			}
			pf := figures[s]
			if pf == nil {
				continue
			}
			ji.VsAnnotators = append(ji.VsAnnotators, Versus{Rater: f.raters[h], N: pf.c.N(), Kappa: stat(pf.kappa)})
			if pf.kappa.Defined {
				kappas = append(kappas, pf.kappa.Value)
			}
		}
		ji.KappaMean = Stat{Reason: "no defined kappa with an annotator"}
		if len(kappas) > 0 {
			ji.KappaMean = value(mean(kappas))
		}
		c := contingency(is.scale, kc.cons[j])
		ces := bootPairs(c, b, seedFor(b.Seed, fmt.Sprintf("%s/consensus/%d", is.key, f.raters[r])), reach, stats...)
		ji.Consensus = Consensus{N: c.N(), Agreement: stat(ces[0]), CohenKappa: stat(ces[1]), Confusion: c.Counts()}
		if is.numeric {
			sp := stat(ces[2])
			ji.Consensus.Spearman = &sp
		}
		ji.Alpha = st.KrippendorffAlpha
		aw := bootUnits(kc.withJudge[j].units(is.scale), b, seedFor(b.Seed, fmt.Sprintf("%s/with/%d", is.key, f.raters[r])), []agreement.Reach{agreement.AlphaReach(level)}, alpha)
		ji.AlphaWithJudge = stat(aw[0])
		ji.AltTest = f.altTest(kc.alt[j], fig.alt)
		ji.Verdict = verdict(ji)
		out.Judges = append(out.Judges, ji)
	}
	if is.numeric {
		out.Boundaries = f.boundaries(is, out.Pairs)
	}
	return out
}

// boundaries says where the disagreement of a numeric rubric item falls:
// among the annotators (every pair of them), and for each judge against
// them (its pair with each), beside the rubric's guidance on each
// boundary. Nil when the scale has fewer than two numbers.
func (f *fold) boundaries(is *itemScale, pairs []Pair) *Boundaries {
	human := func(id int64) bool { return f.index[id] < f.humans }
	var among [][][]int
	byJudge := map[int64][][][]int{}
	for _, p := range pairs {
		switch ha, hb := human(p.A), human(p.B); {
		case ha && hb:
			among = append(among, p.Confusion)
		case ha:
			byJudge[p.B] = append(byJudge[p.B], p.Confusion)
		case hb:
			byJudge[p.A] = append(byJudge[p.A], p.Confusion)
		}
	}
	scale := is.scale.Labels()
	split, ok := agreement.SplitByBoundary(scale, among...)
	if !ok {
		return nil
	}
	out := &Boundaries{Annotators: split, Judges: []JudgeBoundaries{}, Guidance: []BoundaryGuidance{}}
	for _, id := range f.raters[f.humans:] {
		if ts, has := byJudge[id]; has {
			js, _ := agreement.SplitByBoundary(scale, ts...)
			out.Judges = append(out.Judges, JudgeBoundaries{Rater: id, BoundarySplit: js})
		}
	}
	it, _ := f.def.Item(is.key)
	for _, b := range split.Boundaries {
		g := BoundaryGuidance{Lower: b.Lower, Upper: b.Upper, Texts: []string{}}
		if it != nil {
			for _, r := range it.BoundaryGuidance(rubric.Value(b.Lower), rubric.Value(b.Upper)) {
				g.Texts = append(g.Texts, r.Text)
			}
		}
		out.Guidance = append(out.Guidance, g)
	}
	return out
}

// pairOrder sorts pairs by their raters' places in the report.
func pairOrder(f *fold, a, b int64) int { return f.index[a]*len(f.raters) + f.index[b] }

// contingency turns q×q counts into a table over s.
func contingency(s *agreement.Scale, cells []int) agreement.Contingency {
	q := s.Len()
	rows := make([][]int, q)
	for k := range rows {
		rows[k] = cells[k*q : (k+1)*q]
	}
	c, err := agreement.NewContingency(s, rows)
	if err != nil {
		panic(err) // q×q non-negative counts
	}
	return c
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// altTest runs a judge's alt-test from its tally.
func (f *fold) altTest(t *agreement.AltTally, o agreement.AltOptions) AltTest {
	res, err := t.AltTest(o)
	if err != nil {
		panic(err) // the options were checked by readFigureOptions
	}
	out := AltTest{Epsilon: res.Epsilon, EpsilonUnusual: res.EpsilonUnusual, Scoring: res.Scoring.String(), Q: res.Q, MinItems: res.MinItems, TTestFrom: res.TTestFrom,
		Humans: []AltHuman{}, Tested: res.Tested, WinningRate: stat(res.WinningRate),
		AdvantageProbability: stat(res.AdvantageProbability), Result: string(res.Verdict), Passed: res.Passed, FewHumans: res.FewHumans, Reason: res.Reason}
	if res.Verdict == agreement.AltCannotTell {
		out.Progress = res.Progress()
	}
	for _, h := range res.Humans {
		if h.Items == 0 {
			continue
		}
		ah := AltHuman{Rater: f.raters[h.Human], Items: h.Items, Tested: h.Tested, JudgeAdvantage: h.JudgeAdvantage, Rejected: h.Rejected}
		if h.Tested {
			p, adj, test := h.P, h.PAdjusted, string(h.Test)
			ah.PValue, ah.PAdjusted, ah.Test = &p, &adj, &test
		}
		out.Humans = append(out.Humans, ah)
	}
	return out
}

// verdict answers "can this judge replace one of the annotators?" in
// words, from the alt-test, with alpha with and without the judge.
func verdict(j JudgeItem) string {
	f2 := func(s Stat) string {
		if s.Value == nil {
			return "undefined"
		}
		return strconv.FormatFloat(*s.Value, 'f', 2, 64)
	}
	alpha := fmt.Sprintf("adding it as a rater moves alpha from %s to %s", f2(j.Alpha), f2(j.AlphaWithJudge))
	if j.Alpha.Value == nil || j.AlphaWithJudge.Value == nil {
		alpha = "alpha with and without it cannot both be computed"
	}
	a := j.AltTest
	eps := strconv.FormatFloat(a.Epsilon, 'f', -1, 64)
	if a.EpsilonUnusual {
		eps += " (an unusual ε, asked for)"
	}
	progress := ""
	if a.Progress != "" {
		progress = " (" + a.Progress + ")"
	}
	if a.WinningRate.Value == nil {
		return fmt.Sprintf("Cannot tell: no annotator has %d items shared with another annotator and the judge, which the alternative annotator test needs%s; %s.", a.MinItems, progress, alpha)
	}
	won := 0
	for _, h := range a.Humans {
		if h.Rejected {
			won++
		}
	}
	switch {
	case a.Result == string(agreement.AltCannotTell):
		return fmt.Sprintf("Cannot tell: %s%s; %s.", a.Reason, progress, alpha)
	case a.Passed && a.FewHumans:
		return fmt.Sprintf("Can replace an annotator, but on %d annotators only (the test asks for at least %d; a verdict on fewer was allowed): at ε = %s it wins %d of %d (winning rate %s, at least 0.5; advantage probability %s), and %s.",
			a.Tested, agreement.AltMinHumans, eps, won, a.Tested, f2(a.WinningRate), f2(a.AdvantageProbability), alpha)
	case a.Passed:
		return fmt.Sprintf("Can replace an annotator: at ε = %s it wins %d of %d annotators (winning rate %s, at least 0.5; advantage probability %s), and %s.",
			eps, won, a.Tested, f2(a.WinningRate), f2(a.AdvantageProbability), alpha)
	case a.FewHumans:
		return fmt.Sprintf("Cannot replace an annotator, on %d annotators only (the test asks for at least %d; a verdict on fewer was allowed): at ε = %s it wins %d of %d (winning rate %s, below 0.5; advantage probability %s), and %s.",
			a.Tested, agreement.AltMinHumans, eps, won, a.Tested, f2(a.WinningRate), f2(a.AdvantageProbability), alpha)
	}
	return fmt.Sprintf("Cannot replace an annotator: at ε = %s it wins %d of %d annotators (winning rate %s, below 0.5; advantage probability %s), and %s.",
		eps, won, a.Tested, f2(a.WinningRate), f2(a.AdvantageProbability), alpha)
}

// engineReport computes the agreement on the engine's outputs.
func (f *fold) engineReport(b agreement.Bootstrap) Engine {
	e := &f.engine
	out := Engine{Kind: string(f.def.Kind), Scored: e.scored, Incomplete: e.incomplete,
		Score: Scores{Pairs: []ScorePair{}, Judges: []ScoreJudge{}}}
	if f.def.Kind == rubric.Criteria {
		out.Pass = f.outcome("pass", []string{"pass", "fail"}, &e.passUnits, e.passPairs, e.passCons, b)
		out.SafetyGate = f.outcome("gate", []string{"passed", "failed"}, &e.gateUnits, e.gatePairs, e.gateCons, b)
	}
	for s, m := range e.scorePairs {
		if len(m) == 0 {
			continue
		}
		// Final scores take many values, so a table of two raters' scores
		// has many cells, and resampling it would cost more than the rest
		// of the report: rank correlations come without an interval (over
		// the thousands of items a report is for, it would be narrow).
		c, n := f.scoreTable(m)
		out.Score.Pairs = append(out.Score.Pairs, ScorePair{A: f.raters[f.slotAB[s][0]], B: f.raters[f.slotAB[s][1]], N: n,
			Spearman: stat(agreement.Spearman(c)), Kendall: stat(agreement.KendallTauB(c)), MeanDiff: value(meanDifference(c))})
	}
	slices.SortFunc(out.Score.Pairs, func(x, y ScorePair) int { return pairOrder(f, x.A, x.B) - pairOrder(f, y.A, y.B) })
	for j, m := range e.scoreCons {
		if len(m) == 0 {
			continue
		}
		c, n := f.scoreTable(m)
		out.Score.Judges = append(out.Score.Judges, ScoreJudge{Rater: f.raters[f.humans+j], N: n, Spearman: stat(agreement.Spearman(c))})
	}
	return out
}

// meanDifference is the mean of the first rater's score minus the second's
// over a table of scores, summed in the table's order so that the same
// counts always give the same bits.
func meanDifference(c agreement.Contingency) float64 {
	v := c.Scale().Values()
	var sum float64
	for k := range v {
		for l := range v {
			if n := c.At(k, l); n > 0 {
				sum += float64(n) * (v[k] - v[l])
			}
		}
	}
	return sum / float64(c.N())
}

// scoreTable turns the pairs of final scores (indices into the scores
// seen) into a contingency table over the scores these two used, in
// numeric order: rank statistics do not change with unused categories.
func (f *fold) scoreTable(m map[uint64]int) (agreement.Contingency, int) {
	e := &f.engine
	var used []float64
	seen := map[int32]bool{}
	for k := range m {
		a, b := unpack(k)
		for _, i := range []int32{a, b} {
			if !seen[i] {
				seen[i] = true
				used = append(used, e.scores[i])
			}
		}
	}
	slices.Sort(used)
	labels := make([]string, len(used))
	pos := map[float64]int{}
	for i, x := range used {
		labels[i] = strconv.FormatFloat(x, 'f', -1, 64)
		pos[x] = i
	}
	s, err := agreement.NewScale(labels...)
	if err != nil {
		panic(err) // distinct finite numbers
	}
	q := len(used)
	cells := make([]int, q*q)
	n := 0
	for k, c := range m {
		a, b := unpack(k)
		cells[pos[e.scores[a]]*q+pos[e.scores[b]]] += c
		n += c
	}
	return contingency(s, cells), n
}

// outcome computes the agreement on a yes-or-no output of the engine.
func (f *fold) outcome(name string, labels []string, units *patterns, pairs, cons [][]int, b agreement.Bootstrap) *Outcome {
	s, _ := agreement.NewScale(labels...)
	u := units.units(s)
	out := &Outcome{Scale: labels, Items: u.Items(), Pairs: []Pair{}, Judges: []JudgeOutcome{}}
	reach, stats := pairStats(false, agreement.NoWeights)
	raters := map[int]bool{}
	for sl, cells := range pairs {
		if cells == nil {
			continue
		}
		a, bb := f.slotAB[sl][0], f.slotAB[sl][1]
		if a < f.humans {
			raters[a] = true
		}
		if bb < f.humans {
			raters[bb] = true
		}
	}
	out.Raters = len(raters)
	es := bootUnits(u, b, seedFor(b.Seed, name+"/annotators"),
		[]agreement.Reach{{}, agreement.ChanceReach, agreement.ChanceReach},
		agreement.PercentAgreement,
		func(u agreement.Units) agreement.Estimate { return agreement.KrippendorffAlpha(u, agreement.Nominal) },
		agreement.GwetAC1)
	out.PercentAgreement, out.KrippendorffAlpha, out.GwetAC1 = stat(es[0]), stat(es[1]), stat(es[2])
	for sl, cells := range pairs {
		if cells == nil {
			continue
		}
		c := contingency(s, cells)
		a, bb := f.slotAB[sl][0], f.slotAB[sl][1]
		es := bootPairs(c, b, seedFor(b.Seed, fmt.Sprintf("%s/pair/%d/%d", name, f.raters[a], f.raters[bb])), reach, stats...)
		out.Pairs = append(out.Pairs, Pair{A: f.raters[a], B: f.raters[bb], N: c.N(), Agreement: stat(es[0]), CohenKappa: stat(es[1]), Confusion: c.Counts()})
	}
	slices.SortFunc(out.Pairs, func(x, y Pair) int { return pairOrder(f, x.A, x.B) - pairOrder(f, y.A, y.B) })
	for j, cells := range cons {
		c := contingency(s, cells)
		if c.N() == 0 {
			continue
		}
		es := bootPairs(c, b, seedFor(b.Seed, fmt.Sprintf("%s/consensus/%d", name, f.raters[f.humans+j])), reach, stats...)
		out.Judges = append(out.Judges, JudgeOutcome{Rater: f.raters[f.humans+j],
			Consensus: Consensus{N: c.N(), Agreement: stat(es[0]), CohenKappa: stat(es[1]), Confusion: c.Counts()}})
	}
	return out
}

// Certify sets each judge's certification on each rubric item: the
// alt-test's word joined with its latest probe there (latest, by rater),
// and says in the verdict which probes failed.
func Certify(r *Report, latest map[int64]*probes.Result) {
	for k := range r.RubricItems {
		it := &r.RubricItems[k]
		for j := range it.Judges {
			ji := &it.Judges[j]
			var s *probe.Summary
			if res, ok := latest[ji.Rater]; ok {
				sub := res.Summary.For(it.Key)
				s, ji.Probes, ji.ProbeRun = &sub, &sub, res.Run.ID
				if failed := sub.Failed(); len(failed) > 0 {
					ji.Verdict += fmt.Sprintf(" Its latest robustness probe (run %d) failed: %s.", res.Run.ID, strings.Join(failed, ", "))
				}
			}
			ji.Certification = probe.Certify(ji.AltTest.Passed, AltWord(ji.AltTest), s)
		}
	}
}
