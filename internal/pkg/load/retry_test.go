package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want ErrorClass
	}{
		{nil, ClassNone},
		{context.Canceled, ClassCanceled},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ClassTimeout},
		{os.ErrDeadlineExceeded, ClassTimeout},
		{StatusError{Code: 503}, ClassHTTP5xx},
		{fmt.Errorf("x: %w", StatusError{Code: 404}), ClassHTTP4xx},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ClassNetwork},
		{syscall.ECONNRESET, ClassNetwork},
		{io.ErrUnexpectedEOF, ClassNetwork},
		{fmt.Errorf("read: %w", io.EOF), ClassNetwork},
		{errors.New("boom"), ClassOther},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if ErrorClass(200).String() != "unknown" || ClassHTTP5xx.String() != "http_5xx" {
		t.Error("ErrorClass.String names are wrong")
	}
}

func TestRetryPolicyDecisions(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Retries: 3}
	live := context.Background()
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		s    Sample
		err  error
		want bool
	}{
		{"success", live, Sample{Status: 200}, nil, false},
		{"429", live, Sample{Status: 429}, StatusError{Code: 429}, true},
		{"503", live, Sample{Status: 503}, StatusError{Code: 503}, true},
		{"404", live, Sample{Status: 404}, StatusError{Code: 404}, false},
		{"network", live, Sample{}, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"request timeout", live, Sample{}, context.DeadlineExceeded, false},
		{"run canceled", dead, Sample{Status: 503}, StatusError{Code: 503}, false},
		{"canceled error", live, Sample{}, context.Canceled, false},
		{"other", live, Sample{}, errors.New("bad url"), false},
	} {
		if got := p.ShouldRetry(tc.ctx, &tc.s, tc.err); got != tc.want {
			t.Errorf("%s: ShouldRetry = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetryBackoffCappedWithJitter(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Base: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for n, full := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 80, 10: 80} {
		full *= time.Millisecond
		for range 50 {
			if d := p.Backoff(n); d < full/2 || d > full {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

// flaky fails with status codes from a list, then succeeds.
type flaky struct {
	codes []int
	calls int
}

func (f *flaky) Do(ctx context.Context) error { return f.DoSample(ctx, &Sample{}) }

func (f *flaky) DoSample(_ context.Context, s *Sample) error {
	f.calls++
	s.BytesOut = 10
	if f.calls <= len(f.codes) {
		s.Status = f.codes[f.calls-1]
		return StatusError{Code: s.Status}
	}
	s.Status = 200
	return nil
}

func TestRetryAttemptsVisible(t *testing.T) {
	t.Parallel()
	f := &flaky{codes: []int{503, 429}}
	r := Retry(f, RetryPolicy{Retries: 5, Base: time.Microsecond, Max: time.Microsecond})
	var s Sample
	if err := r.DoSample(t.Context(), &s); err != nil {
		t.Fatalf("DoSample = %v, want success after retries", err)
	}
	if s.Attempts != 3 || s.Status != 200 || s.BytesOut != 30 {
		t.Errorf("attempts=%d status=%d bytes out=%d, want 3, 200, 30", s.Attempts, s.Status, s.BytesOut)
	}
	// Retries run out: the last failure is reported.
	f = &flaky{codes: []int{500, 500, 500}}
	r = Retry(f, RetryPolicy{Retries: 1, Base: time.Microsecond})
	s = Sample{}
	if err := r.DoSample(t.Context(), &s); err == nil || s.Attempts != 2 || f.calls != 2 {
		t.Errorf("err=%v attempts=%d calls=%d, want an error after 2 attempts", err, s.Attempts, f.calls)
	}
	// 404 is not retried.
	f = &flaky{codes: []int{404}}
	if err := Retry(f, RetryPolicy{Retries: 3}).Do(t.Context()); err == nil || f.calls != 1 {
		t.Errorf("404: err=%v calls=%d, want one failed call", err, f.calls)
	}
}

func TestRetryCountsInResult(t *testing.T) {
	t.Parallel()
	f := RequesterFunc(func(ctx context.Context) error { return StatusError{Code: 502} })
	res, err := Run(t.Context(), Options{Requester: Retry(f, RetryPolicy{Retries: 2, Base: time.Microsecond, Max: time.Microsecond}), Total: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 10 || res.Retries != 20 || res.Errors != 10 {
		t.Errorf("requests=%d retries=%d errors=%d, want 10, 20, 10", res.Requests, res.Retries, res.Errors)
	}
}

func TestLogFailures(t *testing.T) {
	t.Parallel()
	var logged []int
	f := &flaky{codes: []int{500}}
	r := LogFailures(f, func(s *Sample, err error) { logged = append(logged, s.Status) })
	_ = r.Do(t.Context())
	_ = r.Do(t.Context())
	if len(logged) != 1 || logged[0] != 500 {
		t.Errorf("logged = %v, want [500]", logged)
	}
}
