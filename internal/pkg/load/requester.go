package load

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Requester is the simplest thing the engine can drive: one call of Do is one
// request. A nil error is a success; any other error is counted as a failure
// and classified with [Classify]. Do is called from many goroutines at once
// and must be safe for concurrent use.
type Requester interface {
	Do(ctx context.Context) error
}

// RequesterFunc adapts an ordinary function to [Requester].
type RequesterFunc func(ctx context.Context) error

// Do calls f(ctx).
func (f RequesterFunc) Do(ctx context.Context) error { return f(ctx) }

// SampleRequester is an optional capability of a [Requester], found by type
// assertion. The engine passes a per-worker [Sample], reset before each call,
// in which the driver reports the endpoint, status code, bytes and error
// class of the request without allocating. Drivers that implement it should
// implement Do as DoSample with a throw-away Sample.
type SampleRequester interface {
	Requester
	DoSample(ctx context.Context, s *Sample) error
}

// Sample is what one request reports to the recorder. The engine owns it and
// reuses it: a driver must not keep a pointer to it after DoSample returns.
// The zero value is a request to endpoint 0 with no status, bytes or class.
type Sample struct {
	// Endpoint is the index into [Options.Endpoints] of the endpoint this
	// request went to; 0 when there is only one.
	Endpoint int
	// Status is the protocol status code (HTTP status), 0 when none was
	// received.
	Status int
	// BytesIn and BytesOut count the response and request bytes (bodies, and
	// headers where the driver can count them).
	BytesIn, BytesOut int64
	// Class is the error class. When it is ClassNone and the request returned
	// an error, the engine classifies the error with [Classify].
	Class ErrorClass
	// Attempts is how many attempts the request took; 0 is read as 1. The
	// retry decorator sets it before each attempt (1, 2, …) and to the final
	// count afterwards. A driver that picks among endpoints must keep
	// Endpoint when Attempts > 1, so that a retry repeats the same request.
	Attempts int
}

// Reset clears s for the next request.
func (s *Sample) Reset() { *s = Sample{} }

// ErrorClass is the bounded classification of a failed request. The zero
// value, ClassNone, means success.
type ErrorClass uint8

// The error classes, in the order they are reported.
const (
	ClassNone     ErrorClass = iota // success
	ClassTimeout                    // the request's own deadline expired
	ClassCanceled                   // the run was stopped while the request was in flight
	ClassNetwork                    // dial, reset, refused, EOF and other transport errors
	ClassHTTP4xx                    // a 4xx status
	ClassHTTP5xx                    // a 5xx status
	ClassProtocol                   // a malformed response
	ClassOther                      // anything else
	numClasses
)

var classNames = [numClasses]string{"ok", "timeout", "canceled", "network", "http_4xx", "http_5xx", "protocol", "other"}

// String returns the class's stable snake_case name, as used in summaries.
func (c ErrorClass) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "unknown"
}

// StatusError is the error a driver returns for a response whose status
// counts as a failure. It is comparable and allocation-free to return by
// value.
type StatusError struct {
	// Code is the status code.
	Code int
}

// Error reports the status.
func (e StatusError) Error() string { return "unexpected status " + itoa(e.Code) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Classify maps an error returned by a request to its class. It returns
// ClassNone for nil. Context deadline errors are timeouts, cancellation is
// ClassCanceled, a [StatusError] is classed by its code, and errors from the
// network stack (net.Error, syscall errors, EOF-like resets) are
// ClassNetwork, as is a connection closed early (io.EOF,
// io.ErrUnexpectedEOF).
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return ClassTimeout
	}
	var se StatusError
	if errors.As(err, &se) {
		return StatusClass(se.Code)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return ClassTimeout
		}
		return ClassNetwork
	}
	var errno syscall.Errno
	if errors.As(err, &errno) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ClassNetwork // includes a peer closing the connection mid-exchange
	}
	return ClassOther
}

// StatusClass returns the class of a status code: ClassHTTP5xx for 5xx,
// ClassHTTP4xx for 4xx and ClassNone otherwise.
func StatusClass(code int) ErrorClass {
	switch {
	case code >= 500:
		return ClassHTTP5xx
	case code >= 400:
		return ClassHTTP4xx
	}
	return ClassNone
}

// doSample runs one request through r, using the rich path when r has it.
func doSample(ctx context.Context, r Requester, sr SampleRequester, s *Sample) error {
	if sr != nil {
		return sr.DoSample(ctx, s)
	}
	return r.Do(ctx)
}
