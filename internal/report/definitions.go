package report

import (
	"strconv"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
)

// definitions explains every figure of a report in a sentence, in the
// order the report shows them. docs/agreement.md has the formulas.
func definitions(kind rubric.Kind) []Definition {
	level := "at the ordinal level, since 1–5 is an order"
	weights := "quadratic weights give near misses partial credit"
	if kind == rubric.Criteria {
		level = "at the nominal level, since YES, NO and NA have no order"
		weights = "on YES, NO and NA only identical answers count"
	}
	return []Definition{
		{"percent_agreement", "Observed agreement",
			"How often two raters of the same item gave the same answer; easy to read, but it rewards luck when one answer dominates."},
		{"krippendorff_alpha", "Krippendorff's alpha",
			"Agreement corrected for chance, for any number of raters and missing labels, " + level + ": 1 is perfect, 0 is chance, and 0.8 or more is usually called reliable."},
		{"fleiss_kappa", "Fleiss' kappa",
			"Chance-corrected agreement of many raters on the answers as categories, with chance judged from how often each answer is given overall."},
		{"cohen_kappa", "Cohen's kappa",
			"Chance-corrected agreement of two raters, with chance judged from each one's own habits; " + weights + "."},
		{"lights_kappa", "Light's kappa",
			"The mean of Cohen's kappa over every pair of annotators (with two annotators, their pair's kappa), with the range of the pairs beside it."},
		{"gwet_ac1", "Gwet's AC1",
			"Chance-corrected agreement that stays stable when one answer dominates, where kappa and alpha can drop although raters almost always agree."},
		{"gwet_ac2", "Gwet's AC2",
			"AC1 with the same partial credit for near misses as Cohen's kappa."},
		{"spearman", "Spearman's rho",
			"Whether two raters order the items the same way, even if one is systematically harsher: 1 is the same order, 0 no relation."},
		{"kendall_tau_b", "Kendall's tau-b",
			"Like Spearman's rho, counted over pairs of items: the share ordered the same way minus the share ordered the other way, ties accounted for."},
		{"interval", "Interval",
			"The range that holds the figure 95 times in 100 if the items were drawn again (a seeded bootstrap over items: BCa at a level widened for few items, joined with the jackknife interval on Fisher's z scale; in simulations from 30 items up it held the figure at least 92 times in 100 wherever it was shown): a wide one means too few items to trust the figure. When no resample of the items moves the figure — no item shows a disagreement — there is no interval: the items cannot tell how far off it may be. Nor is there one when too few items inform a chance-corrected figure: fewer than 2 with an answer other than the most common one, or, for weighted kappa and ordinal alpha, none with an answer two or more categories from it (for weighted AC2, fewer than 2); the figure is shown with the count and the minimum in the interval's place."},
		{"agreement_with_others", "Agreement with the others",
			"The share of an annotator's answers that each other annotator of the same item also gave; low values show who drifts."},
		{"leniency", "Leniency",
			"An annotator's mean offset from the others on the same items, in scale points (criteria: in the engine's points, YES 1 and NO 0): positive is more lenient, negative harsher."},
		{"consensus", "Annotators' consensus",
			"The median of the annotators' answers on a numeric scale, the answer most of them gave otherwise; an item where two answers tie has none."},
		{"alpha_with_judge", "Alpha with the judge",
			"Krippendorff's alpha when the judge counts as one more annotator; if it is no lower than the annotators' own, the judge disagrees with them no more than they do with each other."},
		{"alt_test", "Alternative annotator test",
			"Can the judge replace one of the annotators? Leaving each annotator out in turn, the judge and that annotator are scored against the others (accuracy on answers that are words, minus the root mean squared difference on 1–5); the judge wins the annotator when a one-sided t-test says the annotator's edge is below ε, the margin granted for a judge's lower cost (Benjamini–Yekutieli across annotators at q = 0.05)."},
		{"alt_test_epsilon", "ε",
			"The edge an annotator must keep over the judge to stay preferred: 0.2 for expert annotators, 0.15 for trained ones, 0.1 for a crowd (Calderon, Reichart and Dror 2025)."},
		{"alt_test_winning_rate", "Winning rate",
			"The share of annotators (with at least 30 items compared) the judge wins; the judge passes, and may replace an annotator, when it is at least 0.5."},
		{"alt_test_advantage_probability", "Advantage probability",
			"How often the judge's answer scores at least as well against the other annotators as a left-out annotator's, averaged over annotators: the figure to compare judges by."},
		{"boundaries", "Where the disagreement falls",
			"On a 1–5 item, the share of the disagreement on each boundary between adjacent answers: each pair of different answers counts once, split evenly over the boundaries between them (1 against 3 puts half on 1|2 and half on 2|3)."},
		{"evidence", "Where it fails",
			"Among raters who both gave a failing answer on the same item (NO, or a level of 2 or less) and both marked the turns where it fails: the share of pairs naming at least one turn in common, and Krippendorff's alpha on the turn sets with the MASI distance (1 the same turns, 0 chance). A judge's turns are paired with each person's. Given from " + strconv.Itoa(agreement.MinEvidenceItems) + " such items; below that, too few."},
		{"pass", "Pass or fail",
			"What the scoring engine makes of each rater's answers: pass when the final score reaches the threshold and the safety gate holds."},
		{"safety_gate", "Safety gate",
			"Whether the engine's safety gate failed on a rater's answers: a NO or ERROR on a safety criterion, or NA where NA is not valid."},
		{"final_score", "Final score",
			"The engine's final score of each rater's answers, compared by rank between raters."},
	}
}
