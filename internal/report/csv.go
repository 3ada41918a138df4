package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/export"
)

// CSVHeader is the header row of WriteCSV. Each row is one figure:
//
//   - rubric_item: the rubric item's key, or engine:pass,
//     engine:safety_gate, engine:final_score for the engine's outputs,
//     calibration for a rater against gold on the calibration items
//     (calibration_accuracy, calibration_leniency, calibration_drifting: 1
//     or 0, with the rubric items that drift in note), or empty for a row
//     about the whole report;
//   - statistic: the figure's key, as in Report.Definitions (plus
//     mean_difference for final scores and na_treatment);
//   - rater_a_id, rater_a, rater_b_id, rater_b: whose figure it is: two
//     raters for a pair, one for an annotator or a judge (rater_b
//     "consensus" for a judge against the annotators' consensus), or
//     "annotators" in rater_a for a figure among all the annotators;
//   - n: the items it is computed over;
//   - value, ci_lower, ci_upper: the figure and its interval, empty when
//     undefined or not computed;
//   - note: why the figure is undefined, or why a figure shown has no
//     interval (agreement.NoInterval's text), or the value of a row that is
//     text (na_treatment), or how an alt-test figure was reached
//     (alt_test_epsilon, alt_test_passed with its scoring and ε,
//     alt_test_p_value saying whether the annotator's null hypothesis was
//     rejected).
var CSVHeader = []string{"rubric_item", "statistic", "rater_a_id", "rater_a", "rater_b_id", "rater_b", "n", "value", "ci_lower", "ci_upper", "note"}

// WriteCSV writes the report as CSV, one row per figure (see CSVHeader).
// A text cell a spreadsheet would run as a formula (starting with =, +, -,
// @, a tab or a carriage return) gets a leading apostrophe; numbers are
// written as numbers.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	names := map[int64]string{}
	for _, x := range r.Raters {
		names[x.ID] = x.Name
	}
	type who struct {
		id   int64
		name string
	}
	rater := func(id int64) who { return who{id, names[id]} }
	group := func(name string) who { return who{0, name} }
	none := who{}
	row := func(item, statistic string, a, b who, n int, s Stat) {
		rec := []string{cell(item), statistic, idCell(a.id), cell(a.name), idCell(b.id), cell(b.name), "", "", "", "", cell(s.Reason)}
		if n >= 0 {
			rec[6] = strconv.Itoa(n)
		}
		if s.Value != nil {
			rec[7] = num(*s.Value)
		}
		if s.CI != nil {
			rec[8], rec[9] = num(s.CI.Lower), num(s.CI.Upper)
		}
		if s.Withheld != nil && s.Reason == "" {
			rec[10] = cell(s.Withheld.String())
		}
		cw.Write(rec)
	}
	cw.Write(CSVHeader)
	cw.Write([]string{"", "na_treatment", "", "", "", "", "", "", "", "", r.NA})
	a := r.AltTest
	cw.Write([]string{"", "alt_test_epsilon", "", "", "", "", "", num(a.Epsilon), "", "", "scoring " + a.Scoring + ", q " + num(a.Q) + ", at least " + strconv.Itoa(a.MinItems) + " items per annotator"})
	for _, it := range r.RubricItems {
		all := group("annotators")
		st := it.Statistics
		for _, f := range []struct {
			name string
			s    Stat
		}{
			{"percent_agreement", st.PercentAgreement}, {"krippendorff_alpha", st.KrippendorffAlpha}, {"fleiss_kappa", st.FleissKappa},
			{"gwet_ac1", st.GwetAC1}, {"gwet_ac2", st.GwetAC2}, {"lights_kappa", st.LightsKappa},
		} {
			row(it.Key, f.name, all, none, it.Items, f.s)
		}
		for _, p := range it.Pairs {
			row(it.Key, "percent_agreement", rater(p.A), rater(p.B), p.N, p.Agreement)
			row(it.Key, "cohen_kappa", rater(p.A), rater(p.B), p.N, p.CohenKappa)
			if p.Spearman != nil {
				row(it.Key, "spearman", rater(p.A), rater(p.B), p.N, *p.Spearman)
			}
		}
		for _, a := range it.Annotators {
			row(it.Key, "agreement_with_others", rater(a.Rater), none, a.Shared, a.Agreement)
			row(it.Key, "kappa_mean", rater(a.Rater), none, a.Shared, a.KappaMean)
			row(it.Key, "leniency", rater(a.Rater), none, a.Shared, a.Leniency)
		}
		for _, j := range it.Judges {
			row(it.Key, "kappa_mean", rater(j.Rater), group("annotators"), j.Items, j.KappaMean)
			c := j.Consensus
			row(it.Key, "percent_agreement", rater(j.Rater), group("consensus"), c.N, c.Agreement)
			row(it.Key, "cohen_kappa", rater(j.Rater), group("consensus"), c.N, c.CohenKappa)
			row(it.Key, "alpha_with_judge", rater(j.Rater), none, j.Items, j.AlphaWithJudge)
			a := j.AltTest
			how := "scoring " + a.Scoring + ", epsilon " + num(a.Epsilon)
			if a.EpsilonUnusual {
				how += " (unusual)"
			}
			passed := value(0)
			if a.Passed {
				passed = value(1)
			}
			switch {
			case a.Result == "cannot_tell":
				passed = Stat{Reason: "cannot tell: " + a.Reason}
			case a.FewHumans:
				passed.Reason = how + "; " + a.Reason
			default:
				passed.Reason = how
			}
			row(it.Key, "alt_test_passed", rater(j.Rater), group("annotators"), a.Tested, passed)
			row(it.Key, "alt_test_winning_rate", rater(j.Rater), group("annotators"), a.Tested, a.WinningRate)
			row(it.Key, "alt_test_advantage_probability", rater(j.Rater), group("annotators"), a.Tested, a.AdvantageProbability)
			for _, h := range a.Humans {
				p := Stat{Reason: "not tested: fewer than " + strconv.Itoa(a.MinItems) + " items"}
				if h.PValue != nil {
					p = value(*h.PValue)
					p.Reason = "not rejected: the judge does not win this annotator"
					if h.Rejected {
						p.Reason = "rejected: the judge wins this annotator"
					}
					p.Reason += " (" + *h.Test + " test)"
				}
				row(it.Key, "alt_test_p_value", rater(j.Rater), rater(h.Rater), h.Items, p)
			}
		}
	}
	outcome := func(name string, o *Outcome) {
		if o == nil {
			return
		}
		all := group("annotators")
		row(name, "percent_agreement", all, none, o.Items, o.PercentAgreement)
		row(name, "krippendorff_alpha", all, none, o.Items, o.KrippendorffAlpha)
		row(name, "gwet_ac1", all, none, o.Items, o.GwetAC1)
		for _, p := range o.Pairs {
			row(name, "percent_agreement", rater(p.A), rater(p.B), p.N, p.Agreement)
			row(name, "cohen_kappa", rater(p.A), rater(p.B), p.N, p.CohenKappa)
		}
		for _, j := range o.Judges {
			row(name, "percent_agreement", rater(j.Rater), group("consensus"), j.Consensus.N, j.Consensus.Agreement)
			row(name, "cohen_kappa", rater(j.Rater), group("consensus"), j.Consensus.N, j.Consensus.CohenKappa)
		}
	}
	outcome("engine:pass", r.Engine.Pass)
	outcome("engine:safety_gate", r.Engine.SafetyGate)
	for _, p := range r.Engine.Score.Pairs {
		row("engine:final_score", "spearman", rater(p.A), rater(p.B), p.N, p.Spearman)
		row("engine:final_score", "kendall_tau_b", rater(p.A), rater(p.B), p.N, p.Kendall)
		row("engine:final_score", "mean_difference", rater(p.A), rater(p.B), p.N, p.MeanDiff)
	}
	for _, j := range r.Engine.Score.Judges {
		row("engine:final_score", "spearman", rater(j.Rater), group("consensus"), j.N, j.Spearman)
	}
	for _, c := range r.Calibration {
		// Named from the entry itself: a person still qualifying has no
		// label, so is not among r.Raters.
		w := who{c.Rater, c.Name}
		row("calibration", "calibration_accuracy", w, none, c.N, value(c.Accuracy))
		lenient := Stat{Reason: "no numeric rubric item"}
		if c.Leniency != nil {
			lenient = value(*c.Leniency)
		}
		row("calibration", "calibration_leniency", w, none, c.N, lenient)
		drifting := value(0)
		if c.Drifting {
			drifting = value(1)
			drifting.Reason = "drifting on " + strings.Join(c.DriftingOn, " ")
		}
		row("calibration", "calibration_drifting", w, none, c.N, drifting)
	}
	cw.Flush()
	return cw.Error()
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func idCell(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// cell neutralises a text cell that a spreadsheet would run as a formula,
// by the one rule every attune export follows.
func cell(s string) string { return export.Neutralise(s) }
