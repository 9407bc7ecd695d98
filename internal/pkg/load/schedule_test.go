package load

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// arrivals returns every arrival time of o's schedule.
func arrivals(t *testing.T, o *Options) []time.Duration {
	t.Helper()
	s := NewSchedule(o)
	var out []time.Duration
	for {
		_, at, ok := s.Next()
		if !ok {
			return out
		}
		out = append(out, at)
		if len(out) > 1_000_000 {
			t.Fatal("schedule does not end")
		}
	}
}

// countIn counts arrivals in [from, to).
func countIn(ts []time.Duration, from, to time.Duration) int {
	n := 0
	for _, t := range ts {
		if t >= from && t < to {
			n++
		}
	}
	return n
}

func TestScheduleUniformSpacing(t *testing.T) {
	t.Parallel()
	ts := arrivals(t, &Options{Rate: 1000, Duration: time.Second})
	if len(ts) != 1000 {
		t.Fatalf("arrivals = %d, want 1000", len(ts))
	}
	for i, at := range ts {
		if want := time.Duration(i) * time.Millisecond; at != want {
			t.Fatalf("t_%d = %v, want %v", i, at, want)
		}
	}
}

func TestSchedulePatterns(t *testing.T) {
	t.Parallel()
	sec := time.Second
	for _, tc := range []struct {
		name   string
		o      Options
		total  int
		window [][3]int // from s, to s, want count
	}{
		{
			// A ramp 0→100 over 10 s plans 500 arrivals; N(t) = 5t², so the
			// first second holds 5 and the last one 95: no staircase.
			name:   "ramp",
			o:      Options{Stages: []Stage{Ramp(0, 100, 10*sec)}},
			total:  500,
			window: [][3]int{{0, 1, 5}, {9, 10, 95}, {0, 5, 125}},
		},
		{
			name:   "ramp down",
			o:      Options{Stages: []Stage{Ramp(100, 0, 10*sec)}},
			total:  500,
			window: [][3]int{{0, 1, 95}, {9, 10, 5}},
		},
		{
			name:   "steps",
			o:      Options{Stages: []Stage{Step(10, 2*sec), Step(50, sec), Step(20, 3*sec)}},
			total:  20 + 50 + 60,
			window: [][3]int{{0, 2, 20}, {2, 3, 50}, {3, 6, 60}},
		},
		{
			name:   "spike between base rates",
			o:      Options{Stages: []Stage{Step(100, sec), Spike(1000, sec/2), Step(100, sec)}},
			total:  100 + 500 + 100,
			window: [][3]int{{0, 1, 100}, {1, 2, 500 + 50}},
		},
		{
			// Stages, then the base rate until Duration.
			name:   "sequence then rate",
			o:      Options{Stages: []Stage{Ramp(0, 200, 2*sec), Step(300, sec), Spike(600, sec)}, Rate: 100, Duration: 6 * sec},
			total:  200 + 300 + 600 + 200,
			window: [][3]int{{0, 1, 50}, {1, 2, 150}, {2, 3, 300}, {3, 4, 600}, {4, 6, 200}},
		},
		{
			name:  "duration caps stages",
			o:     Options{Stages: []Stage{Step(100, 10*sec)}, Duration: 3 * sec},
			total: 300,
		},
		{
			name:  "total caps rate",
			o:     Options{Rate: 100, Total: 42},
			total: 42,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := arrivals(t, &tc.o)
			if len(ts) != tc.total {
				t.Errorf("arrivals = %d, want %d", len(ts), tc.total)
			}
			if !slices.IsSorted(ts) {
				t.Error("arrival times are not sorted")
			}
			for _, w := range tc.window {
				from, to := time.Duration(w[0])*sec, time.Duration(w[1])*sec
				if got := countIn(ts, from, to); got != w[2] {
					t.Errorf("arrivals in [%v, %v) = %d, want %d", from, to, got, w[2])
				}
			}
		})
	}
}

func TestScheduleRampIsExact(t *testing.T) {
	t.Parallel()
	// For a ramp from a to b over D, arrival k is at the root of
	// a·t + (b−a)·t²/(2D) = k.
	ts := arrivals(t, &Options{Stages: []Stage{Ramp(10, 1000, 5*time.Second)}})
	a, b, d := 10.0, 1000.0, 5.0
	for k, at := range ts {
		x := at.Seconds()
		n := a*x + (b-a)*x*x/(2*d)
		if math.Abs(n-float64(k)) > 1e-6 {
			t.Fatalf("N(t_%d) = %v, want %d", k, n, k)
		}
	}
}

func TestScheduleStripingMatchesSingleHost(t *testing.T) {
	t.Parallel()
	for _, model := range []ArrivalModel{Uniform, Poisson} {
		base := Options{Stages: []Stage{Ramp(0, 500, 2*time.Second)}, Rate: 300, Duration: 4 * time.Second, Arrival: model, Seed: 7}
		single := arrivals(t, &base)
		const hosts = 3
		var union []time.Duration
		for i := range hosts {
			o := base
			o.Owns = func(k uint64) bool { return k%hosts == uint64(i) }
			union = append(union, arrivals(t, &o)...)
		}
		slices.Sort(union)
		if !slices.Equal(union, single) {
			t.Errorf("%v: %d hosts fire %d arrivals, single host %d; want the same schedule", model, hosts, len(union), len(single))
		}
	}
}

func TestScheduleOffset(t *testing.T) {
	t.Parallel()
	o := Options{Rate: 10, Duration: 3 * time.Second, Offset: 1500 * time.Millisecond}
	ts := arrivals(t, &o)
	if len(ts) != 15 || ts[0] != 1500*time.Millisecond {
		t.Errorf("arrivals = %d from %v, want 15 from 1.5s", len(ts), ts[0])
	}
}

// TestSchedulePoissonKS checks exponential inter-arrival gaps with a
// Kolmogorov–Smirnov test at the 1% level.
func TestSchedulePoissonKS(t *testing.T) {
	t.Parallel()
	const rate = 1000.0
	ts := arrivals(t, &Options{Rate: rate, Arrival: Poisson, Seed: 42, Total: 5000})
	gaps := make([]float64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, (ts[i] - ts[i-1]).Seconds())
	}
	slices.Sort(gaps)
	n := float64(len(gaps))
	var dmax float64
	for i, g := range gaps {
		cdf := 1 - math.Exp(-rate*g)
		dmax = max(dmax, math.Abs(cdf-float64(i)/n), math.Abs(cdf-float64(i+1)/n))
	}
	if crit := 1.628 / math.Sqrt(n); dmax > crit {
		t.Errorf("KS statistic = %.4f, want <= %.4f (exponential gaps at %v/s)", dmax, crit, rate)
	}
	// The same seed reproduces the schedule; another seed does not.
	again := arrivals(t, &Options{Rate: rate, Arrival: Poisson, Seed: 42, Total: 5000})
	other := arrivals(t, &Options{Rate: rate, Arrival: Poisson, Seed: 43, Total: 5000})
	if !slices.Equal(ts, again) || slices.Equal(ts, other) {
		t.Error("Poisson schedule is not reproducible by seed")
	}
	// Its mean rate is the planned one.
	if got := n / ts[len(ts)-1].Seconds(); math.Abs(got-rate)/rate > 0.05 {
		t.Errorf("mean rate = %.1f, want %v ±5%%", got, rate)
	}
}

func TestHistogramMergeEqualsConcatenation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	all := NewHistogram()
	parts := []*Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	for i := range 30000 {
		d := time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond))
		all.Record(d)
		parts[i%3].Record(d)
	}
	merged := NewHistogram()
	for _, p := range parts {
		// Ship each part as a host would: encode and decode.
		b, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeHistogram(b)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(d)
	}
	if !merged.Equal(all) {
		t.Error("merged histogram differs from the histogram of all samples")
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		if merged.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%v: merged %v, all %v", q, merged.Quantile(q), all.Quantile(q))
		}
	}
	if _, err := DecodeHistogram([]byte("nope")); err == nil {
		t.Error("DecodeHistogram(garbage) = nil error")
	}
}

func TestResultMergeUsesHistograms(t *testing.T) {
	t.Parallel()
	// Host A: 990 fast requests; host B: 10 slow ones. The merged p99 is
	// A's tail, not the mean of the two hosts' p99s.
	mk := func(n int, d time.Duration) *Result {
		s := &Snapshot{Second: 0, Endpoints: []EndpointStats{{Name: "default"}}}
		s.Latency = NewHistogram()
		s.Endpoints[0].Latency = NewHistogram()
		for range n {
			s.Latency.Record(d)
			s.Endpoints[0].Latency.Record(d)
		}
		s.Requests, s.Endpoints[0].Requests = int64(n), int64(n)
		r := &Result{}
		r.AddSnapshot(s)
		return r
	}
	a, b := mk(990, 10*time.Millisecond), mk(10, 2*time.Second)
	a.Merge(b)
	a.Finish()
	if a.Requests != 1000 || a.Endpoints[0].Requests != 1000 || a.Seconds[0].Requests != 1000 {
		t.Errorf("merged requests = %d/%d/%d, want 1000", a.Requests, a.Endpoints[0].Requests, a.Seconds[0].Requests)
	}
	if p := a.Quantile(0.99); p > 11*time.Millisecond {
		t.Errorf("merged p99 = %v, want about 10ms", p)
	}
	if p := a.Seconds[0].P99; p > 11*time.Millisecond {
		t.Errorf("merged per-second p99 = %v, want about 10ms", p)
	}
	if p := a.Quantile(0.995); p < time.Second {
		t.Errorf("merged p99.5 = %v, want about 2s", p)
	}
}

func FuzzDecodeHistogram(f *testing.F) {
	h := NewHistogram()
	h.Record(time.Millisecond)
	b, _ := h.Encode()
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHistogram(b)
		j, _ := json.Marshal(b)
		var p PackedHistogram
		perr := p.UnmarshalJSON(j)
		if (err == nil) != (perr == nil) {
			t.Fatalf("dense decode error %v, packed %v", err, perr)
		}
		if err != nil {
			return
		}
		if h.Count() < 0 || h.Quantile(0.99) < 0 {
			t.Errorf("decoded histogram has negative values")
		}
		// The series' packed form reads the same counts.
		if p.Count() != h.Count() || p.Quantile(0.99) != h.Quantile(0.99) {
			t.Errorf("packed read %d values, p99 %v; dense %d, %v", p.Count(), p.Quantile(0.99), h.Count(), h.Quantile(0.99))
		}
	})
}

func TestResultJSONRoundTrip(t *testing.T) {
	t.Parallel()
	// Three seconds of two endpoints, each with its histogram.
	r := &Result{Open: true, TargetRPS: 10, Elapsed: 3 * time.Second}
	for sec := range 3 {
		s := &Snapshot{Second: sec, TargetRPS: 10}
		for j, name := range []string{"a", "b"} {
			e := EndpointStats{Name: name, Stats: Stats{Requests: 5, Latency: NewHistogram()}}
			for i := range 5 {
				e.Latency.Record(time.Duration(i+j+1) * time.Millisecond)
			}
			s.Endpoints = append(s.Endpoints, e)
			s.Stats.Merge(&e.Stats)
		}
		r.AddSnapshot(s)
	}
	r.Finish()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Requests != r.Requests || !back.Latency.Equal(r.Latency) || len(back.Seconds) != len(r.Seconds) || back.Endpoints[1].Latency.Count() != r.Endpoints[1].Latency.Count() {
		t.Error("a Result does not survive a JSON round trip")
	}
	// A shipped result merges like the original.
	back.Merge(r)
	if back.Requests != 2*r.Requests || back.Seconds[0].Requests != 2*r.Seconds[0].Requests {
		t.Errorf("merged shipped result: %d requests, want %d", back.Requests, 2*r.Requests)
	}
}

// TestScheduleSkipBefore checks that skipping arrivals counts exactly what
// stepping through them counts, for every model, with and without
// striping, and that the rest of the schedule is unchanged.
func TestScheduleSkipBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"uniform", Options{Rate: 1000, Duration: 3 * time.Second}},
		{"ramp", Options{Stages: []Stage{Ramp(0, 2000, 2*time.Second)}, Rate: 100, Duration: 4 * time.Second}},
		{"total", Options{Rate: 1000, Total: 700}},
		{"striped", Options{Rate: 1000, Duration: 3 * time.Second, Owns: func(k uint64) bool { return k%3 == 1 }}},
		{"poisson", Options{Rate: 1000, Arrival: Poisson, Seed: 3, Duration: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all := arrivals(t, &tc.o)
			cut := 1234 * time.Millisecond
			want := countIn(all, 0, cut)
			s := NewSchedule(&tc.o)
			if got := s.SkipBefore(cut); got != uint64(want) {
				t.Errorf("SkipBefore(%v) = %d, want %d", cut, got, want)
			}
			var rest []time.Duration
			for {
				_, at, ok := s.Next()
				if !ok {
					break
				}
				rest = append(rest, at)
			}
			if !slices.Equal(rest, all[want:]) {
				t.Errorf("after the skip: %d arrivals, want the %d that follow", len(rest), len(all)-want)
			}
		})
	}
}

// TestScheduleSkipBeforeIsComputed skips a trillion arrivals: stepping
// through them would take hours.
func TestScheduleSkipBeforeIsComputed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		want float64
		tol  float64
	}{
		{"uniform", Options{Rate: 1e12, Duration: 2 * time.Second}, 1e12, 0},
		{"poisson", Options{Rate: 1e12, Arrival: Poisson, Seed: 1, Duration: 2 * time.Second}, 1e12, 1e-6},
		{"striped", Options{Rate: 1e12, Duration: 2 * time.Second, Owns: func(k uint64) bool { return k%4 == 0 }}, 0.25e12, 1e-6},
		{"total", Options{Rate: 1e12, Total: 5e9}, 5e9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewSchedule(&tc.o)
			got := float64(s.SkipBefore(time.Second))
			if math.Abs(got-tc.want) > tc.tol*tc.want {
				t.Errorf("SkipBefore(1s) = %v, want %v (±%v)", got, tc.want, tc.tol)
			}
			if _, at, ok := s.Next(); ok && at < time.Second {
				t.Errorf("next arrival at %v, want none before 1s", at)
			}
		})
	}
}
