package snapshot

import (
	"math/rand/v2"
	"testing"
)

// TestMergeEqualsConcatenation: merging per-worker histograms gives exactly
// the histogram of all samples, after a wire round trip.
func TestMergeEqualsConcatenation(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		all := New(3)
		merged := New(3)
		for w := range 1 + trial%5 {
			part := New(3)
			for range r.IntN(5000) {
				v := int64(r.ExpFloat64()*float64(1000*(w+1))) + 1
				part.Record("http_req_duration", v)
				all.Record("http_req_duration", v)
				part.Add("http_reqs", 1)
				all.Add("http_reqs", 1)
			}
			b, err := part.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := merged.Merge(back); d != 0 {
				t.Fatalf("Merge dropped %d samples", d)
			}
		}
		if merged.Counters["http_reqs"] != all.Counters["http_reqs"] {
			t.Fatalf("merged counter = %d, want %d", merged.Counters["http_reqs"], all.Counters["http_reqs"])
		}
		mh, ah := merged.Hists["http_req_duration"], all.Hists["http_req_duration"]
		if ah == nil {
			continue
		}
		if !mh.Equals(ah) {
			t.Fatalf("trial %d: merged histogram differs from histogram of all samples (count %d vs %d)", trial, mh.TotalCount(), ah.TotalCount())
		}
	}
}

// TestMeanOfP99sIsWrong is the fixture from DISTRIBUTED.md 3.4: worker A
// has 99k requests at 100 ms, worker B 1k requests at 2 s. The mean of the
// p99s is 1.05 s, while the p99 of all requests is A's 100 ms.
func TestMeanOfP99sIsWrong(t *testing.T) {
	t.Parallel()
	a, b := New(0), New(0)
	for range 99_000 {
		a.Record("d", 100_000)
	}
	for range 1_000 {
		b.Record("d", 2_000_000)
	}
	meanP99 := (a.Hists["d"].ValueAtQuantile(99) + b.Hists["d"].ValueAtQuantile(99)) / 2
	m := a.Clone()
	m.Merge(b)
	mergedP99 := m.Hists["d"].ValueAtQuantile(99)
	if !m.Hists["d"].ValuesAreEquivalent(mergedP99, 100_000) {
		t.Fatalf("merged p99 = %d µs, want ≈100000", mergedP99)
	}
	if meanP99 < 1_000_000 || meanP99 > 1_100_000 {
		t.Fatalf("mean of p99s = %d µs, want ≈1050000 (the fixture is wrong)", meanP99)
	}
	if m.Hists["d"].ValuesAreEquivalent(meanP99, mergedP99) {
		t.Fatalf("mean of p99s %d equals merged p99 %d; the fixture should show they differ", meanP99, mergedP99)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "{", `{"h":{"x":"!!"}}`, `{"h":{"x":"AAAA"}}`, `{"s":"x"}`} {
		if _, err := Unmarshal([]byte(in)); err == nil {
			t.Errorf("Unmarshal(%q) succeeded, want error", in)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	s := New(1)
	s.Record("d", 1234)
	s.Add("n", 2)
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Add([]byte(`{"s":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Unmarshal(in)
		if err != nil {
			return
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode decoded snapshot: %v", err)
		}
		if _, err := Unmarshal(b); err != nil {
			t.Fatalf("decode re-encoded snapshot: %v", err)
		}
	})
}
