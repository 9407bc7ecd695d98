package segment

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestScaleHalfUp(t *testing.T) {
	t.Parallel()
	r := big.NewRat
	cases := []struct {
		from, to *big.Rat
		v        int
		want     int
	}{
		{r(0, 1), r(1, 2), 1, 1},  // round(0.5)=1 − 0: half rounds up
		{r(1, 2), r(1, 1), 1, 0},  // 1 − round(0.5)=1
		{r(0, 1), r(1, 3), 10, 3}, // round(3.33)=3
		{r(1, 3), r(2, 3), 10, 4}, // round(6.67)=7 − 3
		{r(2, 3), r(1, 1), 10, 3}, // 10 − 7
		{r(0, 1), r(1, 1), 0, 0},
	}
	for _, c := range cases {
		s := Segment{From: c.from, To: c.to}
		if got := s.Scale(c.v); got != c.want {
			t.Errorf("%s.Scale(%d) = %d, want %d", s, c.v, got, c.want)
		}
	}
}

func sequences(t *testing.T, r *rand.Rand, n int) []*Sequence {
	t.Helper()
	eq, err := Equal(n)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]int, n)
	for i := range w {
		w[i] = 1 + r.IntN(16)
	}
	wt, err := Weighted(w)
	if err != nil {
		t.Fatal(err)
	}
	return []*Sequence{eq, wt}
}

// TestPartitionSumsExactly is the core promise: for every N ≤ 64, equal and
// weighted, the per-segment shares of v add up to v.
func TestPartitionSumsExactly(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 64; n++ {
		for _, seq := range sequences(t, r, n) {
			// The edge values, and 16 random ones for each of the 128
			// sequences (2,048 in all; there were 40 a sequence). A share
			// is the difference of the roundings of v at the segment's two
			// bounds, so the shares of any v telescope to v; the random
			// values guard that, and that no share is negative, across
			// every n and both kinds of sequence. Big-rational arithmetic
			// under -race is this test's whole cost: with 40 values a
			// sequence it took 0.9 s of CPU, with 16 it takes 0.5 s.
			vs := []int{0, 1, 2, n - 1, n, n + 1, 999_999, 1_000_000}
			for range 16 {
				vs = append(vs, r.IntN(1_000_001))
			}
			// The segments and the function over all of them are taken
			// once per sequence, not once per value: a Sequence is
			// immutable, and copying its rationals again for every value
			// was a fifth of this test's time.
			segs := make([]Segment, seq.Len())
			for i := range segs {
				segs[i] = seq.Segment(i)
			}
			scaleAll := seq.ScaleFunc(allSegs(seq)...)
			for _, v := range vs {
				sum := 0
				for i, sg := range segs {
					p := sg.Scale(v)
					if p < 0 {
						t.Fatalf("n=%d v=%d segment %d share %d < 0", n, v, i, p)
					}
					sum += p
				}
				if sum != v {
					t.Fatalf("n=%d bounds=%v: shares of %d sum to %d", n, seq.Bounds(), v, sum)
				}
				if got := scaleAll(v); got != v {
					t.Fatalf("ScaleFunc(all)(%d) = %d, want %d", v, got, v)
				}
			}
		}
	}
}

func allSegs(s *Sequence) []int {
	out := make([]int, s.Len())
	for i := range out {
		out[i] = i
	}
	return out
}

// TestStripesDisjointCoverBalanced checks that each index has exactly one
// owner (disjoint and covering by construction of Owner, verified through
// Owns), and that every prefix is balanced to within one arrival.
func TestStripesDisjointCoverBalanced(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 64; n++ {
		for _, seq := range sequences(t, r, n) {
			counts := make([]int64, n)
			P := int64(seq.Period())
			w := make([]int64, n)
			for i := range n {
				l := new(big.Rat).Mul(seq.Segment(i).Len(), new(big.Rat).SetInt64(P))
				w[i] = l.Num().Int64()
			}
			limit := 3*seq.Period() + 17
			for k := uint64(0); k < limit; k++ {
				owners := 0
				for i := range n {
					if seq.Owns(i, k) {
						owners++
						counts[i]++
					}
				}
				if owners != 1 {
					t.Fatalf("n=%d index %d has %d owners, want 1", n, k, owners)
				}
				for i := range n {
					// |count − len·(k+1)| ≤ 1, scaled by the period to stay in integers.
					d := counts[i]*P - w[i]*int64(k+1)
					if d < -P || d > P {
						t.Fatalf("n=%d bounds=%v segment %d owns %d of first %d, want %d/%d ± 1", n, seq.Bounds(), i, counts[i], k+1, w[i]*int64(k+1), P)
					}
				}
			}
		}
	}
}

func TestEqualIsRoundRobin(t *testing.T) {
	t.Parallel()
	seq, err := Equal(5)
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(0); k < 50; k++ {
		if got := seq.Owner(k); got != int(k%5) {
			t.Fatalf("Equal(5).Owner(%d) = %d, want %d", k, got, k%5)
		}
	}
}

func TestSequenceRoundTripAndErrors(t *testing.T) {
	t.Parallel()
	seq, err := Weighted([]int{3, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseSequence(seq.Bounds())
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(0); k < 24; k++ {
		if back.Owner(k) != seq.Owner(k) {
			t.Fatalf("round-tripped sequence owner(%d) = %d, want %d", k, back.Owner(k), seq.Owner(k))
		}
	}
	bad := [][]string{{"0"}, {"1/2", "1"}, {"0", "1/2", "1/3", "1"}, {"0", "x", "1"}, {"0", "3/2"}}
	for _, b := range bad {
		if _, err := ParseSequence(b); err == nil {
			t.Errorf("ParseSequence(%v) succeeded, want error", b)
		}
	}
	if _, err := Weighted([]int{1, 0}); err == nil {
		t.Error("Weighted([1 0]) succeeded, want error naming weight[1]")
	}
	if _, err := Equal(0); err == nil {
		t.Error("Equal(0) succeeded, want error")
	}
}

// FuzzParseSequence feeds ParseSequence what a damaged Redis entry could
// hold: it must fail cleanly or give a sequence whose bounds read back the
// same and whose shares add up.
func FuzzParseSequence(f *testing.F) {
	for _, s := range []string{"0,1", "0,1/3,2/3,1", "", ",", "1,0", "0,a/b,1", "0,1/0", "0,3/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		seq, err := ParseSequence(strings.Split(text, ","))
		if err != nil {
			return
		}
		back, err := ParseSequence(seq.Bounds())
		if err != nil || !slices.Equal(back.Bounds(), seq.Bounds()) {
			t.Fatalf("ParseSequence(%q).Bounds() = %q does not round-trip: %v", text, seq.Bounds(), err)
		}
		sum := 0
		for i := range seq.Len() {
			sum += seq.Segment(i).Scale(1000)
		}
		if sum != 1000 {
			t.Fatalf("ParseSequence(%q): segment shares of 1000 sum to %d", text, sum)
		}
	})
}
