// Package backoff is forgeload's one exponential backoff: [Exp], the wait
// after n failures (base doubling per failure, capped), [Jitter], which
// spreads a wait over ±20% so that many runners do not retry in step, and
// [Backoff], the same doubling kept as state by a retry loop. The poller,
// the reporter's log and final-state loops, the outbox of undelivered
// reports, the load engine's request retries and the cluster's Redis stream
// readers all use it. It has no
// dependencies and no clock: callers sleep.
package backoff
