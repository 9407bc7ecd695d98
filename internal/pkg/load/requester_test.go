package load

import "context"

// RequesterFunc adapts a function to [Requester] for the tests; the drivers
// of the binary are types of their own.
type RequesterFunc func(ctx context.Context) error

// Do calls f(ctx).
func (f RequesterFunc) Do(ctx context.Context) error { return f(ctx) }

// DoSample calls f(ctx) and reports nothing.
func (f RequesterFunc) DoSample(ctx context.Context, _ *Sample) error { return f(ctx) }
