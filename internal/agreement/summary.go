package agreement

import (
	"encoding/json"
	"fmt"
)

// Options selects what Summarize computes. The zero value is a nominal alpha,
// unweighted statistics, a scale inferred from the data and no intervals.
type Options struct {
	// Scale is the declared scale (the rubric's, or the CLI's --categories).
	// Nil infers it from the data with InferScale.
	Scale *Scale
	// Level is the level of Krippendorff's alpha.
	Level Level
	// Weights weights Cohen's kappa (over positions) and Gwet's AC2 (over
	// values). Percent agreement, Fleiss' kappa and Scott's pi stay
	// unweighted.
	Weights Weighting
	// Bootstrap, when set, attaches a confidence interval to every defined
	// statistic: multi-rater ones resample items, pairwise ones resample the
	// items both raters rated.
	Bootstrap *Bootstrap
}

// Summary is the agreement report of one table of ratings, as the CLI prints
// it. Its JSON is one object with n_items, n_raters, percent_agreement,
// krippendorff_alpha, fleiss_kappa, scotts_pi, gwet_ac1, gwet_ac2,
// cohen_kappa, spearman and kendall_tau_b (a number, or null when undefined),
// notes (statistic name → why it is null; {} when none is) and, only when a
// bootstrap was asked for, intervals (statistic name → interval) and
// intervals_withheld (statistic name → NoInterval, for a figure shown
// without one).
type Summary struct {
	// Items and Raters count the distinct items and raters of the input,
	// including those whose every value is missing.
	Items, Raters int
	// Scale is the scale the statistics were computed on (nil when the data
	// have no values at all).
	Scale *Scale

	PercentAgreement  Estimate
	KrippendorffAlpha Estimate
	FleissKappa       Estimate
	ScottPi           Estimate
	GwetAC1           Estimate
	GwetAC2           Estimate
	// CohenKappa, Spearman and KendallTauB are defined only for exactly two
	// raters; ScottPi too, since Fleiss' kappa is its generalization to more.
	CohenKappa  Estimate
	Spearman    Estimate
	KendallTauB Estimate
}

// Summarize computes every statistic of the summary over r. It fails when a
// value is not on the declared scale (naming the line it was first seen on,
// for a table read by ReadLongCSV) or the bootstrap configuration is invalid.
// Undefined statistics are not errors: they come back with a reason.
func Summarize(r *Ratings, opts Options) (Summary, error) {
	s := Summary{Items: r.NumItems(), Raters: r.NumRaters(), Scale: opts.Scale}
	multi := []*Estimate{&s.PercentAgreement, &s.KrippendorffAlpha, &s.FleissKappa, &s.GwetAC1, &s.GwetAC2}
	pair := []*Estimate{&s.CohenKappa, &s.ScottPi, &s.Spearman, &s.KendallTauB}
	setAll := func(es []*Estimate, reason string) {
		for _, e := range es {
			*e = undefined(reason)
		}
	}
	if s.Scale == nil && len(r.valueNames) > 0 {
		sc, err := InferScale(r.valueNames)
		if err != nil {
			return Summary{}, err
		}
		s.Scale = sc
	}
	if s.Scale == nil {
		setAll(multi, ReasonNoPairable)
		setAll(pair, ReasonNoPairable)
		if s.Raters < 2 {
			setAll(multi, ReasonFewRaters)
			setAll(pair, ReasonFewRaters)
		}
		return s, nil
	}
	units, err := r.Units(s.Scale)
	if err != nil {
		return Summary{}, err
	}
	multiStats := []func(Units) Estimate{
		PercentAgreement,
		func(u Units) Estimate { return KrippendorffAlpha(u, opts.Level) },
		func(u Units) Estimate { return FleissKappa(u, NoWeights) },
		GwetAC1,
		func(u Units) Estimate { return GwetAC2(u, opts.Weights) },
	}
	if err := fill(multi, units, multiStats, opts.Bootstrap, BootstrapUnits); err != nil {
		return Summary{}, err
	}
	withholdEach(multi, func(es []Estimate) {
		WithholdUnits(es, units, Reach{}, AlphaReach(opts.Level), ChanceReach, ChanceReach, AC2Reach(opts.Weights))
	})
	if s.Raters == 2 {
		c, err := r.Pair(s.Scale, r.raterNames[0], r.raterNames[1])
		if err != nil {
			return Summary{}, err
		}
		pairStats := []func(Contingency) Estimate{
			func(c Contingency) Estimate { return CohenKappa(c, opts.Weights) },
			func(c Contingency) Estimate { return ScottPi(c, NoWeights) },
			Spearman,
			KendallTauB,
		}
		if err := fill(pair, c, pairStats, opts.Bootstrap, BootstrapPairs); err != nil {
			return Summary{}, err
		}
		withholdEach(pair, func(es []Estimate) {
			WithholdPairs(es, c, KappaReach(opts.Weights), ChanceReach, Reach{}, Reach{})
		})
		if !Ordered(s.Scale, opts.Level) {
			// Ranks of unordered words are an artefact of their spelling;
			// a figure already undefined keeps its own reason.
			for _, e := range []*Estimate{&s.Spearman, &s.KendallTauB} {
				if e.Defined {
					*e = undefined(ReasonUnordered)
				}
			}
		}
	} else {
		setAll(pair, fmt.Sprintf("%s; the data have %d", ReasonNotTwoRaters, s.Raters))
		if s.Raters > 2 {
			s.ScottPi = undefined(fmt.Sprintf("%s; the data have %d, and fleiss_kappa is its generalization to more raters", ReasonNotTwoRaters, s.Raters))
		}
	}
	if s.Raters < 2 {
		// Counts alone cannot tell one rater from raters who never share an
		// item; the table can, and says the plainer thing.
		setAll(multi, ReasonFewRaters)
		setAll(pair, ReasonFewRaters)
	}
	return s, nil
}

// Ordered reports whether the categories of s have an order that rank
// statistics (Spearman's rho, Kendall's tau) may use: they are numbers, or
// the level declares them ordered (ordinal, interval or ratio). Words at
// the nominal level, such as YES, NO and NA, have none.
func Ordered(s *Scale, level Level) bool {
	return s != nil && (s.Numeric() || level != Nominal)
}

// fill computes stats on data into dst, with intervals when b is set.
func fill[T any](dst []*Estimate, data T, stats []func(T) Estimate, b *Bootstrap,
	boot func(T, Bootstrap, ...func(T) Estimate) ([]Estimate, error)) error {
	if b == nil {
		for i, f := range stats {
			*dst[i] = f(data)
		}
		return nil
	}
	es, err := boot(data, *b, stats...)
	if err != nil {
		return err
	}
	for i, e := range es {
		*dst[i] = e
	}
	return nil
}

// withholdEach applies f, a WithholdUnits or WithholdPairs, to the
// estimates dst points to.
func withholdEach(dst []*Estimate, f func([]Estimate)) {
	es := make([]Estimate, len(dst))
	for i, e := range dst {
		es[i] = *e
	}
	f(es)
	for i, e := range es {
		*dst[i] = e
	}
}

// fields lists the statistics under their JSON names, in output order.
func (s *Summary) fields() []struct {
	name string
	e    *Estimate
} {
	return []struct {
		name string
		e    *Estimate
	}{
		{"percent_agreement", &s.PercentAgreement},
		{"krippendorff_alpha", &s.KrippendorffAlpha},
		{"fleiss_kappa", &s.FleissKappa},
		{"scotts_pi", &s.ScottPi},
		{"gwet_ac1", &s.GwetAC1},
		{"gwet_ac2", &s.GwetAC2},
		{"cohen_kappa", &s.CohenKappa},
		{"spearman", &s.Spearman},
		{"kendall_tau_b", &s.KendallTauB},
	}
}

// MarshalJSON encodes the summary as described on Summary.
func (s Summary) MarshalJSON() ([]byte, error) {
	out := struct {
		Items             int                            `json:"n_items"`
		Raters            int                            `json:"n_raters"`
		PercentAgreement  Estimate                       `json:"percent_agreement"`
		KrippendorffAlpha Estimate                       `json:"krippendorff_alpha"`
		FleissKappa       Estimate                       `json:"fleiss_kappa"`
		ScottPi           Estimate                       `json:"scotts_pi"`
		GwetAC1           Estimate                       `json:"gwet_ac1"`
		GwetAC2           Estimate                       `json:"gwet_ac2"`
		CohenKappa        Estimate                       `json:"cohen_kappa"`
		Spearman          Estimate                       `json:"spearman"`
		KendallTauB       Estimate                       `json:"kendall_tau_b"`
		Notes             map[string]string              `json:"notes"`
		Intervals         map[string]*ConfidenceInterval `json:"intervals,omitempty"`
		Withheld          map[string]*NoInterval         `json:"intervals_withheld,omitempty"`
	}{
		Items: s.Items, Raters: s.Raters,
		PercentAgreement: s.PercentAgreement, KrippendorffAlpha: s.KrippendorffAlpha,
		FleissKappa: s.FleissKappa, ScottPi: s.ScottPi, GwetAC1: s.GwetAC1, GwetAC2: s.GwetAC2,
		CohenKappa: s.CohenKappa, Spearman: s.Spearman, KendallTauB: s.KendallTauB,
		Notes: map[string]string{},
	}
	for _, f := range s.fields() {
		if !f.e.Defined {
			out.Notes[f.name] = f.e.Reason
		}
		if f.e.Defined && f.e.CI != nil {
			if out.Intervals == nil {
				out.Intervals = map[string]*ConfidenceInterval{}
			}
			out.Intervals[f.name] = f.e.CI
		}
		if f.e.Defined && f.e.NoCI != nil {
			if out.Withheld == nil {
				out.Withheld = map[string]*NoInterval{}
			}
			out.Withheld[f.name] = f.e.NoCI
		}
	}
	return json.Marshal(out)
}
