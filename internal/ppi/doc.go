// Package ppi estimates how good a system is from many judge ratings and a
// few human labels, by prediction-powered inference (PPI; Angelopoulos et
// al., Science 2023) with the power tuning of PPI++ (Angelopoulos, Duchi
// and Zrnic, 2023). It also plans more labels and draws the items to
// label. It imports only the standard library.
//
// # The method
//
// People label n items; a judge rates those and N more. The judge's mean
// over everything is precise but carries the judge's bias; the people's
// mean over their n items is unbiased but wide. PPI keeps the precision and
// removes the bias: it takes the judge's mean on the N unlabelled items and
// adds the judge's average error as measured on the n labelled ones,
//
//	θ̂ = λ·mean(judge on N) + mean(human − λ·judge on n).
//
// λ weighs how far the judge is trusted. Tuned as Cov(human, judge) /
// ((1 + n/N)·Var(judge)) — the covariance on the labelled items, the
// judge's variance on all of them — and clipped to [0, 1], it makes the interval about
// as narrow as the data allow: a judge that tracks the people gets λ near
// 1, one that does not gets λ near 0, and PPI then falls back to the
// human-only mean, so it is never much wider than that. The variance is
// λ²·Var(judge on N)/N + Var(human − λ·judge on n)/n and the interval is
// normal.
//
// # When it is valid
//
// The labelled items must be a uniform random sample of all the items
// (Draw makes one, from a seed that is kept). Items people chose to label,
// or labelled because the judge flagged them, break the correction: the
// judge's error on them need not be its error elsewhere, and nothing here
// can detect that. The intervals are large-sample ones: with a few dozen
// labels they are approximate.
//
// # The figures
//
// An Estimate has three intervals of one mean and a count:
//
//   - human: the mean of the people's values on the labelled items, and
//     its interval — unbiased, wide;
//   - judge: the judge's mean over all items, whose interval shows
//     sampling noise only and not the judge's bias, so it may confidently
//     miss the truth;
//   - ppi: the prediction-powered mean, its interval and λ;
//   - effective_human_labels: how many human labels a human-only estimate
//     would need for an interval as narrow as ppi's — what the judge is
//     worth, in labels.
//
// A Difference between two systems has the same figures and says whether
// it was paired (the same items rated under both systems, differenced item
// by item) or independent (two estimates on different items). Project
// forecasts the half-widths with k more labels, and LabelsToSeparate the
// labels needed to tell two systems apart at a margin.
package ppi
