package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// abortRun: KEYS state meta; ARGV recreateTTLSec (” for never), field
// value ... Moves a live run to ABORTED and writes the fields (the abort
// reason) in the same step, so no reader sees ABORTED without its reason.
// With a TTL it also writes back a state key that is gone (Redis restarted
// without persistence). Returns 1 when it aborted the run, 0 otherwise.
var abortRunScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  if ARGV[1] == '' then return 0 end
  redis.call('SET', KEYS[1], 'ABORTED', 'EX', ARGV[1])
elseif cur == 'PREPARING' or cur == 'READY' or cur == 'RUNNING' or cur == 'STOPPING' then
  redis.call('SET', KEYS[1], 'ABORTED', 'KEEPTTL')
else
  return 0
end
if #ARGV > 1 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 2))
  local t = redis.call('TTL', KEYS[1])
  if t > 0 and redis.call('TTL', KEYS[2]) < 0 then redis.call('EXPIRE', KEYS[2], t) end
end
return 1`)

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

// aliveRenew: KEYS alive workers renewals; ARGV wid gen px ttl.
// Returns 1 renewed, 0 not a member any more (reaped), -1 stale gen.
// Each renewal also counts in renewals, a key that lives as long as the
// run: the coordinator judges the lease by that count changing, on its own
// clock, never by the PX expiry, which follows Redis's clock.
var aliveRenewScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) > tonumber(ARGV[2]) then return -1 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[4], 'NX')
return 1`)

// reapUnrenewed: KEYS workers alive renewals; ARGV wid renewals.
// Removes the worker from the run only if its renewal count is still the
// one the coordinator judged expired (” when it had none). Returns 1 when
// reaped, 0 when it renewed meanwhile (it is alive; nothing changed).
// After a reap every renewal of the worker fails, so the last renewal it
// saw acknowledged is one the coordinator had seen.
var reapUnrenewedScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[3]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
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

// ErrNotOwner is returned when a segment is not held by the caller (it
// moved to another worker, or the caller was reaped).
var ErrNotOwner = errors.New("not owner")

// ErrRunExists is returned by run creation when the run id is taken.
var ErrRunExists = errors.New("run already exists")

func scriptErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), "EXISTS") {
		return fmt.Errorf("%s: %w: pick a new run id", op, ErrRunExists)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "NOTOWNER "); ok {
		return fmt.Errorf("%s: %w: %s", op, ErrNotOwner, msg)
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

// abortRun moves a live run to ABORTED and records fields (abort_reason
// first) with it in one step. recreateTTL > 0 also writes back a state key
// that no longer exists. It reports whether it aborted the run.
func abortRun(ctx context.Context, rdb redis.Scripter, k runKeys, recreateTTL time.Duration, fields ...string) (bool, error) {
	ttl := ""
	if recreateTTL > 0 {
		ttl = strconv.Itoa(int(recreateTTL / time.Second))
	}
	args := make([]any, 0, 1+len(fields))
	args = append(args, ttl)
	for _, f := range fields {
		args = append(args, f)
	}
	n, err := abortRunScript.Run(ctx, rdb, []string{k.state(), k.meta()}, args...).Int()
	if err != nil {
		return false, scriptErr("mark the run ABORTED", err)
	}
	return n == 1, nil
}
