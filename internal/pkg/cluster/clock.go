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
type clock struct {
	at      time.Time
	redisAt time.Time
	offset  time.Duration
	rtt     time.Duration
}

// measureClock runs TIME clockSamples times and keeps the sample with the
// lowest round trip, taken at the midpoint of its round trip.
func measureClock(ctx context.Context, rdb redis.Cmdable) (clock, error) {
	best := clock{rtt: -1}
	for range clockSamples {
		t0 := time.Now()
		ts, err := rdb.Time(ctx).Result()
		t1 := time.Now()
		if err != nil {
			return clock{}, fmt.Errorf("measure clock offset to redis (TIME): %w", err)
		}
		rtt := t1.Sub(t0)
		if best.rtt < 0 || rtt < best.rtt {
			mid := t0.Add(rtt / 2)
			best = clock{at: mid, redisAt: ts, offset: ts.Sub(mid.Round(0)), rtt: rtt}
		}
	}
	return best, nil
}

// local converts a Redis-clock instant (unix ms) to a local instant that
// carries a monotonic reading, so later waits are immune to clock steps.
func (c clock) local(redisMs int64) time.Time {
	if c.at.IsZero() { // never measured: take Redis's clock to be ours
		now := time.Now()
		return now.Add(time.UnixMilli(redisMs).Sub(now.Round(0)))
	}
	return c.at.Add(time.UnixMilli(redisMs).Sub(c.redisAt))
}

// redisNow estimates Redis's current time.
func (c clock) redisNow() time.Time {
	if c.at.IsZero() {
		return time.Now().Round(0)
	}
	return c.redisAt.Add(time.Since(c.at))
}
