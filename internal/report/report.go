// Package report builds a project's agreement report: how far annotators
// agree with each other, how far each LLM judge agrees with them, and how
// far they agree on the scoring engine's outputs. It reads the project's
// answer sets once from the store, folds them into counts — the per-item
// count patterns and the two-rater contingency tables that
// internal/agreement computes every statistic from — and scores each answer
// set with internal/scoring. Memory grows with the number of raters and
// answer categories, never with the number of labels.
//
// The report is a plain value with JSON tags; WriteCSV writes it as one row
// per figure. Neither knows about HTTP.
package report

import (
	"fmt"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/probe"
)

// Options choose what a report covers.
type Options struct {
	// Annotators and Judges keep only these raters (ids of raters, people
	// and judges respectively); nil keeps every one with answers in the
	// project.
	Annotators, Judges []int64
	// Rubric is the rubric version asked for (key@version); "" is the
	// project's. A project labels with one version for its whole life, so
	// any other version is refused.
	Rubric string
	// From and To keep labels first made on or after From and before To;
	// zero leaves that end open.
	From, To time.Time
	// NAMissing treats NA as a missing label rather than as an answer
	// category of its own.
	NAMissing bool
	// Bootstrap sets the intervals. Replicates 0 computes no interval.
	Bootstrap agreement.Bootstrap
	// Level is Krippendorff's level of alpha on every rubric item:
	// nominal, ordinal, interval or ratio. "" picks ordinal on a numeric
	// scale and nominal otherwise.
	Level string
	// Alt sets the alternative annotator test of each judge.
	Alt AltOptions
	// EstimateJudge, when set, adds the prediction-powered estimates of
	// every rubric item for that judge (a rater id or a judge's name).
	EstimateJudge string
}

// AltOptions set the alternative annotator test.
type AltOptions struct {
	// Epsilon is ε, the margin granted to a judge for being cheaper than
	// a person, strictly between 0 and 1 and from 0.05 to 0.3 unless
	// AllowUnusualEpsilon (the paper: 0.2 for expert annotators, 0.15 for
	// trained ones, 0.1 for a crowd); callers that take it from a person
	// default to DefaultEpsilon.
	Epsilon float64
	// AllowUnusualEpsilon accepts an ε outside 0.05 to 0.3; the report
	// marks it unusual.
	AllowUnusualEpsilon bool
	// AllowFewHumans gives each judge a verdict on one or two tested
	// annotators, said beside it ("passed, but on 2 annotators"); without
	// it the verdict there is "cannot tell".
	AllowFewHumans bool
	// Scoring is accuracy or neg_rmse for every rubric item; "" picks
	// neg_rmse on a numeric scale (1–5) and accuracy otherwise. neg_rmse
	// on a rubric whose answers are not numbers is refused.
	Scoring string
	// MinItems is the least number of compared items for an annotator to
	// be tested; 0 is agreement.DefaultAltMinItems (30).
	MinItems int
}

// DefaultEpsilon is the ε a project's report uses unless asked otherwise:
// the paper's value for trained annotators, who are what a project's
// annotators usually are. Experts warrant 0.2, a crowd 0.1.
const DefaultEpsilon = agreement.AltEpsilonTrained

// DefaultBootstrap is the report's interval setting: 1,000 replicates,
// 95%, and a fixed seed, so that the same labels always give the same
// report. Fewer replicates give visibly unstable 95% limits.
var DefaultBootstrap = agreement.Bootstrap{Replicates: 1000, Level: 0.95, Seed: 20240601}

// Report is a project's agreement report.
type Report struct {
	Project Project `json:"project"`
	Filter  Filter  `json:"filter"`
	// NA says how NA was treated: "category" or "missing".
	NA string `json:"na"`
	// NANote says the same in a sentence.
	NANote    string    `json:"na_note"`
	Bootstrap Bootstrap `json:"bootstrap"`
	// AltTest is how every judge's alternative annotator test was run.
	AltTest AltSettings `json:"alt_test"`
	// Raters are every rater the report covers: annotators, then judges.
	Raters []Rater `json:"raters"`
	// RubricItems hold the agreement on each dimension or criterion, in
	// the rubric's order.
	RubricItems []RubricItem `json:"rubric_items"`
	Engine      Engine       `json:"engine"`
	// Calibration is every rater's standing on the project's calibration
	// items (people first), over their whole history whatever the filter:
	// how often they match gold, how lenient they are, and whether that
	// has changed. Empty when nobody has answered a calibration item.
	Calibration []RaterCalibration `json:"calibration"`
	// Definitions explain every figure in a sentence.
	Definitions []Definition `json:"definitions"`
	// Estimates are the prediction-powered estimates of each rubric item
	// per system for Options.EstimateJudge, as `attune estimate` gives
	// them; left out without a judge.
	Estimates []evaluation.Estimates `json:"estimates,omitempty"`
}

// Project names the project a report is about.
type Project struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Rubric string `json:"rubric"`      // key@version
	Kind   string `json:"rubric_kind"` // likert, criteria or single
}

// Filter is what the report was asked to cover.
type Filter struct {
	Annotators []int64 `json:"annotators"` // the raters kept: people
	Judges     []int64 `json:"judges"`     // and judges
	Rubric     string  `json:"rubric"`
	From       string  `json:"from,omitempty"` // YYYY-MM-DD, or empty: open
	To         string  `json:"to,omitempty"`   // YYYY-MM-DD, exclusive
}

// Bootstrap is how the intervals were computed.
type Bootstrap struct {
	Replicates int     `json:"replicates"`
	Level      float64 `json:"level"`
	Seed       uint64  `json:"seed"`
}

// AltSettings are the alt-test's settings for the whole report.
type AltSettings struct {
	Epsilon float64 `json:"epsilon"`
	// Scoring is the scoring asked for, or "default": neg_rmse on numeric
	// rubric items, accuracy on the others (each judge's alt_test says
	// which it used).
	Scoring  string  `json:"scoring"`
	Q        float64 `json:"q"`
	MinItems int     `json:"min_items"`
	// EpsilonUnusual is set when ε is outside 0.05 to 0.3 (asked for
	// explicitly); AllowFewHumans when a verdict on fewer than three
	// tested annotators was allowed.
	EpsilonUnusual bool `json:"epsilon_unusual"`
	AllowFewHumans bool `json:"allow_few_annotators"`
	// TTestFrom is the least number of items an annotator's test is a
	// t-test on; with fewer it is the exact test.
	TTestFrom int `json:"t_test_from"`
}

// Rater is one rater of the report.
type Rater struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"` // human or judge
	// Imported marks a person brought in by a labels import, who has no
	// account.
	Imported   bool `json:"imported,omitempty"`
	AnswerSets int  `json:"answer_sets"`
}

// RaterCalibration is one rater's standing against gold on the project's
// calibration items.
type RaterCalibration struct {
	Rater int64  `json:"rater"`
	Name  string `json:"name"`
	Kind  string `json:"kind"` // human or judge
	calibration.Summary
	// Runs is a judge's sentinel series: its accuracy on the calibration
	// items in each run, oldest first (people have none). StepAt are the
	// runs of it whose accuracy stepped away from the runs before, as a
	// provider's silent change of model would.
	Runs   []calibration.RunPoint `json:"runs,omitempty"`
	StepAt []calibration.RunPoint `json:"steps,omitempty"`
}

// Stat is one figure: its value, or why it has none, and its interval.
type Stat struct {
	Value  *float64                      `json:"value"`
	Reason string                        `json:"reason,omitempty"`
	CI     *agreement.ConfidenceInterval `json:"ci,omitempty"`
	// Withheld says why a figure that was bootstrapped has no interval:
	// every resample gave it back, or too few items inform it (its
	// agreement.Reach), with the count and the minimum.
	Withheld *agreement.NoInterval `json:"ci_withheld,omitempty"`
}

// stat turns an agreement estimate into a Stat.
func stat(e agreement.Estimate) Stat {
	if !e.Defined {
		return Stat{Reason: e.Reason}
	}
	v := e.Value
	return Stat{Value: &v, CI: e.CI, Withheld: e.NoCI}
}

// value is a Stat without an interval.
func value(v float64) Stat { return Stat{Value: &v} }

// RubricItem is the agreement on one dimension or criterion.
type RubricItem struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	// Scale is the answer categories counted, in order; NA is left out
	// when it is treated as missing.
	Scale   []string `json:"scale"`
	Level   string   `json:"level"`   // Krippendorff's level: nominal, ordinal, interval or ratio
	Weights string   `json:"weights"` // of Cohen's kappa and AC2: quadratic or none
	// Items and Raters count the items the annotators labelled on this
	// rubric item and the annotators who did.
	Items  int `json:"n_items"`
	Raters int `json:"n_raters"`
	// Missing counts the labels left out: ERROR (a failed judge call),
	// and NA when NA is missing or this rubric item does not allow it.
	Missing Missing `json:"missing"`
	// Statistics are among the annotators.
	Statistics Statistics `json:"statistics"`
	// Pairs hold every pair of raters (annotators and judges) who share
	// items, with their confusion matrix.
	Pairs      []Pair      `json:"pairs"`
	Annotators []Annotator `json:"annotators"`
	Judges     []JudgeItem `json:"judges"`
	// Boundaries, on a numeric scale (1–5), say on which boundary between
	// adjacent answers the disagreement falls; nil on other scales.
	Boundaries *Boundaries `json:"boundaries,omitempty"`
	// Evidence is the agreement on the turns marked where this rubric
	// item fails, on a rubric item whose answers can fail; nil on others.
	Evidence *EvidenceAgreement `json:"evidence,omitempty"`
}

// Boundaries is where a numeric rubric item's disagreement falls
// (agreement.SplitByBoundary; docs/agreement.md): among the annotators,
// every pair of them; for each judge, its pairs with each annotator.
type Boundaries struct {
	Annotators agreement.BoundarySplit `json:"annotators"`
	Judges     []JudgeBoundaries       `json:"judges"`
	// Guidance is the rubric's guidance on each boundary, in the order of
	// the boundaries.
	Guidance []BoundaryGuidance `json:"guidance"`
}

// JudgeBoundaries is where one judge's disagreement with the annotators
// falls.
type JudgeBoundaries struct {
	Rater int64 `json:"rater"`
	agreement.BoundarySplit
}

// BoundaryGuidance is the rubric's guidance on one boundary: the texts of
// its rules titled for it ("3 vs 4"), none when it has none.
type BoundaryGuidance struct {
	Lower string   `json:"lower"`
	Upper string   `json:"upper"`
	Texts []string `json:"texts"`
}

// Missing counts labels that are not answers on the scale.
type Missing struct {
	Errors int `json:"errors"`
	NA     int `json:"na"`
}

// Statistics are the multi-rater figures among the annotators.
type Statistics struct {
	PercentAgreement  Stat `json:"percent_agreement"`
	KrippendorffAlpha Stat `json:"krippendorff_alpha"`
	FleissKappa       Stat `json:"fleiss_kappa"`
	GwetAC1           Stat `json:"gwet_ac1"`
	GwetAC2           Stat `json:"gwet_ac2"`
	// LightsKappa is Light's kappa: the mean of Cohen's kappa over the
	// pairs of annotators, whose range LightsKappaMin and LightsKappaMax
	// give; with exactly two annotators it is their pair's kappa, with its
	// interval. Every pair's own interval is under Pairs. (It was called
	// cohen_kappa before; docs/agreement.md keeps the note.)
	LightsKappa      Stat     `json:"lights_kappa"`
	LightsKappaPairs int      `json:"lights_kappa_pairs"`
	LightsKappaMin   *float64 `json:"lights_kappa_min,omitempty"`
	LightsKappaMax   *float64 `json:"lights_kappa_max,omitempty"`
}

// Pair is two raters on one rubric item.
type Pair struct {
	A int64 `json:"a"`
	B int64 `json:"b"`
	// N counts the items both labelled.
	N          int  `json:"n"`
	Agreement  Stat `json:"percent_agreement"`
	CohenKappa Stat `json:"cohen_kappa"`
	// Spearman is given for numeric scales.
	Spearman *Stat `json:"spearman,omitempty"`
	// Confusion[k][l] counts the items A put in category k and B in l.
	Confusion [][]int `json:"confusion"`
}

// Annotator is one annotator against the others on one rubric item.
type Annotator struct {
	Rater int64 `json:"rater"`
	// Items counts the items they labelled here; Shared those another
	// annotator labelled too.
	Items  int `json:"n_items"`
	Shared int `json:"n_shared"`
	// Agreement is the share of their answers that another annotator of
	// the same item gave too, over every other annotator.
	Agreement Stat `json:"agreement"`
	// KappaMean is the mean of their Cohen's kappa with each other
	// annotator.
	KappaMean Stat `json:"kappa_mean"`
	// Leniency is their mean offset from the other annotators on the same
	// items: in scale points on a numeric scale, in the engine's points
	// (YES 1, NO 0, NA as the rubric scores it) on a criteria rubric.
	// Positive is more lenient, negative harsher.
	Leniency Stat `json:"leniency"`
}

// JudgeItem is one judge against the annotators on one rubric item.
type JudgeItem struct {
	Rater int64 `json:"rater"`
	// Items counts the items the judge answered here; Shared those of
	// them at least one annotator answered too, the only ones it can be
	// held against the people on.
	Items  int `json:"n_items"`
	Shared int `json:"n_shared"`
	// VsAnnotators is the judge's kappa with each annotator.
	VsAnnotators []Versus `json:"vs_annotators"`
	// KappaMean is the mean of those kappas; AnnotatorKappaMin and Max the
	// range of the annotators' kappas with each other.
	KappaMean         Stat     `json:"kappa_mean"`
	AnnotatorKappaMin *float64 `json:"annotator_kappa_min,omitempty"`
	AnnotatorKappaMax *float64 `json:"annotator_kappa_max,omitempty"`
	// Consensus is the judge against the annotators' consensus: the
	// median on a numeric scale, the majority answer otherwise (items
	// without a majority are left out).
	Consensus Consensus `json:"consensus"`
	// Alpha is Krippendorff's alpha among the annotators; AlphaWithJudge
	// the same with the judge as one more rater.
	Alpha          Stat `json:"alpha_annotators"`
	AlphaWithJudge Stat `json:"alpha_with_judge"`
	// AltTest is the alternative annotator test: can the judge replace
	// one of the annotators on this rubric item? Its Passed is the
	// headline verdict.
	AltTest AltTest `json:"alt_test"`
	// Verdict says the alt-test's answer in words, with alpha with and
	// without the judge, and the probes' when one failed.
	Verdict string `json:"verdict"`
	// Probes are the judge's latest completed robustness probe on this
	// rubric item (docs/judges.md, "Robustness probes"), with ProbeRun its
	// run; nil when the judge and prompt version have none.
	Probes   *probe.Summary `json:"probes,omitempty"`
	ProbeRun int64          `json:"probe_run,omitempty"`
	// Certification is the alt-test's verdict in a word (AltWord) joined
	// with the probes by probe.Certify: a pass with a probe that failed
	// its threshold is "passed, but unstable".
	Certification string `json:"certification"`
}

// AltWord says a judge's alternative annotator test on one rubric item in
// a word: without a winning rate there was too little in common with the
// people to tell. With one or two annotators tested the test gives no
// verdict ("cannot tell", with the progress towards one) unless the lead
// allowed one, and then it says what it rests on.
func AltWord(a AltTest) string {
	switch {
	case (a.WinningRate.Value == nil || a.Result == "cannot_tell") && a.Progress != "":
		return "cannot tell: " + a.Progress
	case a.WinningRate.Value == nil, a.Result == "cannot_tell":
		return "cannot tell"
	case a.Passed && a.FewHumans:
		return fmt.Sprintf("passed, but on %d %s", a.Tested, annotatorWord(a.Tested))
	case a.Passed:
		return "passed"
	case a.FewHumans:
		return fmt.Sprintf("failed, on %d %s", a.Tested, annotatorWord(a.Tested))
	}
	return "failed"
}

func annotatorWord(n int) string {
	if n == 1 {
		return "annotator"
	}
	return "annotators"
}

// AltTest is one judge's alternative annotator test on one rubric item
// (Calderon, Reichart and Dror 2025; docs/agreement.md).
type AltTest struct {
	Epsilon        float64 `json:"epsilon"`
	EpsilonUnusual bool    `json:"epsilon_unusual"`
	Scoring        string  `json:"scoring"` // accuracy or neg_rmse
	Q              float64 `json:"q"`
	MinItems       int     `json:"min_items"`
	TTestFrom      int     `json:"t_test_from"`
	// Humans are the annotators with at least one item compared with
	// the judge, tested or not.
	Humans []AltHuman `json:"humans"`
	// Tested counts the annotators tested (with MinItems or more items).
	Tested int `json:"n_tested"`
	// WinningRate is the share of tested annotators the judge wins;
	// AdvantageProbability the mean over them of the share of items where
	// the judge scored at least as well as the annotator. Undefined when
	// no annotator is tested. Both have the shape of agreement.AltFigure,
	// as everywhere the alt-test is written: {"value": v} or {"value":
	// null, "reason": why}.
	WinningRate          Stat `json:"winning_rate"`
	AdvantageProbability Stat `json:"advantage_probability"`
	// Result is the verdict: passed, failed or cannot_tell (no annotator
	// tested, or fewer than three and no verdict on so few allowed).
	// Passed is Result == passed: the judge may replace one of these
	// annotators here. FewHumans marks a verdict given on one or two
	// annotators because it was allowed; Reason says why the result is
	// cannot_tell, or that caveat.
	Result    string `json:"result"`
	Passed    bool   `json:"passed"`
	FewHumans bool   `json:"few_annotators"`
	Reason    string `json:"reason,omitempty"`
	// Progress says, when the result is cannot_tell for want of items or
	// annotators, how far the project is from a verdict
	// (agreement.AltProgress): "0 of 3 annotators with 30 shared items;
	// the closest of the others has 18 of 30".
	Progress string `json:"progress,omitempty"`
}

// AltHuman is one annotator's part in a judge's alt-test.
type AltHuman struct {
	Rater int64 `json:"rater"`
	// Items counts the items compared: this annotator, another one and
	// the judge answered them.
	Items  int  `json:"n_items"`
	Tested bool `json:"tested"`
	// Test is the test of the p-value: "t", or "exact" below TTestFrom
	// items; nil when not tested.
	Test *string `json:"test"`
	// JudgeAdvantage is the share of those items where the judge scored
	// at least as well as this annotator against the others.
	JudgeAdvantage float64 `json:"judge_advantage"`
	// PValue is the one-sided p-value of "this annotator's advantage over
	// the judge is at least ε", PAdjusted the Benjamini–Yekutieli
	// adjusted one; nil when not tested.
	PValue    *float64 `json:"p_value"`
	PAdjusted *float64 `json:"p_adjusted"`
	// Rejected is whether the judge wins this annotator.
	Rejected bool `json:"rejected"`
}

// Versus is a judge's kappa with one annotator.
type Versus struct {
	Rater int64 `json:"rater"`
	N     int   `json:"n"`
	Kappa Stat  `json:"cohen_kappa"`
}

// Consensus is a rater against the annotators' consensus.
type Consensus struct {
	N          int      `json:"n"`
	Agreement  Stat     `json:"percent_agreement"`
	CohenKappa Stat     `json:"cohen_kappa"`
	Confusion  [][]int  `json:"confusion"` // rows: the judge; columns: the consensus
	Spearman   *Stat    `json:"spearman,omitempty"`
	Scale      []string `json:"scale,omitempty"` // set when it differs from the rubric item's
}

// Engine is the agreement on what the scoring engine makes of each rater's
// answers: pass or fail, the safety gate, and the final score.
type Engine struct {
	Kind string `json:"rubric_kind"`
	// Scored counts the complete answer sets scored; Incomplete those
	// left out because they miss a rubric item (imported partial sets),
	// which the engine would score as ERROR.
	Scored     int `json:"scored"`
	Incomplete int `json:"incomplete"`
	// Pass and SafetyGate are set for criteria rubrics.
	Pass       *Outcome `json:"pass,omitempty"`
	SafetyGate *Outcome `json:"safety_gate,omitempty"`
	Score      Scores   `json:"final_score"`
}

// Outcome is the agreement on a yes-or-no output of the engine.
type Outcome struct {
	Scale []string `json:"scale"`
	// Items, Raters and the statistics are among the annotators.
	Items             int    `json:"n_items"`
	Raters            int    `json:"n_raters"`
	PercentAgreement  Stat   `json:"percent_agreement"`
	KrippendorffAlpha Stat   `json:"krippendorff_alpha"`
	GwetAC1           Stat   `json:"gwet_ac1"`
	Pairs             []Pair `json:"pairs"`
	// Judges are each judge against the annotators' majority.
	Judges []JudgeOutcome `json:"judges"`
}

// JudgeOutcome is a judge against the annotators' consensus on an output.
type JudgeOutcome struct {
	Rater     int64     `json:"rater"`
	Consensus Consensus `json:"consensus"`
}

// Scores is the rank agreement on final scores.
type Scores struct {
	Pairs []ScorePair `json:"pairs"`
	// Judges are each judge against the annotators' median score.
	Judges []ScoreJudge `json:"judges"`
}

// ScoreJudge is a judge's final scores against the annotators' median
// score, over the items both have.
type ScoreJudge struct {
	Rater    int64 `json:"rater"`
	N        int   `json:"n"`
	Spearman Stat  `json:"spearman"`
}

// ScorePair is two raters' final scores over the items both labelled.
type ScorePair struct {
	A        int64 `json:"a"`
	B        int64 `json:"b"`
	N        int   `json:"n"`
	Spearman Stat  `json:"spearman"`
	Kendall  Stat  `json:"kendall_tau_b"`
	// MeanDiff is the mean of A's score minus B's.
	MeanDiff Stat `json:"mean_difference"`
}

// Definition explains one figure.
type Definition struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	Sentence string `json:"sentence"`
}
