package segment

import (
	"errors"
	"fmt"
	"math/big"
)

// MaxPeriod bounds the striping period (the least common denominator of a
// sequence's boundaries), which is also the size of the lookup table each
// Sequence keeps. Weighted sequences with a larger period are rejected.
const MaxPeriod = 1 << 20

// Segment is the half-open share [From, To) of a plan, with 0 ≤ From < To ≤ 1.
// The zero value is not a valid segment; take one from a [Sequence].
type Segment struct {
	From, To *big.Rat
}

// Len returns To − From.
func (s Segment) Len() *big.Rat { return new(big.Rat).Sub(s.To, s.From) }

// String renders the segment as "from-to" with rationals in a/b form, e.g.
// "1/3-2/3".
func (s Segment) String() string { return s.From.RatString() + "-" + s.To.RatString() }

// Scale returns this segment's share of v: round(v·To) − round(v·From) with
// half-up rounding. Over a sequence the shares of all segments sum to v.
func (s Segment) Scale(v int) int { return roundHalfUp(v, s.To) - roundHalfUp(v, s.From) }

func roundHalfUp(v int, r *big.Rat) int {
	// floor(v·r + 1/2) = floor((2·v·num + den) / (2·den)).
	num := new(big.Int).Mul(big.NewInt(int64(v)), r.Num())
	num.Mul(num, big.NewInt(2))
	num.Add(num, r.Denom())
	den := new(big.Int).Mul(r.Denom(), big.NewInt(2))
	q := new(big.Int)
	m := new(big.Int)
	q.DivMod(num, den, m) // Euclidean: floor for positive den
	return int(q.Int64())
}

// Sequence is an ordered partition of [0, 1) into segments, plus the
// striping table for arrival indices. It is immutable and safe for
// concurrent use. Build one with [Equal], [Weighted] or [NewSequence].
type Sequence struct {
	bounds []*big.Rat
	period uint64
	owner  []uint16 // owner[k mod period] = segment index
}

// Equal returns the sequence 0, 1/n, 2/n, …, 1. For it, Owns(i, k) is k mod n == i.
func Equal(n int) (*Sequence, error) {
	if n < 1 {
		return nil, fmt.Errorf("equal segments: n = %d, want at least 1", n)
	}
	b := make([]*big.Rat, n+1)
	for i := range b {
		b[i] = big.NewRat(int64(i), int64(n))
	}
	return NewSequence(b)
}

// Weighted returns a sequence whose segment i has length w[i]/Σw, for
// example capacity-weighted shares. Every weight must be positive.
func Weighted(w []int) (*Sequence, error) {
	if len(w) == 0 {
		return nil, errors.New("weighted segments: no weights given; pass one positive weight per worker")
	}
	total := int64(0)
	for i, x := range w {
		if x <= 0 {
			return nil, fmt.Errorf("weighted segments: weight[%d] = %d, want > 0", i, x)
		}
		total += int64(x)
	}
	b := make([]*big.Rat, len(w)+1)
	b[0] = new(big.Rat)
	acc := int64(0)
	for i, x := range w {
		acc += int64(x)
		b[i+1] = big.NewRat(acc, total)
	}
	return NewSequence(b)
}

// NewSequence builds a sequence from boundaries 0 = b0 < b1 < … < bn = 1.
func NewSequence(bounds []*big.Rat) (*Sequence, error) {
	if len(bounds) < 2 {
		return nil, errors.New("segment sequence: need at least the bounds 0 and 1")
	}
	if len(bounds)-1 > 1<<16 {
		return nil, fmt.Errorf("segment sequence: %d segments, want at most %d", len(bounds)-1, 1<<16)
	}
	if bounds[0].Sign() != 0 || bounds[len(bounds)-1].Cmp(big.NewRat(1, 1)) != 0 {
		return nil, fmt.Errorf("segment sequence: bounds run from %s to %s, want 0 to 1", bounds[0].RatString(), bounds[len(bounds)-1].RatString())
	}
	lcd := big.NewInt(1)
	s := &Sequence{bounds: make([]*big.Rat, len(bounds))}
	for i, b := range bounds {
		if i > 0 && b.Cmp(bounds[i-1]) <= 0 {
			return nil, fmt.Errorf("segment sequence: bound %d (%s) is not above bound %d (%s); bounds must increase", i, b.RatString(), i-1, bounds[i-1].RatString())
		}
		s.bounds[i] = new(big.Rat).Set(b)
		g := new(big.Int).GCD(nil, nil, lcd, b.Denom())
		lcd.Mul(lcd, new(big.Int).Quo(b.Denom(), g))
		if lcd.Cmp(big.NewInt(MaxPeriod)) > 0 {
			return nil, fmt.Errorf("segment sequence: common denominator exceeds %d; use simpler weights (for example capacities divided by their gcd)", MaxPeriod)
		}
	}
	s.period = lcd.Uint64()
	s.buildStripes()
	return s, nil
}

// buildStripes fills owner[] with an earliest-deadline-first schedule:
// segment i has w_i = len_i·period unit jobs; job j (0-based) is released at
// j/len_i and due at (j+1)/len_i. Since the lengths sum to 1, EDF meets every
// deadline, so after k slots segment i has run at least floor(k·len_i) and at
// most ceil(k·len_i) jobs.
func (s *Sequence) buildStripes() {
	n := len(s.bounds) - 1
	p := int64(s.period)
	w := make([]int64, n)
	for i := range n {
		l := new(big.Rat).Sub(s.bounds[i+1], s.bounds[i])
		l.Mul(l, new(big.Rat).SetInt64(p))
		w[i] = l.Num().Int64() // integral by construction of period
	}
	done := make([]int64, n)
	s.owner = make([]uint16, p)
	for t := int64(0); t < p; t++ {
		best := -1
		for i := range n {
			if done[i] >= w[i] || done[i]*p > t*w[i] { // finished, or next job not yet released
				continue
			}
			// deadline (done+1)·p/w: compare (done_i+1)/w_i < (done_b+1)/w_b.
			if best < 0 || (done[i]+1)*w[best] < (done[best]+1)*w[i] {
				best = i
			}
		}
		s.owner[t] = uint16(best)
		done[best]++
	}
}

// Len returns the number of segments.
func (s *Sequence) Len() int { return len(s.bounds) - 1 }

// Period returns the striping period: ownership of index k depends only on
// k mod Period.
func (s *Sequence) Period() uint64 { return s.period }

// Segment returns segment i, 0 ≤ i < Len.
func (s *Sequence) Segment(i int) Segment {
	return Segment{From: new(big.Rat).Set(s.bounds[i]), To: new(big.Rat).Set(s.bounds[i+1])}
}

// Bounds returns the boundaries as rationals in a/b text form, for shipping
// the sequence to workers; [ParseSequence] reads them back.
func (s *Sequence) Bounds() []string {
	out := make([]string, len(s.bounds))
	for i, b := range s.bounds {
		out[i] = b.RatString()
	}
	return out
}

// ParseSequence rebuilds a sequence from [Sequence.Bounds] output.
func ParseSequence(bounds []string) (*Sequence, error) {
	rs := make([]*big.Rat, len(bounds))
	for i, t := range bounds {
		if len(t) > 32 {
			return nil, fmt.Errorf("segment sequence: bound %d is longer than 32 bytes", i)
		}
		r, ok := new(big.Rat).SetString(t)
		if !ok {
			return nil, fmt.Errorf("segment sequence: bound %d %q is not a rational such as 1/3", i, t)
		}
		rs[i] = r
	}
	return NewSequence(rs)
}

// Owner returns the index of the segment that owns global arrival index k.
func (s *Sequence) Owner(k uint64) int { return int(s.owner[k%s.period]) }

// Owns reports whether segment i owns global arrival index k.
func (s *Sequence) Owns(i int, k uint64) bool { return s.Owner(k) == i }

// OwnsFunc returns an ownership predicate for the union of the given
// segments, the shape the engine's Options.Owns expects.
func (s *Sequence) OwnsFunc(segs ...int) func(k uint64) bool {
	mine := make([]bool, s.Len())
	for _, i := range segs {
		mine[i] = true
	}
	return func(k uint64) bool { return mine[s.owner[k%s.period]] }
}

// ScaleFunc returns the union of the given segments' [Segment.Scale], the
// shape the engine's Options.ScaleVUs expects.
func (s *Sequence) ScaleFunc(segs ...int) func(v int) int {
	parts := make([]Segment, len(segs))
	for j, i := range segs {
		parts[j] = s.Segment(i)
	}
	return func(v int) int {
		t := 0
		for _, p := range parts {
			t += p.Scale(v)
		}
		return t
	}
}
