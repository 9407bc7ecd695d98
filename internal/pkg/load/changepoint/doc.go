// Package changepoint finds where the level of a series shifts: the
// change points of a metric over a history of load-test runs, so that a
// step (one merge that made p99 20% worse) and a slow creep (many merges
// that made it 1% worse each) are both found.
//
// # Method
//
// [Detect] uses E-divisive means (Matteson and James, 2014) with the
// changes Hunter made for performance histories (Fleming et al., "Hunter:
// Using Change Point Detection to Hunt for Performance Regressions",
// arXiv 2301.03034, which Apache Otava implements): within a segment,
// the candidate split is the one that maximises the energy statistic
//
//	Q(τ) = m·n/(m+n) · ( 2/(m·n)·Σ|xᵢ−yⱼ| − 1/C(m,2)·Σ|xᵢ−xₖ| − 1/C(n,2)·Σ|yⱼ−yₗ| )
//
// between the m points before τ and the n points from τ to the segment's
// end, and the split is kept when Welch's t-test between those two parts
// gives a p-value below [Options.PValue]. Kept splits divide the segment,
// and each part is searched again, until no split is significant. A last
// pass tests each change point between its neighbours and drops the least
// significant one above the level, until all pass. There is no
// permutation test, so the result is deterministic: the same series gives
// the same change points, always.
//
// Detect is a pure function, safe for concurrent use.
package changepoint
