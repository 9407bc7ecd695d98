package load

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
)

// Default retry settings, used where a [RetryPolicy] field is zero.
const (
	DefaultRetryBase = 50 * time.Millisecond
	DefaultRetryMax  = 2 * time.Second
)

// RetryPolicy says how often and how patiently a request is retried. The zero
// value retries nothing. A RetryPolicy is a plain value, safe to copy and to
// share between goroutines.
type RetryPolicy struct {
	// Retries is the number of retries after the first attempt; 0 disables
	// retrying.
	Retries int
	// Base is the backoff before the first retry; it doubles per retry.
	// Default DefaultRetryBase.
	Base time.Duration
	// Max caps the backoff. Default DefaultRetryMax.
	Max time.Duration
}

// ShouldRetry reports whether a request that ended with err and the outcome
// in s is worth retrying: 429, 5xx and network errors are; context errors
// (the run is stopping, or the request's own deadline passed) never are, and
// neither are other 4xx statuses or successes.
func (p RetryPolicy) ShouldRetry(ctx context.Context, s *Sample, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if s.Status == 429 || s.Status >= 500 {
		return true
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	c := s.Class
	if c == ClassNone {
		c = Classify(err)
	}
	return c == ClassNetwork || c == ClassHTTP5xx || c == GRPCClass(grpcUnavailable)
}

// grpcUnavailable is gRPC's status code UNAVAILABLE, the one code gRPC
// documents as safe to retry.
const grpcUnavailable = 14

// Backoff returns the wait before retry number n (1-based): Base·2^(n-1),
// capped at Max, with "full jitter" drawn from the upper half of that range
// so that retries of many workers spread out.
func (p RetryPolicy) Backoff(n int) time.Duration {
	base, maxd := p.Base, p.Max
	if base <= 0 {
		base = DefaultRetryBase
	}
	if maxd <= 0 {
		maxd = DefaultRetryMax
	}
	d := backoff.Exp(n, base, maxd)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// Retry wraps r so that failed requests are retried under p. The returned
// requester reports the number of attempts in [Sample.Attempts] and the
// outcome of the last attempt. It is safe for concurrent use when r is.
func Retry(r Requester, p RetryPolicy) Requester {
	return &retrier{r: r, p: p}
}

type retrier struct {
	r Requester
	p RetryPolicy
}

var _ Requester = (*retrier)(nil)

func (rt *retrier) Do(ctx context.Context) error {
	var s Sample
	return rt.DoSample(ctx, &s)
}

func (rt *retrier) DoSample(ctx context.Context, s *Sample) error {
	var bytesOut int64
	for attempt := 1; ; attempt++ {
		ep := s.Endpoint
		s.Reset()
		if attempt > 1 {
			s.Endpoint = ep // a retry goes to the same endpoint
		}
		s.Attempts = attempt
		err := rt.r.DoSample(ctx, s)
		bytesOut += s.BytesOut
		if attempt > 1 {
			s.Unsent = UnsentNone // an earlier attempt left: the request was sent
		}
		if s.Unsent != UnsentNone || attempt > rt.p.Retries || !rt.p.ShouldRetry(ctx, s, err) {
			s.Attempts = attempt
			s.BytesOut = bytesOut
			return err
		}
		t := time.NewTimer(rt.p.Backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			s.Attempts = attempt
			s.BytesOut = bytesOut
			return err
		case <-t.C:
		}
	}
}

// FailureLogger receives failed requests from [LogFailures]. It must not
// block for long and must not log secrets; err comes from the driver.
type FailureLogger func(s *Sample, err error)

// LogFailures wraps r so that every failed request (an error, or a 4xx/5xx
// status) is passed to log; a request that was never sent
// ([Sample.Unsent]) is not a failed request and is not logged. The
// returned requester is safe for concurrent use when r and log are.
func LogFailures(r Requester, log FailureLogger) Requester {
	return &failureLogger{r: r, log: log}
}

type failureLogger struct {
	r   Requester
	log FailureLogger
}

var _ Requester = (*failureLogger)(nil)

func (f *failureLogger) Do(ctx context.Context) error {
	var s Sample
	return f.DoSample(ctx, &s)
}

func (f *failureLogger) DoSample(ctx context.Context, s *Sample) error {
	err := f.r.DoSample(ctx, s)
	if (err != nil || s.Status >= 400) && s.Unsent == UnsentNone {
		f.log(s, err) // an unsent request is a dropped arrival, not a failure
	}
	return err
}
