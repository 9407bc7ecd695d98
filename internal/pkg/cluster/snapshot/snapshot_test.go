package snapshot

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

func record(s *Snapshot, endpoint string, d time.Duration, status int) {
	add := func(st *load.Stats) {
		st.Requests++
		if st.Latency == nil {
			st.Latency = load.NewHistogram()
		}
		st.Latency.Record(d)
		if st.Status == nil {
			st.Status = map[int]int64{}
		}
		st.Status[status]++
	}
	add(&s.Stats)
	add(s.endpoint(endpoint))
}

// TestMergeEqualsConcatenation: merging per-worker snapshots gives exactly
// the histograms and counts of all samples, after a wire round trip, and
// keeps the endpoints in the order the workers list them; drops by reason,
// the generator's lateness (count and max) and check counts survive the
// wire and the merge.
func TestMergeEqualsConcatenation(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	// Ten trials run each worker count from one to five twice. Under -race
	// a trial's time is its histograms' wire encodings (a zlib writer each),
	// not its samples; twenty trials covered the same statements of this
	// package and of load's Stats and Histogram as ten, and as five.
	for trial := range 10 {
		all := New(3)
		merged := New(3)
		for w := range 1 + trial%5 {
			part := New(3)
			part.endpoint("first")
			part.endpoint("second")
			for range r.IntN(5000) {
				d := time.Duration(r.ExpFloat64()*float64(1000*(w+1))+1) * time.Microsecond
				ep := []string{"first", "second"}[r.IntN(2)]
				record(part, ep, d, 200)
				record(all, ep, d, 200)
			}
			part.Dropped, part.InFlight = 1, 2
			part.DroppedBy = map[string]int64{"late": 1}
			part.GeneratorLate, part.GeneratorLateMax = 3, time.Duration(w+1)*time.Millisecond
			part.Checks = []load.CheckStats{{Name: "checks[0] status in [200]", Passed: 5, Failed: 1}}
			b, err := part.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			merged.Merge(back)
		}
		if merged.Requests != all.Requests || merged.Status[200] != all.Requests {
			t.Fatalf("merged requests = %d (status 200: %d), want %d", merged.Requests, merged.Status[200], all.Requests)
		}
		if w := int64(1 + trial%5); merged.Dropped != w || merged.InFlight != 2*w {
			t.Fatalf("merged dropped %d in flight %d, want %d and %d", merged.Dropped, merged.InFlight, w, 2*w)
		}
		if n := int64(1 + trial%5); merged.DroppedBy["late"] != n || merged.GeneratorLate != 3*n ||
			merged.GeneratorLateMax != time.Duration(n)*time.Millisecond ||
			len(merged.Checks) != 1 || merged.Checks[0].Passed != 5*n || merged.Checks[0].Failed != n {
			t.Fatalf("merged drops by reason %v, generator late %d (max %s), checks %+v: want %d late, %d, %dms and %d passed, %d failed",
				merged.DroppedBy, merged.GeneratorLate, merged.GeneratorLateMax, merged.Checks, n, 3*n, n, 5*n, n)
		}
		if len(merged.Endpoints) != 2 || merged.Endpoints[0].Name != "first" || merged.Endpoints[1].Name != "second" {
			t.Fatalf("merged endpoints %v, want first then second", merged.Endpoints)
		}
		if all.Latency == nil {
			continue
		}
		if !merged.Latency.Equal(all.Latency) {
			t.Fatalf("trial %d: merged histogram differs from histogram of all samples (count %d vs %d)", trial, merged.Samples(), all.Samples())
		}
		for i, e := range merged.Endpoints {
			if want := all.endpoint(e.Name); e.Latency != nil && !e.Latency.Equal(want.Latency) || e.Requests != want.Requests {
				t.Fatalf("trial %d: endpoint %d (%s) differs from its samples", trial, i, e.Name)
			}
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
		record(a, "", 100*time.Millisecond, 200)
	}
	for range 1_000 {
		record(b, "", 2*time.Second, 200)
	}
	meanP99 := (a.Quantile(0.99) + b.Quantile(0.99)) / 2
	m := a.Clone()
	m.Merge(b)
	mergedP99 := m.Quantile(0.99)
	if mergedP99 < 99*time.Millisecond || mergedP99 > 101*time.Millisecond {
		t.Fatalf("merged p99 = %s, want ≈100ms", mergedP99)
	}
	if meanP99 < time.Second || meanP99 > 1100*time.Millisecond {
		t.Fatalf("mean of p99s = %s, want ≈1.05s (the fixture is wrong)", meanP99)
	}
	if a.Requests != 99_000 || m.Requests != 100_000 {
		t.Fatalf("Clone or Merge changed the counts: a %d, merged %d", a.Requests, m.Requests)
	}
}

// TestErrorMessagesCrossTheWire: the endpoints' error messages, and the
// failures counted without one, survive the wire and merge by message.
func TestErrorMessagesCrossTheWire(t *testing.T) {
	t.Parallel()
	merged := New(2)
	for w := range 3 {
		part := New(2)
		ep := part.endpoint("get")
		ep.Messages.Add("dial tcp 127.0.0.1:1: connect: connection refused", int64(w+1))
		ep.Messages.Add("unexpected status 503", 2)
		ep.Messages.Other = 1
		b, err := part.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(back)
	}
	m := merged.Endpoints[0].Messages
	if m.Counts["dial tcp 127.0.0.1:1: connect: connection refused"] != 6 || m.Counts["unexpected status 503"] != 6 || m.Other != 3 || len(m.Counts) != 2 {
		t.Fatalf("merged messages = %+v, want refused 6, 503 6, other 3", m)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "decode metrics snapshot"},
		{"{", "decode metrics snapshot"},
		{`{"s":1,"c":{"requests":3}}`, "version 0, this runner understands 4: run the same forgeload version"},
		{`{"v":5,"s":1}`, "version 5"},
		// A member of an older version ships no drop reasons, lateness,
		// check counts or error messages: it is refused, not merged short.
		{`{"v":2,"s":1,"dropped":3}`, "version 2, this runner understands 4: run the same forgeload version on every cluster member"},
		{`{"v":3,"s":1,"dropped":3}`, "version 3, this runner understands 4: run the same forgeload version on every cluster member"},
		{`{"v":4,"stats":{"latency":"!!"}}`, "base64"},
		{`{"v":4,"stats":{"latency":"AAAA"}}`, "histogram"},
		{`{"v":4,"s":"x"}`, "decode metrics snapshot"},
		{`{"v":4,"s":1,"x":` + strings.Repeat(" ", MaxWireBytes) + `1}`, "byte limit"},
	} {
		if _, err := Unmarshal([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%.40q) = %v, want an error mentioning %q", tc.in, err, tc.want)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	s := New(1)
	record(s, "get", 1234*time.Microsecond, 200)
	s.Dropped = 2
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Add([]byte(`{"v":4,"s":1}`))
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
