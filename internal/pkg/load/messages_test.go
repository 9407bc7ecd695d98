package load

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// endpointRequester sends request i to endpoint i%len(names) and fails
// it with fail(i), nil for a success.
type endpointRequester struct {
	n    atomic.Int64
	eps  int
	fail func(i int64) error
}

func (r *endpointRequester) Do(ctx context.Context) error { return r.DoSample(ctx, &Sample{}) }

func (r *endpointRequester) DoSample(_ context.Context, s *Sample) error {
	i := r.n.Add(1) - 1
	s.Endpoint = int(i % int64(r.eps))
	return r.fail(i)
}

// TestRunCountsErrorMessages: the engine counts failures by endpoint and
// message; net/http's URL (with a token in its query) is left out of the
// message; the failures of every message past the cap of distinct ones are
// counted in Other, not lost: kept and other add up to the errors. (The
// summary's top messages are tested in package summary.)
func TestRunCountsErrorMessages(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		refused := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/x?access_token=s3cr3t", Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
		req := &endpointRequester{eps: 2, fail: func(i int64) error {
			switch {
			case i%10 == 0:
				return refused
			case i%10 == 1:
				return StatusError{Code: 503}
			case i%10 == 2:
				return fmt.Errorf("order %d not found", i) // a distinct message every time
			}
			return nil
		}}
		res, err := Run(t.Context(), Options{Requester: req, Endpoints: []string{"home", "api"}, Concurrency: 1, Total: 2000})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[string]int64{
			"home": {"Get: dial tcp 127.0.0.1:1: connect: connection refused": 200},
			"api":  {"unexpected status 503": 200},
		}
		var counted int64
		for _, e := range res.Endpoints {
			counted += e.Messages.Other
			for msg, n := range e.Messages.Counts {
				counted += n
				if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "127.0.0.1:1/x") {
					t.Errorf("message %q quotes the request's URL", msg)
				}
			}
			for msg, n := range want[e.Name] {
				if e.Messages.Counts[msg] != n {
					t.Errorf("endpoint %s counts %d of %q, want %d", e.Name, e.Messages.Counts[msg], msg, n)
				}
			}
			if n := len(e.Messages.Counts); n > MaxErrorMessages {
				t.Errorf("endpoint %s keeps %d distinct messages, want at most %d", e.Name, n, MaxErrorMessages)
			}
		}
		if res.Errors != 600 || counted != res.Errors {
			t.Fatalf("%d errors, %d counted by message: want 600 both", res.Errors, counted)
		}
	})
}

// TestErrorMessagesAreBounded: a message longer than MaxErrorMessageLen
// is cut at a character boundary; a multi-line one becomes one line; a
// set past MaxErrorMessages distinct messages counts the rest as other,
// and a merge keeps the most frequent.
func TestErrorMessagesAreBounded(t *testing.T) {
	t.Parallel()
	long := errorMessage(errors.New(strings.Repeat("é", MaxErrorMessageLen)), &Sample{}, ClassOther)
	if len(long) > MaxErrorMessageLen || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long message = %d bytes %q, want at most %d, cut whole at a character, ending in …", len(long), long, MaxErrorMessageLen)
	}
	if got := errorMessage(errors.New("line one\n\tline two"), &Sample{}, ClassOther); got != "line one line two" {
		t.Errorf("multi-line message = %q, want one line", got)
	}
	if got := errorMessage(nil, &Sample{Status: 429}, ClassHTTP4xx); got != "unexpected status 429" {
		t.Errorf("a failure without an error = %q, want its status", got)
	}
	var m ErrorMessages
	for i := range MaxErrorMessages + 5 {
		m.Add(fmt.Sprint("m", i), 1)
	}
	if len(m.Counts) != MaxErrorMessages || m.Other != 5 {
		t.Errorf("after %d distinct messages: %d kept, %d other; want %d and 5", MaxErrorMessages+5, len(m.Counts), m.Other, MaxErrorMessages)
	}
	var full ErrorMessages
	for i := range MaxErrorMessages - 1 {
		full.Add(fmt.Sprint("f", i), 1)
	}
	full.Merge(&ErrorMessages{Counts: map[string]int64{"rare": 1, "frequent": 100}})
	if full.Counts["frequent"] != 100 || full.Counts["rare"] != 0 || full.Other != 1 {
		t.Errorf("merge into a nearly full set kept %v, other %d; want the frequent message kept and the rare one other", full.Counts, full.Other)
	}
}

// TestSecondsKeepEndpoints: each second of a result keeps its endpoints'
// counts and latency percentiles, for at most MaxEndpointSeries endpoints,
// and seconds from two hosts merge by endpoint with the percentiles of
// the merged histograms.
func TestSecondsKeepEndpoints(t *testing.T) {
	t.Parallel()
	snap := func(sec int, names []string, d time.Duration) *Snapshot {
		s := &Snapshot{Second: sec}
		for _, n := range names {
			h := NewHistogram()
			for range 10 {
				h.Record(d)
			}
			s.Endpoints = append(s.Endpoints, EndpointStats{Name: n, Stats: Stats{Requests: 10, Errors: 1, Latency: h}})
			s.Requests += 10
		}
		return s
	}
	var names []string
	for i := range MaxEndpointSeries + 3 {
		names = append(names, fmt.Sprint("e", i))
	}
	var a, b Result
	a.AddSnapshot(snap(0, names, time.Millisecond))
	b.AddSnapshot(snap(0, names, 100*time.Millisecond))
	a.Merge(&b)
	eps := a.Seconds[0].Endpoints
	if len(eps) != MaxEndpointSeries || eps[0].Name != "e0" || eps[MaxEndpointSeries-1].Name != fmt.Sprint("e", MaxEndpointSeries-1) {
		t.Fatalf("second 0 has %d endpoint rows (%+v), want the first %d", len(eps), eps, MaxEndpointSeries)
	}
	for _, e := range eps {
		if e.Requests != 20 || e.Errors != 2 || e.P50 < 900*time.Microsecond || e.P50 > 1100*time.Microsecond || e.P99 < 99*time.Millisecond {
			t.Errorf("endpoint %s = %d requests %d errors p50 %s p99 %s, want 20, 2, ≈1ms and ≈100ms", e.Name, e.Requests, e.Errors, e.P50, e.P99)
		}
	}
	// b's rows were copied, not shared: a later merge into a leaves them.
	if b.Seconds[0].Endpoints[0].Requests != 10 || b.Seconds[0].Endpoints[0].Hist.Count() != 10 {
		t.Errorf("merging changed the merged result's rows: %+v", b.Seconds[0].Endpoints[0])
	}
}

// TestSnapshotMessagesAreBounded: a second in which a thousand endpoints
// each fail with messages of their own keeps at most maxSnapshotMessages
// distinct messages over all endpoints (what a multi-host run ships each
// second), and counts every failure: kept or other.
func TestSnapshotMessagesAreBounded(t *testing.T) {
	t.Parallel()
	const n = 1000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("e", i)
	}
	e := newEngine(&Options{Requester: &countingRequester{}, Endpoints: names, Concurrency: 10})
	w := e.newWorker(0)
	for i := range n {
		for k := range 3 {
			w.record(i, time.Millisecond, &Sample{Endpoint: i}, fmt.Errorf("endpoint %d failure %d", i, k), onTime)
		}
	}
	s := e.snapshot(0, new(dropMarks))
	kept, counted := 0, int64(0)
	for _, ep := range s.Endpoints {
		kept += len(ep.Messages.Counts)
		counted += ep.Messages.Other
		for _, c := range ep.Messages.Counts {
			counted += c
		}
	}
	if kept > maxSnapshotMessages || kept == 0 || counted != 3*n || s.Errors != 3*n {
		t.Errorf("the snapshot keeps %d distinct messages and counts %d failures of %d errors; want at most %d kept and all %d counted", kept, counted, s.Errors, maxSnapshotMessages, 3*n)
	}
}
