package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// claimRows: KEYS segOwner feedNext feedBack; ARGV seg wid n limit ttl.
// Hands out feeder row indices to the current owner of segment seg: at
// most n of a range given back first (the rest stays given back), else
// the next n (capped at limit unless limit is 0). Returns {from, to, left}; from == to when none is left; NOTOWNER
// when the caller does not own the segment (reassigned, or reaped).
var claimRowsScript = redis.NewScript(`
local o = redis.call('HGET', KEYS[1], ARGV[1])
local p = ARGV[2] .. ':'
if not o or string.sub(o, 1, #p) ~= p then return redis.error_reply('NOTOWNER segment ' .. ARGV[1] .. ' is not owned by this worker') end
local limit = tonumber(ARGV[4])
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local left = 0
if limit > 0 then left = math.max(limit - cur, 0) end
local n = tonumber(ARGV[3])
local back = redis.call('LPOP', KEYS[3])
if back then
  local a, b = string.match(back, '^(%d+)-(%d+)$')
  a, b = tonumber(a), tonumber(b)
  if n > 0 and b - a > n then
    redis.call('LPUSH', KEYS[3], (a + n) .. '-' .. b)
    b = a + n
  end
  return {a, b, left}
end
if limit > 0 then n = math.min(n, left) end
if n <= 0 then return {cur, cur, 0} end
local to = redis.call('INCRBY', KEYS[2], n)
redis.call('EXPIRE', KEYS[2], ARGV[5], 'NX')
if limit > 0 then left = left - n end
return {to - n, to, left}`)

// RowClaims hands out a run's feeder rows to one segment of one worker:
// every host claims ranges of the run-wide row index from one counter in
// Redis (lt:{R}:feed:next), so no index goes to two hosts, and ranges a
// host gives back (lt:{R}:feed:back) are claimed first. Only the
// segment's current owner may claim, so a worker whose segment moved on
// (fenced, reaped) gets [ErrNotOwner] and sends no more rows. It
// implements the load engine's feeder.Claimer.
type RowClaims struct {
	rdb redis.Cmdable
	k   runKeys
	seg int
	wid string
	ttl int
}

// NewRowClaims returns the row claims of segment seg of run for worker
// wid; keys it creates live ttlSec seconds. The pool hands one to each
// segment in [Assignment.Rows]; tests build their own.
func NewRowClaims(rdb redis.Cmdable, run string, seg int, wid string, ttlSec int) *RowClaims {
	return &RowClaims{rdb: rdb, k: runKeys(run), seg: seg, wid: wid, ttl: max(ttlSec, 60)}
}

// Claim takes up to n row indices below limit (0: no limit); see
// feeder.Claimer.
func (c *RowClaims) Claim(ctx context.Context, n, limit uint64) (from, to, left uint64, err error) {
	v, err := claimRowsScript.Run(ctx, c.rdb, []string{c.k.segOwner(), c.k.feedNext(), c.k.feedBack()},
		c.seg, c.wid, n, limit, c.ttl).Int64Slice()
	if err != nil {
		return 0, 0, 0, scriptErr(fmt.Sprintf("claim feeder rows for segment %d of run %s", c.seg, c.k), err)
	}
	if len(v) != 3 || v[0] < 0 || v[1] < v[0] || v[2] < 0 {
		return 0, 0, 0, fmt.Errorf("claim feeder rows for segment %d of run %s: malformed reply %v", c.seg, c.k, v)
	}
	return uint64(v[0]), uint64(v[1]), uint64(v[2]), nil
}

// Return gives back row indices [from, to) that were claimed and never
// sent; later claims take them first. Anyone in the run may give rows
// back: rows never sent are safe to send once.
func (c *RowClaims) Return(ctx context.Context, from, to uint64) error {
	if to <= from {
		return nil
	}
	_, err := c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.RPush(ctx, c.k.feedBack(), strconv.FormatUint(from, 10)+"-"+strconv.FormatUint(to, 10))
		pipe.ExpireNX(ctx, c.k.feedBack(), time.Duration(c.ttl)*time.Second)
		return nil
	})
	if err != nil {
		return fmt.Errorf("give back feeder rows %d-%d of run %s: %w", from, to, c.k, err)
	}
	return nil
}
