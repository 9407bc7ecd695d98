package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/redact"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

// redisDialTimeout bounds the first contact with the cluster's Redis.
const redisDialTimeout = 5 * time.Second

// redisStartTries is how many times a starting daemon checks Redis before
// it gives up: with the pauses between them (1, 2 and 4 s), a Redis that
// answers within 7 s of the first check is waited for.
const redisStartTries = 4

// newRedis opens the client for cluster.redis_url and checks that Redis
// answers. Errors never show the URL's password.
func newRedis(ctx context.Context, rawURL string) (*redis.Client, error) {
	return newRedisTries(ctx, rawURL, 1, nil)
}

// newRedisTries is newRedis that checks Redis up to tries times, pausing
// between them (1 s, then 2 s, …) and saying each failure to warn: a stall
// of a busy machine or a Redis still starting must not stop a daemon,
// while a wrong address still fails within seconds. A URL that does not
// parse fails at once.
func newRedisTries(ctx context.Context, rawURL string, tries int, warn func(error)) (*redis.Client, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cluster.redis_url %s: %w: use redis://[user:password@]host:port[/db] or rediss:// for TLS", redact.URL(rawURL), redact.Error(err, rawURL))
	}
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	rdb := redis.NewClient(opt)
	b := backoff.Backoff{Min: time.Second, Max: 4 * time.Second}
	for n := 1; ; n++ {
		pctx, cancel := context.WithTimeout(ctx, redisDialTimeout)
		err = rdb.Ping(pctx).Err()
		cancel()
		if err == nil {
			return rdb, nil
		}
		err = fmt.Errorf("cluster.redis_url %s: cannot reach redis: %w: check the address, the credentials and that redis-server is running", redact.URL(rawURL), redact.Error(err, rawURL))
		if n >= tries || ctx.Err() != nil {
			_ = rdb.Close()
			return nil, err
		}
		if warn != nil {
			warn(err)
		}
		t := time.NewTimer(b.Next())
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// redisLog routes the Redis client's own messages (dial failures while
// Redis is away, pool warnings) through our logger at debug level, so they
// follow log.format and never reach stderr as raw lines. They name
// addresses, never passwords.
type redisLog struct{ log *logrus.Entry }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debugf("redis client: "+format, v...)
}

// clusterObserver feeds the cluster metrics of the daemon.
type clusterObserver struct{ m *metrics.Metrics }

var _ cluster.Observer = clusterObserver{}

func (o clusterObserver) SetWorkers(n int)   { o.m.ClusterWorkers.Set(float64(n)) }
func (o clusterObserver) SegmentReassigned() { o.m.ClusterSegmentReassignmentsTotal.Inc() }

// clusterLink is the daemon's part in a cluster: the Redis client, this
// runner's cluster name, and (once started) its pool membership. It
// implements loadrun.Coordinator for the load steps this runner takes.
type clusterLink struct {
	rdb *redis.Client
	id  string
	obs cluster.Observer
	log *logrus.Entry
	// timing is the config's cluster section: its timings tune the pool
	// and every run this runner coordinates.
	timing config.Cluster
	// masks hide, in the daemon's log, the secrets of the runs it
	// coordinates (hooked into log's logger).
	masks *jobMasks

	wg sync.WaitGroup
}

var _ loadrun.Coordinator = (*clusterLink)(nil)

// newClusterLink connects to cluster.redis_url; it returns nil when no
// cluster is configured.
func newClusterLink(ctx context.Context, cfg *config.Config, m *metrics.Metrics, log *logrus.Entry) (*clusterLink, error) {
	if cfg.Cluster.RedisURL == "" {
		return nil, nil
	}
	id := cfg.Cluster.Name
	if id == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("cluster.name is empty and the host name is unknown (%w): set cluster.name", err)
		}
		id = h
	}
	redis.SetLogger(redisLog{log.WithField("cluster", id)})
	rdb, err := newRedisTries(ctx, cfg.Cluster.RedisURL, redisStartTries, func(err error) {
		log.WithError(err).Warn("retrying Redis before starting the cluster link")
	})
	if err != nil {
		return nil, err
	}
	masks := &jobMasks{}
	log.Logger.AddHook(masks)
	return &clusterLink{rdb: rdb, id: id, obs: clusterObserver{m}, log: log.WithField("cluster", id), timing: cfg.Cluster, masks: masks}, nil
}

// poolTimings are the worker's side of cfg's cluster timings.
func poolTimings(cfg config.Cluster, o *cluster.PoolOptions) {
	o.Heartbeat, o.LeaseTTL, o.FenceAfter, o.CoordLostAfter = cfg.Heartbeat, cfg.Lease, cfg.FenceAfter, cfg.CoordinatorLostAfter
}

// coordTimings are the coordinator's side of cfg's cluster timings.
func coordTimings(cfg config.Cluster, o *cluster.CoordOptions) {
	o.SweepInterval, o.Lease = cfg.SweepInterval, cfg.CoordinatorLease
}

// Coordinate runs a distributed load step as its coordinator, under this
// runner's cluster name. While it runs, every line of the daemon's log
// (its own error at the end, this host's segment lines) goes through mask.
func (c *clusterLink) Coordinate(ctx context.Context, p cluster.Run, o cluster.CoordOptions, mask func(string) string) (*cluster.Outcome, error) {
	defer c.masks.add(mask)()
	o.Coordinator = c.id
	o.Observer = c.obs
	coordTimings(c.timing, &o)
	c.log.Infof("coordinating a distributed load test over %d workers", p.Workers)
	out, err := cluster.Coordinate(ctx, c.rdb, p, o)
	c.obs.SetWorkers(0)
	if err != nil {
		c.log.WithError(err).Warn("distributed load test failed")
	}
	return out, err
}

// startPool joins the pool: presence lease, offers within max_segments,
// segments run by runner. The pool runs until ctx ends (the first SIGTERM),
// then abandons its segments so their coordinators reassign them at once.
// Wait waits for it.
func (c *clusterLink) startPool(ctx context.Context, cfg *config.Config, labels []string, runner cluster.SegmentRunner) error {
	o := cluster.PoolOptions{
		ID:          c.id,
		Labels:      labels,
		Capacity:    max(cfg.Cluster.MaxSegments, 1),
		OwnRunsOnly: cfg.Cluster.MaxSegments <= 0,
		MaxVUs:      cfg.Load.MaxConcurrency,
		Version:     ver.Version(),
		Runner:      runner,
		Logf:        c.log.Infof,
		OnLeave: func(run string, err error) {
			if err != nil {
				c.log.WithField("run", run).WithError(err).Warn("left a cluster run early")
			}
		},
	}
	poolTimings(cfg.Cluster, &o)
	pool, err := cluster.NewPool(c.rdb, o)
	if err != nil {
		return err
	}
	cl := cfg.Cluster
	pr := cl.Promises()
	c.log.Infof("cluster timings: heartbeat %s, lease %s, fence_after %s, sweep_interval %s, coordinator_lease %s, coordinator_lost_after %s: "+
		"a dead worker's share moves on within %s, a worker cut off from Redis stops within %s (%s before its lease expires), "+
		"workers stop within %s of their coordinator's death",
		cl.Heartbeat, cl.Lease, cl.FenceAfter, cl.SweepInterval, cl.CoordinatorLease, cl.CoordinatorLostAfter,
		pr.Takeover, pr.Fence, pr.Margin, pr.CoordinatorLost)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		// It retries joining until Redis answers; an error means the
		// daemon stopped first.
		if err := pool.Run(ctx); err != nil {
			c.log.WithError(err).Warn("the daemon stopped before this runner could join the cluster pool")
		}
	}()
	return nil
}

// Close waits for the pool and closes the Redis client.
func (c *clusterLink) Close() {
	c.wg.Wait()
	_ = c.rdb.Close()
}

type clusterStatusFlags struct {
	json bool
}

func newClusterCmd(g *globalFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the pool of forgeload runners that share a Redis",
	}
	f := &clusterStatusFlags{}
	st := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's runners and its current runs",
		Long: `status reads cluster.redis_url from the config (-c) or
FORGELOAD_CLUSTER_REDIS_URL and shows the pool: every runner with a live
presence lease, its capacity and the runs it is busy with; then every run
whose keys are still in Redis (finished runs stay for an hour) with its
state, coordinator, start time and the owner of each segment. It only reads.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runClusterStatus(c.Context(), g, f, c.OutOrStdout())
		},
	}
	st.Flags().BoolVar(&f.json, "json", false, "print JSON instead of tables")
	c.AddCommand(st)
	return c
}

func runClusterStatus(ctx context.Context, g *globalFlags, f *clusterStatusFlags, w io.Writer) error {
	cfg, err := config.Load(g.config, os.Getenv)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	if cfg.Cluster.RedisURL == "" {
		return withCode(ExitBadInput, errors.New("cluster status: cluster.redis_url is not set: pass the daemon config with -c, or set FORGELOAD_CLUSTER_REDIS_URL"))
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	redis.SetLogger(redisLog{logrus.NewEntry(quiet)})
	rdb, err := newRedis(ctx, cfg.Cluster.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	st, err := cluster.Status(ctx, rdb)
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeClusterStatus(w, st)
}

func writeClusterStatus(w io.Writer, st *cluster.PoolStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(tw, "RUNNERS (%d)\n", len(st.Runners))
	fmt.Fprintln(tw, "ID\tHOST\tLABELS\tCAPACITY\tBUSY RUNS\tVERSION")
	for _, r := range st.Runners {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, dash(r.Host), dash(strings.Join(r.Labels, ",")), r.Capacity,
			dash(strings.Join(r.BusyRuns, ",")), dash(r.Version))
	}
	fmt.Fprintf(tw, "\nRUNS (%d)\n", len(st.Runs))
	fmt.Fprintln(tw, "RUN\tSTATE\tCOORDINATOR\tSTART (UTC)\tWORKERS\tSEGMENTS")
	for _, r := range st.Runs {
		start := "-"
		if !r.StartAt.IsZero() {
			start = r.StartAt.UTC().Format("2006-01-02 15:04:05.000")
		}
		segs := make([]string, 0, len(r.Segments))
		for _, s := range r.Segments {
			owner := s.Owner
			if owner == "" {
				owner = "unowned"
			}
			segs = append(segs, strconv.Itoa(s.Index)+" "+s.Range+"→"+owner+"@"+strconv.FormatInt(s.Gen, 10))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, dash(r.State), dash(r.Coordinator), start,
			dash(strings.Join(r.Workers, ",")), dash(strings.Join(segs, "; ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range st.Runs {
		if r.AbortReason != "" {
			if _, err := fmt.Fprintf(w, "run %s aborted: %s\n", r.ID, r.AbortReason); err != nil {
				return err
			}
		}
	}
	return nil
}
