package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockSamples is how many TIME round trips a clock measurement takes; the
// one with the lowest RTT wins.
const clockSamples = 5

// clockRemeasure is how often a worker re-measures its clock offset.
const clockRemeasure = 30 * time.Second

// clock is one measurement of Redis's clock against this host's: Redis
// read redisAt at the local instant at (which carries a monotonic
// reading). Conversions count from that pair on the monotonic clock, so a
// step of this host's wall clock after the measurement changes nothing,
// and a step of Redis's clock changes nothing until the next measurement.
// offset (redis_time − local_wall at the measurement) is for reports.
//
// wall is the one place this host's wall clock is read (nil: time.Now):
// for offset, and, if Redis's clock was never measured, to take Redis's
// clock to be ours. Every wait and every conversion counts on the
// monotonic clock instead, so a wall clock that is off or steps moves
// nothing but the reported offset ([PoolOptions.WallClock]).
type clock struct {
	at      time.Time
	redisAt time.Time
	offset  time.Duration
	rtt     time.Duration
	wall    func() time.Time
}

// wallNow reads this host's wall clock, without a monotonic reading.
func (c clock) wallNow() time.Time {
	if c.wall == nil {
		return time.Now().Round(0)
	}
	return c.wall().Round(0)
}

// measureClock runs TIME clockSamples times and keeps the sample with the
// lowest round trip, taken at the midpoint of its round trip. wall reads
// this host's wall clock (nil: time.Now).
func measureClock(ctx context.Context, rdb redis.Cmdable, wall func() time.Time) (clock, error) {
	best := clock{rtt: -1, wall: wall}
	for range clockSamples {
		t0 := time.Now()
		ts, err := rdb.Time(ctx).Result()
		t1 := time.Now()
		w1 := best.wallNow()
		if err != nil {
			return clock{wall: wall}, fmt.Errorf("measure clock offset to redis (TIME): %w", err)
		}
		rtt := t1.Sub(t0)
		if best.rtt < 0 || rtt < best.rtt {
			// The wall clock at the midpoint, from its reading at t1.
			best = clock{at: t0.Add(rtt / 2), redisAt: ts, offset: ts.Sub(w1.Add(-rtt / 2)), rtt: rtt, wall: wall}
		}
	}
	return best, nil
}

// local converts a Redis-clock instant (unix ms) to a local instant that
// carries a monotonic reading, so later waits are immune to clock steps.
func (c clock) local(redisMs int64) time.Time {
	if c.at.IsZero() { // never measured: take Redis's clock to be ours
		return time.Now().Add(time.UnixMilli(redisMs).Sub(c.wallNow()))
	}
	return c.at.Add(time.UnixMilli(redisMs).Sub(c.redisAt))
}

// redisNow estimates Redis's current time.
func (c clock) redisNow() time.Time {
	if c.at.IsZero() {
		return c.wallNow()
	}
	return c.redisAt.Add(time.Since(c.at))
}
