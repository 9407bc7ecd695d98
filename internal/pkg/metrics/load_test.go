package metrics

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// loadSeriesCount is how many series the load collectors export now.
func loadSeriesCount(t *testing.T, reg prometheus.Gatherer) int {
	t.Helper()
	n, err := testutil.GatherAndCount(reg, "forgeload_load_requests_total", "forgeload_load_request_duration_seconds",
		"forgeload_load_target_rate", "forgeload_load_inflight", "forgeload_load_dropped_total")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLoadStepLabels: a load step's series carry its workflow job, step and
// endpoint; two runs on the same labels add up, and an ended one takes its
// share of the gauges away.
func TestLoadStepLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "v", "n")
	a := m.StartLoadStep("perf", "soak", ProtocolHTTP)
	b := m.StartLoadStep("perf", "soak", ProtocolHTTP)
	c := m.StartLoadStep("perf", "spike", ProtocolGRPC)
	a.SetTargetRate(100)
	b.SetTargetRate(50)
	a.SetInflight(7)
	c.SetTargetRate(10)
	a.Requests("home", LoadOK, 3)
	b.Requests("home", LoadOK, 2)
	a.Requests("search", LoadHTTP5xx, 1)
	c.Requests("Say", LoadError, 4)
	a.Latency("home", 3*time.Millisecond, 2)
	a.Dropped(5)
	b.Done()
	b.Requests("home", LoadOK, 100) // after Done: nothing
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP forgeload_load_requests_total Load-test requests by workflow job, step, endpoint, protocol and result class.
# TYPE forgeload_load_requests_total counter
forgeload_load_requests_total{endpoint="Say",protocol="grpc",result="error",step="spike",workflow_job="perf"} 4
forgeload_load_requests_total{endpoint="home",protocol="http",result="ok",step="soak",workflow_job="perf"} 5
forgeload_load_requests_total{endpoint="search",protocol="http",result="http_5xx",step="soak",workflow_job="perf"} 1
# HELP forgeload_load_target_rate Requested arrival rate per second of running load steps, by workflow job and step.
# TYPE forgeload_load_target_rate gauge
forgeload_load_target_rate{step="soak",workflow_job="perf"} 100
forgeload_load_target_rate{step="spike",workflow_job="perf"} 10
# HELP forgeload_load_inflight Load-test requests in flight, by workflow job and step.
# TYPE forgeload_load_inflight gauge
forgeload_load_inflight{step="soak",workflow_job="perf"} 7
forgeload_load_inflight{step="spike",workflow_job="perf"} 0
# HELP forgeload_load_dropped_total Arrivals dropped because the load generator could not keep up, by workflow job and step.
# TYPE forgeload_load_dropped_total counter
forgeload_load_dropped_total{step="soak",workflow_job="perf"} 5
forgeload_load_dropped_total{step="spike",workflow_job="perf"} 0
`), "forgeload_load_requests_total", "forgeload_load_target_rate", "forgeload_load_inflight", "forgeload_load_dropped_total")
	if err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "forgeload_load_request_duration_seconds"); err != nil || n != 1 {
		t.Errorf("request_duration_seconds series = %d (%v), want 1 (perf/soak/home)", n, err)
	}
	a.Done()
	c.Done()
	if got := testutil.ToFloat64(m.load.rate.WithLabelValues("perf", "soak")); got != 0 {
		t.Errorf("target_rate of the ended step = %v, want 0", got)
	}
}

// TestLoadLabelValue: label values are valid UTF-8 without control
// characters, at most MaxLabelLength bytes, and never empty.
func TestLoadLabelValue(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100)
	for in, want := range map[string]string{
		"soak":                  "soak",
		"  two\twords\n\x00 ":   "two words",
		"":                      LabelNone,
		"\x01\x02":              LabelNone,
		"bad\xffutf8":           "bad\uFFFDutf8",
		strings.Repeat("a", 64): strings.Repeat("a", 64),
		strings.Repeat("a", 65): strings.Repeat("a", 61) + "…",
	} {
		if got := LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
	got := LabelValue(long)
	if len(got) > MaxLabelLength || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("LabelValue(100 × é) = %q (%d bytes), want valid UTF-8 of at most %d bytes ending in …", got, len(got), MaxLabelLength)
	}
}

// TestLoadLabelCaps: a hostile workflow with many distinct, long and
// malformed job, step and endpoint names gets no more series than the caps
// allow: the pairs over LoadLimits.Steps share (other)/(other), the
// endpoints over LoadLimits.Endpoints share (other), and nothing panics.
func TestLoadLabelCaps(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "v", "n", WithLoadLimits(LoadLimits{Steps: 3, Endpoints: 2}))
	var steps []*LoadStep
	for i := range 50 {
		s := m.StartLoadStep(fmt.Sprintf("job-%d-%s", i, strings.Repeat("x", 500)), fmt.Sprintf("step \xff %d", i), ProtocolHTTP)
		for e := range 40 {
			s.Requests(fmt.Sprintf("endpoint-%d\n", e), LoadOK, 1)
			s.Latency(fmt.Sprintf("endpoint-%d\n", e), time.Millisecond, 1)
		}
		s.SetTargetRate(1)
		s.SetInflight(1)
		s.Dropped(1)
		steps = append(steps, s)
	}
	mfs, err := reg.Gather() // the pedantic registry checks every value is valid
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]bool{}
	endpoints := map[string]map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "forgeload_load_requests_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				if len(lp.GetValue()) > MaxLabelLength {
					t.Errorf("label %s=%q is longer than %d bytes", lp.GetName(), lp.GetValue(), MaxLabelLength)
				}
				l[lp.GetName()] = lp.GetValue()
			}
			pair := l[LabelJob] + "/" + l[LabelStep]
			pairs[pair] = true
			if endpoints[pair] == nil {
				endpoints[pair] = map[string]bool{}
			}
			endpoints[pair][l[LabelEndpoint]] = true
		}
	}
	// 3 pairs of their own and the overflow pair; each with 2 endpoints
	// and (other).
	if len(pairs) != 4 || !pairs[LabelOther+"/"+LabelOther] {
		t.Errorf("pairs = %v, want 3 and %s/%s", pairs, LabelOther, LabelOther)
	}
	for p, eps := range endpoints {
		if len(eps) != 3 || !eps[LabelOther] || !eps["endpoint-0"] {
			t.Errorf("endpoints of %s = %v, want endpoint-0, endpoint-1 and %s", p, eps, LabelOther)
		}
	}
	// requests 12 + durations 12 + rate, inflight, dropped 4 each.
	if n := loadSeriesCount(t, reg); n != 36 {
		t.Errorf("load series = %d, want 36 whatever the number of names", n)
	}
	other := m.load.rate.WithLabelValues(LabelOther, LabelOther)
	if got := testutil.ToFloat64(other); got != 47 {
		t.Errorf("target_rate of the overflow pair = %v, want the 47 overflowing steps' shares", got)
	}
	for _, s := range steps {
		s.Done()
	}
}

// TestLoadRetention: a scrape over HTTP shows an ended step's series until
// its retention is over, and not after; a step still running on the same
// labels keeps them, and a freed pair makes room under the cap. The clock
// is a fake one the test moves.
func TestLoadRetention(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	reg := prometheus.NewRegistry()
	m := New(reg, "v", "n", WithClock(clock.now), WithLoadLimits(LoadLimits{Steps: 1, Retention: time.Minute}))
	s := NewServer("127.0.0.1:0", reg, nil)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	scrape := func() string {
		t.Helper()
		code, body := get(t, "http://"+s.Addr()+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics = %d", code)
		}
		return body
	}
	const soak = `forgeload_load_requests_total{endpoint="home",protocol="http",result="ok",step="soak",workflow_job="perf"}`

	a := m.StartLoadStep("perf", "soak", ProtocolHTTP)
	b := m.StartLoadStep("perf", "soak", ProtocolHTTP)
	a.Requests("home", LoadOK, 2)
	a.Done()
	clock.add(2 * time.Minute)
	if body := scrape(); !strings.Contains(body, soak+" 2") {
		t.Fatalf("a pair in use lost its series:\n%s", body)
	}
	b.Done()
	clock.add(59 * time.Second)
	if body := scrape(); !strings.Contains(body, soak+" 2") {
		t.Fatalf("the series went before the retention was over:\n%s", body)
	}
	// The cap (1 pair) is taken by the idle pair: a new step overflows.
	c := m.StartLoadStep("perf", "spike", ProtocolHTTP)
	c.Requests("home", LoadOK, 1)
	if body := scrape(); !strings.Contains(body, `step="(other)",workflow_job="(other)"} 1`) {
		t.Fatalf("a step over the cap is not under (other):\n%s", body)
	}
	c.Done()
	clock.add(time.Second)
	if body := scrape(); strings.Contains(body, `workflow_job="perf"`) {
		t.Fatalf("the series stayed after the retention:\n%s", body)
	}
	// The freed pair makes room under the cap again.
	d := m.StartLoadStep("perf", "spike", ProtocolHTTP)
	d.Requests("home", LoadOK, 1)
	if body := scrape(); !strings.Contains(body, `step="spike",workflow_job="perf"} 1`) {
		t.Fatalf("a step after the retention did not get its own labels:\n%s", body)
	}
	d.Done()
	clock.add(time.Minute)
	if n := loadSeriesCount(t, reg); n != 0 {
		t.Errorf("%d load series after every retention, want 0", n)
	}
}
