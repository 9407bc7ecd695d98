package load

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
)

// wideHistogram records n latencies spread over the whole range, from
// under a microsecond to past the 60 s clamp.
func wideHistogram(seed uint64, n int) *Histogram {
	rng := rand.New(rand.NewPCG(seed, 1))
	h := NewHistogram()
	for range n {
		h.Record(time.Duration(rng.ExpFloat64() * float64(rng.IntN(5)+1) * float64(10*time.Millisecond)))
	}
	h.Record(100 * time.Nanosecond)
	h.Record(2 * time.Minute)
	return h
}

// TestPackedHistogramIsTheDenseOne: the per-second series keeps packed
// histograms, and what a report reads of them must be what the dense
// histogram gives: the same quantiles, the same merge, and in JSON the
// very bytes an older forgeload wrote (Histogram.Encode), both ways.
func TestPackedHistogramIsTheDenseOne(t *testing.T) {
	t.Parallel()
	a, b := wideHistogram(1, 5000), wideHistogram(2, 300)
	pa, pb := a.Pack(), b.Pack()
	for _, q := range []float64{0, 0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1} {
		if got, want := pa.Quantile(q), a.Quantile(q); got != want {
			t.Errorf("packed q%v = %v, dense %v", q, got, want)
		}
	}
	if pa.Count() != a.Count() {
		t.Errorf("packed count %d, dense %d", pa.Count(), a.Count())
	}

	enc, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(enc) // the field as a []byte wrote it
	got, err := json.Marshal(pa)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("packed JSON differs from the dense encoding's:\n got %.80s\nwant %.80s", got, want)
	}
	var back PackedHistogram
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	dense := NewHistogram()
	back.MergeInto(dense)
	if !dense.Equal(a) {
		t.Error("a dense encoding read back as packed lost counts")
	}

	merged := pa.Clone()
	merged.Merge(pb)
	m := a.Clone()
	m.Merge(b)
	got2 := NewHistogram()
	merged.MergeInto(got2)
	if !got2.Equal(m) {
		t.Error("packed merge differs from dense merge")
	}
	if pa.Count() != a.Count() {
		t.Error("merging into a clone changed the original")
	}
	var none *PackedHistogram
	if none.Count() != 0 || none.Quantile(0.99) != 0 || none.Clone() != nil {
		t.Error("a nil packed histogram is not an empty one")
	}
}

// TestResultMergeLeavesItsArgumentAlone: a coordinator merges each host's
// result into one; a later merge must not change a result merged before,
// which a report may still read.
func TestResultMergeLeavesItsArgumentAlone(t *testing.T) {
	t.Parallel()
	one := func() *Result {
		var r Result
		r.AddSnapshot(secondSnapshot(0))
		r.Seconds[0].Status = map[int]int64{200: 300}
		r.Seconds[0].Classes = map[string]int64{"timeout": 1}
		return &r
	}
	a, b := one(), one()
	status, classes, count := maps.Clone(a.Seconds[0].Status), maps.Clone(a.Seconds[0].Classes), a.Seconds[0].Hist.Count()
	var all Result
	all.Merge(a)
	all.Merge(b)
	if s := a.Seconds[0]; !maps.Equal(s.Status, status) || !maps.Equal(s.Classes, classes) || s.Hist.Count() != count {
		t.Errorf("merging b changed a's second: status %v classes %v count %d, want %v %v %d", s.Status, s.Classes, s.Hist.Count(), status, classes, count)
	}
	if s := all.Seconds[0]; s.Status[200] != 600 || s.Hist.Count() != 2*count || s.P50 != a.Seconds[0].P50 {
		t.Errorf("merged second: status %v, %d latencies, p50 %v; want 600 200s, %d, %v", s.Status, s.Hist.Count(), s.P50, 2*count, a.Seconds[0].P50)
	}
}
