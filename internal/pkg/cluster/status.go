package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// PoolStatus is what `forgeload cluster status` shows; its JSON form
// (--json) uses the snake_case names in the tags, and lists are never
// null.
type PoolStatus struct {
	Runners []RunnerStatus `json:"runners"`
	Runs    []RunStatus    `json:"runs"`
}

// RunnerStatus is one runner with a live presence lease.
type RunnerStatus struct {
	ID       string   `json:"id"`
	Host     string   `json:"host"`
	Version  string   `json:"version"`
	Labels   []string `json:"labels"`
	Capacity int      `json:"capacity"`
	MaxVUs   int      `json:"max_vus"`
	// BusyRuns lists the runs it serves now.
	BusyRuns []string `json:"busy_runs"`
}

// RunStatus is one run whose keys are still in Redis.
type RunStatus struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Coordinator string `json:"coordinator"`
	// StartAt is zero (left out of the JSON) before the barrier.
	StartAt time.Time `json:"start_at,omitzero"`
	Workers []string  `json:"workers"`
	// Segments is ordered by index.
	Segments []SegmentStatus `json:"segments"`
	// AbortReason is set for ABORTED runs.
	AbortReason string `json:"abort_reason,omitempty"`
}

// SegmentStatus is one segment of a run and its owner ("" when unowned).
type SegmentStatus struct {
	Index int    `json:"index"`
	Range string `json:"range"`
	Owner string `json:"owner"`
	Gen   int64  `json:"gen"`
}

// Status reads the pool and the runs from Redis. It only reads.
func Status(ctx context.Context, rdb *redis.Client) (*PoolStatus, error) {
	ids, err := rdb.SMembers(ctx, runnersKey).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster status: list runners (%s): %w; check cluster.redis_url", runnersKey, err)
	}
	slices.Sort(ids)
	ps := &PoolStatus{Runners: []RunnerStatus{}, Runs: []RunStatus{}}
	for _, id := range ids {
		h, err := rdb.HGetAll(ctx, presenceKey(id)).Result()
		if err != nil {
			return nil, fmt.Errorf("cluster status: read runner %s: %w", id, err)
		}
		if len(h) == 0 {
			continue
		}
		r := RunnerStatus{ID: id, Host: h["host"], Version: h["version"], Labels: []string{}, BusyRuns: []string{}}
		r.Capacity, _ = strconv.Atoi(h["capacity"])
		r.MaxVUs, _ = strconv.Atoi(h["max_vus"])
		if h["labels"] != "" {
			r.Labels = strings.Split(h["labels"], ",")
		}
		if h["busy_run"] != "" {
			r.BusyRuns = strings.Split(h["busy_run"], ",")
		}
		ps.Runners = append(ps.Runners, r)
	}
	iter := rdb.Scan(ctx, 0, "lt:{*}:state", 256).Iterator()
	var runs []string
	for iter.Next(ctx) {
		key := iter.Val()
		if i, j := strings.Index(key, "{"), strings.Index(key, "}"); i >= 0 && j > i {
			runs = append(runs, key[i+1:j])
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("cluster status: scan runs: %w", err)
	}
	slices.Sort(runs)
	for _, run := range runs {
		rs, err := runStatus(ctx, rdb, run)
		if err != nil {
			return nil, err
		}
		ps.Runs = append(ps.Runs, rs)
	}
	return ps, nil
}

func runStatus(ctx context.Context, rdb *redis.Client, run string) (RunStatus, error) {
	k := runKeys(run)
	pipe := rdb.Pipeline()
	st := pipe.Get(ctx, k.state())
	meta := pipe.HGetAll(ctx, k.meta())
	ws := pipe.HKeys(ctx, k.workers())
	seg := pipe.HGetAll(ctx, k.seg())
	own := pipe.HGetAll(ctx, k.segOwner())
	sa := pipe.Get(ctx, k.startAt())
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return RunStatus{}, fmt.Errorf("cluster status: read run %s: %w", run, err)
	}
	rs := RunStatus{ID: run, State: st.Val(), Coordinator: meta.Val()["coordinator"], AbortReason: meta.Val()["abort_reason"]}
	rs.Workers = append([]string{}, ws.Val()...)
	slices.Sort(rs.Workers)
	rs.Segments = []SegmentStatus{}
	if ms, err := strconv.ParseInt(sa.Val(), 10, 64); err == nil {
		rs.StartAt = time.UnixMilli(ms)
	}
	idx := slices.Sorted(maps.Keys(seg.Val()))
	slices.SortFunc(idx, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	for _, i := range idx {
		n, _ := strconv.Atoi(i)
		s := SegmentStatus{Index: n, Range: seg.Val()[i]}
		if o := own.Val()[i]; o != "" {
			w, g, _ := strings.Cut(o, ":")
			s.Owner = w
			s.Gen, _ = strconv.ParseInt(g, 10, 64)
		}
		rs.Segments = append(rs.Segments, s)
	}
	return rs, nil
}
