// Package segment splits one load plan exactly between several hosts.
//
// A [Sequence] is a list of rational boundaries 0 = b0 < b1 < … < bn = 1;
// segment i is the half-open interval [b(i), b(i+1)). Two splits are derived
// from it, both computed locally by every worker with no messages:
//
//   - Closed model (VUs, iterations): [Segment.Scale] gives a segment
//     round(v·to) − round(v·from) (half-up), so the shares of all segments
//     sum to v exactly for every v.
//   - Open model (arrival rate): [Sequence.Owns] stripes the global arrival
//     index k over the segments. The stripes are disjoint, cover every index,
//     and after the first k indices a segment of length L owns within one of
//     L·k. The striping repeats with period [Sequence.Period] (the least
//     common denominator of the boundaries) and within a period it is an
//     earliest-deadline-first schedule, which keeps every prefix balanced.
//
// Everything here is pure and safe for concurrent use once built.
package segment
