package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Lua scripts. Each one checks ownership or generation before it writes and
// gives every run key it creates EXPIRE … NX with the run TTL.

// casState: KEYS state; ARGV comma-separated allowed from-states, to.
// Returns 1 when swapped, 0 otherwise.
var casStateScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
for s in string.gmatch(ARGV[1], '[^,]+') do
  if s == cur then
    redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
    return 1
  end
end
return 0`)

// createRun: KEYS state coord gen meta; ARGV coordValue leasePX ttlSec field value ...
// Fails with "EXISTS" when the run's state key is present; returns the gen.
var createRunScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('EXISTS run already exists') end
redis.call('SET', KEYS[1], 'PREPARING', 'EX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local g = redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[3], 'NX')
if #ARGV > 3 then
  redis.call('HSET', KEYS[4], unpack(ARGV, 4))
  redis.call('EXPIRE', KEYS[4], ARGV[3], 'NX')
end
return g`)

// renewLease: compare-and-PEXPIRE. KEYS key; ARGV value px. Returns 1 or 0.
var renewLeaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`)

// aliveRenew: KEYS alive workers; ARGV wid gen px.
// Returns 1 renewed, 0 not a member any more (reaped), -1 stale gen.
var aliveRenewScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) > tonumber(ARGV[2]) then return -1 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`)

// join: KEYS state workers alive events seg; ARGV wid info px ttl.
// Returns 1 joined, 0 run not accepting workers.
var joinScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= 'PREPARING' or redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[4], 'NX')
redis.call('SET', KEYS[3], '0', 'PX', ARGV[3])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', '10000', '*', 'type', 'joined', 'w', ARGV[1], 'g', '0')
redis.call('EXPIRE', KEYS[4], ARGV[4], 'NX')
return 1`)

// reassign: KEYS segOwner gen; ARGV seg expectedOwner newWid ttl.
// Returns the new gen, or 0 when the owner is not the expected one.
// An empty newWid leaves the segment unowned (degraded).
var reassignScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local g = redis.call('INCR', KEYS[2])
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. ':' .. g)
end
return g`)

// reap: KEYS workers alive held1 free1 held2 free2 ...; ARGV wid.
// Removes the worker from the run and returns its held resources to free.
// Returns the number of resources returned.
var reapScript = redis.NewScript(`
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
local n = 0
local p = ARGV[1] .. ':'
for i = 3, #KEYS, 2 do
  local held = redis.call('HGETALL', KEYS[i])
  for j = 1, #held, 2 do
    if string.sub(held[j+1], 1, #p) == p then
      redis.call('HDEL', KEYS[i], held[j])
      redis.call('SADD', KEYS[i+1], held[j])
      n = n + 1
    end
  end
end
return n`)

// acquire: KEYS free held data desired workers; ARGV wid gen.
// Returns {id, payload}, nil when the pool is empty, or an error
// NOTOWNER / STALE.
var acquireScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[5], ARGV[1]) == 0 then return redis.error_reply('NOTOWNER worker is not in the run') end
if redis.call('HGET', KEYS[4], 'gen') ~= ARGV[2] then return redis.error_reply('STALE generation is not current') end
local id = redis.call('SPOP', KEYS[1])
if not id then return false end
redis.call('HSET', KEYS[2], id, ARGV[1] .. ':' .. ARGV[2])
return {id, redis.call('HGET', KEYS[3], id) or ''}`)

// release: KEYS held free desired; ARGV id wid gen. Returns 1 or an error.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[3], 'gen') ~= ARGV[3] then return redis.error_reply('STALE generation is not current') end
local owner = redis.call('HGET', KEYS[1], ARGV[1])
local p = ARGV[2] .. ':'
if not owner or string.sub(owner, 1, #p) ~= p then return redis.error_reply('NOTOWNER resource is not held by this worker') end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
return 1`)

// ErrNotOwner is returned when a lease, resource or segment is not held by
// the caller.
var ErrNotOwner = errors.New("not owner")

// ErrStaleGen is returned when the caller's generation is no longer current.
var ErrStaleGen = errors.New("stale generation")

// ErrRunExists is returned by run creation when the run id is taken.
var ErrRunExists = errors.New("run already exists")

func scriptErr(op string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "NOTOWNER"):
		return fmt.Errorf("%s: %w", op, ErrNotOwner)
	case strings.HasPrefix(msg, "STALE"):
		return fmt.Errorf("%s: %w", op, ErrStaleGen)
	case strings.HasPrefix(msg, "EXISTS"):
		return fmt.Errorf("%s: %w: pick a new run id", op, ErrRunExists)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// casState moves the run from any of from to to. It reports whether it did.
func casState(ctx context.Context, rdb redis.Scripter, k runKeys, to string, from ...string) (bool, error) {
	n, err := casStateScript.Run(ctx, rdb, []string{k.state()}, strings.Join(from, ","), to).Int()
	if err != nil {
		return false, scriptErr("cas run state to "+to, err)
	}
	return n == 1, nil
}

// Resource is one item of a run's resource pool.
type Resource struct {
	ID      string
	Payload string
}

// Acquire takes a free resource from pool name for worker wid at gen. It
// returns ok=false when the pool is empty, and [ErrNotOwner] or
// [ErrStaleGen] when the worker is not in the run or gen is not current.
func Acquire(ctx context.Context, rdb redis.Scripter, run, name, wid string, gen int64) (Resource, bool, error) {
	k := runKeys(run)
	v, err := acquireScript.Run(ctx, rdb, []string{k.resFree(name), k.resHeld(name), k.resData(name), k.desired(wid), k.workers()}, wid, gen).Slice()
	if errors.Is(err, redis.Nil) {
		return Resource{}, false, nil
	}
	if err != nil {
		return Resource{}, false, scriptErr(fmt.Sprintf("acquire resource from pool %q for worker %s", name, wid), err)
	}
	id, _ := v[0].(string)
	payload, _ := v[1].(string)
	return Resource{ID: id, Payload: payload}, true, nil
}

// Release returns resource id to pool name. Only the holder at the current
// gen may release it.
func Release(ctx context.Context, rdb redis.Scripter, run, name, id, wid string, gen int64) error {
	k := runKeys(run)
	err := releaseScript.Run(ctx, rdb, []string{k.resHeld(name), k.resFree(name), k.desired(wid)}, id, wid, gen).Err()
	return scriptErr(fmt.Sprintf("release resource %s of pool %q by worker %s", id, name, wid), err)
}
