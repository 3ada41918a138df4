// Package agreement computes inter-rater agreement over a raters × items
// table with missing values: observed agreement, Cohen's kappa, Scott's pi,
// Fleiss' kappa, Krippendorff's alpha, Gwet's AC1 and AC2, Spearman's rho and
// Kendall's tau-b, with seeded bootstrap intervals; and the alternative
// annotator test (alt-test) of whether a judge can stand in for one of the
// human raters. It imports only the standard library.
//
// # Counts in, statistics out
//
// Every statistic is computed from counts, never from labels, so that a
// report over millions of labels needs memory in proportion to the number of
// answer categories and patterns:
//
//   - multi-rater statistics take Units: each distinct vector of per-item
//     category counts (r_ik, how many raters put item i in category k) with
//     the number of items sharing it, as SQL returns from GROUP BY;
//   - pairwise statistics take a Contingency, the q×q table of two raters'
//     paired answers.
//
// Ratings, ReadLongCSV and Summarize build those counts from raw (item,
// rater, value) triples for the CLI and for tests.
//
// # Definitions
//
// Where the literature differs, the package chooses:
//
//   - Percent agreement is the mean, over items with at least two ratings, of
//     the share of agreeing pairs of ratings (Fleiss 1971; Gwet 2014).
//   - Pairwise statistics (Cohen's kappa, Scott's pi, Spearman, Kendall) use
//     the items both raters rated.
//   - Krippendorff's alpha uses pairable values only (an item rated once
//     drops out) and the difference functions of Krippendorff (2011); the
//     ordinal one counts marginal mid-ranks of the pairable values.
//   - Fleiss' kappa and Gwet's AC1/AC2 treat missing ratings as Gwet (2014):
//     p_a over items with two or more ratings, category shares π_k averaged
//     over every rated item. AC1/AC2 use q, the number of categories on the
//     declared scale, whether or not they were used.
//   - Cohen's (and Scott's) weights are computed over category positions
//     1..q; AC2's and weighted Fleiss' over category values. OrdinalWeights
//     is Gwet's ordinal weighting, which uses ranks only.
//   - Spearman's rho is the Pearson correlation of mid-ranks; Kendall's tau
//     is tau-b.
//   - 0/0 is undefined, never 0 or 1: a statistic that cannot be computed is
//     an Estimate with Defined false and a Reason, never NaN.
//
// # Degenerate cases
//
// No item with two ratings (or, for a pair, no item both rated): every
// statistic is undefined (ReasonNoPairable). Fewer than two raters:
// Summarize reports every statistic undefined (ReasonFewRaters). Every
// answer in one category: kappa, pi, Fleiss' kappa and alpha are undefined
// (ReasonNoVariation) since chance agreement is 1; percent agreement and
// Gwet's AC1/AC2 are 1; Spearman and Kendall are undefined when either rater
// used one category, and in Summarize on categories without an order
// (words at the nominal level: see Ordered). A scale of one category: AC1/AC2 are undefined
// (ReasonFewCategories). Interval or ratio alpha on a non-numeric scale:
// undefined (ReasonNotNumeric).
//
// # The alt-test
//
// AltTally counts, item by item, how often a judge's answer scores at least
// as well against the other humans as a left-out human's does, and AltTest
// turns those counts into the test of Calderon, Reichart and Dror (ACL
// 2025): a one-sided t-test per human, Benjamini–Yekutieli across humans,
// the winning rate and the advantage probability. Student's t distribution
// is computed here from the regularized incomplete beta function.
//
// docs/agreement.md explains each statistic for a reader of the report.
package agreement
