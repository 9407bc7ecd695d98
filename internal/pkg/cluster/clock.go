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

// clock is a measured offset between this host's wall clock and Redis's.
// redis_time ≈ local_wall + offset.
type clock struct {
	offset time.Duration
	rtt    time.Duration
}

// measureClock runs TIME clockSamples times and keeps the sample with the
// lowest round trip: offset = redis_ts − (t_send + t_recv)/2.
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
			best = clock{offset: ts.Sub(mid.Round(0)), rtt: rtt}
		}
	}
	return best, nil
}

// local converts a Redis-clock instant (unix ms) to a local instant that
// carries a monotonic reading, so later waits are immune to NTP steps.
func (c clock) local(redisMs int64) time.Time {
	now := time.Now()
	return now.Add(time.UnixMilli(redisMs).Sub(now.Round(0)) - c.offset)
}

// redisNow estimates Redis's current time.
func (c clock) redisNow() time.Time { return time.Now().Round(0).Add(c.offset) }
