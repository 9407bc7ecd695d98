package load

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Requester is what the engine drives: one call of DoSample is one request.
// The engine passes a per-worker [Sample], reset before each call, in which
// the driver reports the endpoint, status code, bytes and error class of the
// request without allocating; a driver with nothing to report leaves it as
// it is. A nil error is a success; any other error is counted as a failure
// and classified with [Classify]. Do is the same request with a throw-away
// Sample, for callers outside the engine. Both are called from many
// goroutines at once and must be safe for concurrent use.
type Requester interface {
	Do(ctx context.Context) error
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
	// Unsent, when not UnsentNone, says that no byte of the request left
	// the process, and why: its context was cancelled before it was
	// written, the feeder had no row for it, or its credentials could not
	// be fetched. The engine then counts it as a dropped arrival by that
	// reason, not as a request. A driver that cannot tell leaves it zero,
	// and the request counts as sent.
	Unsent DropReason
	// User is the driver's state for the worker (virtual user) that owns
	// this Sample, such as variables extracted from earlier responses. The
	// engine never reads it, and Reset keeps it.
	User any
}

// DropReason is why an arrival (or a closed-model request) was never sent.
// The zero value, UnsentNone, means it was sent.
type DropReason uint8

// The drop reasons, in the order they are reported.
const (
	UnsentNone DropReason = iota
	// DropLate: it waited longer than Options.MaxLateness for a worker.
	DropLate
	// DropStop: it fell due before the run stopped and was never sent.
	DropStop
	// DropLease: it fell due while this host did not hold its lease.
	DropLease
	// DropFeeder: the feeder had no row left for it.
	DropFeeder
	// DropCanceled: its context was cancelled (the run stopping) before
	// any byte of it was written.
	DropCanceled
	// DropAuth: the credentials it needed could not be fetched.
	DropAuth
	// DropStall: the generator itself stalled (a frozen process or host)
	// past Options.MaxStall, and it was skipped rather than sent in a
	// burst with the other overdue arrivals.
	DropStall
	// DropHandover: it fell due while a share of a multi-host run moved
	// to another host, before the host that took it over started (see
	// Options.Offset). It is reported but does not make a run invalid:
	// the coordinator's own rules judge what a lost host cost.
	DropHandover
	numDropReasons
)

var dropNames = [numDropReasons]string{"sent", "late", "stop", "lease", "feeder_exhausted", "canceled_before_send", "auth_failed", "stalled", "handover"}

// String returns the reason's stable snake_case name, as used in summaries.
func (r DropReason) String() string {
	if r < numDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Reset clears s for the next request, keeping User.
func (s *Sample) Reset() { *s = Sample{User: s.User} }

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
	// ClassGRPC is the class of gRPC status code 1 (canceled); status code
	// n (1..16) is class ClassGRPC+n-1. See [GRPCClass].
	ClassGRPC
	// ClassCheck is a response that failed a response check (package
	// check) and no other way.
	ClassCheck = ClassGRPC + 16
	numClasses = ClassCheck + 1
)

var classNames = [numClasses]string{"ok", "timeout", "canceled", "network", "http_4xx", "http_5xx", "protocol", "other",
	"grpc_canceled", "grpc_unknown", "grpc_invalid_argument", "grpc_deadline_exceeded", "grpc_not_found",
	"grpc_already_exists", "grpc_permission_denied", "grpc_resource_exhausted", "grpc_failed_precondition",
	"grpc_aborted", "grpc_out_of_range", "grpc_unimplemented", "grpc_internal", "grpc_unavailable",
	"grpc_data_loss", "grpc_unauthenticated", "check"}

// GRPCClass returns the class of a gRPC status code: ClassNone for 0 (OK),
// grpc_<name> for 1..16 (grpc_unavailable for 14), ClassOther otherwise.
func GRPCClass(code uint32) ErrorClass {
	switch {
	case code == 0:
		return ClassNone
	case code <= 16:
		return ClassGRPC + ErrorClass(code-1)
	}
	return ClassOther
}

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
