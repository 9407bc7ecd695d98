// Package cluster coordinates one load test across several forgeload hosts
// through a shared Redis, as designed in DISTRIBUTED.md section 5.
//
// # Roles
//
// Every daemon with cluster.redis_url runs a [Pool]: a presence lease
// (lt:runner:<id>, PX 5000 renewed every second by default), an entry in
// lt:runners and an inbox stream of join offers. It accepts offers within
// its capacity and runs the segments it is given through a consumer-side
// [SegmentRunner], which the daemon adapts to the load engine.
//
// The runner that got the job calls [Coordinate]: it creates the run
// (lt:{R}:* keys, each with a run TTL), recruits idle runners, splits the
// plan into rational segments ([segment.Sequence]), waits at a barrier,
// sets start_at on Redis's clock, then sweeps for dead workers, reassigns
// their segments per [LossPolicy], merges the per-second metric stream
// ([snapshot.Snapshot]) and finalizes. [Status] reads the pool and the
// runs for `forgeload cluster status`.
//
// # Guarantees
//
//   - Commands are durable streams plus a level-triggered desired hash per
//     worker; the worker reconciles from desired on join, on every command
//     and every heartbeat, ignoring anything with an older term or a gen at
//     or below its applied_gen. Writing applied_gen to status is the ack.
//   - A worker sends nothing once 3.5 s have passed (on its monotonic
//     clock) since it sent its last successful renewal: the check runs
//     before every request ([Assignment.Lease]), and a timer then cancels
//     the load. Every renewal bumps a count; the coordinator reassigns only
//     once the worker's 5 s lease has passed on its own monotonic clock
//     since it first saw the latest count, and reaps in one script with
//     that count unchanged, so no segment has two live owners, even when a
//     worker was frozen (SIGSTOP) past its lease or Redis's clock stepped.
//     The run's end is counted on monotonic clocks, never on Redis's TIME.
//   - A coordinator that cannot reach Redis for its lease (7 s) fails the
//     run with [ErrRedisUnreachable]; workers leave 2 s after its lease is
//     gone and mark the run ABORTED.
//   - Abandon (graceful shutdown) hands segments back at once.
//   - A segment whose SegmentRunner fails (say the worker's own target
//     policy refuses it) fails the whole run with that reason, rather than
//     letting it finish short of the plan.
//   - The coordinator's own runner is offered a segment first and accepts
//     it whatever its capacity; [PoolOptions.OwnRunsOnly] makes a runner
//     serve only the runs it coordinates.
//   - Metrics leave each worker once per second through a single writer
//     with a non-blocking merge buffer, and are de-duplicated by (w, q).
//   - A Redis restart (INFO run_id changed) or vanished run state fails the
//     run with [ErrStateLost]; nothing continues silently.
//
// # Timings
//
// The 1 s, 3.5 s, 5 s, 7 s and 2 s above are the defaults of [PoolOptions]
// (Heartbeat, FenceAfter, LeaseTTL, CoordLostAfter) and [CoordOptions]
// (Lease, and SweepInterval 1 s); the daemon takes them from its config's
// cluster section. A dead worker's share moves on within LeaseTTL + two
// of the coordinator's SweepIntervals (7 s); a worker cut off from Redis
// stops within FenceAfter (3.5 s), LeaseTTL − FenceAfter (1.5 s) before
// the coordinator may move its share. Tests shorten them where the time is
// not what they check.
//
// # Wiring (for the daemon)
//
//	pool, err := cluster.NewPool(rdb, cluster.PoolOptions{ID: cfg.Cluster.Name, Capacity: …, Runner: adapter})
//	go pool.Run(ctx) // returns after abandoning every run when ctx ends (SIGTERM)
//
//	out, err := cluster.Coordinate(ctx, rdb, cluster.Run{Spec: specJSON, Duration: d, Workers: n, MinWorkers: m,
//		JoinTimeout: jt, OnWorkerLoss: cluster.LossPolicy(p)}, cluster.CoordOptions{Coordinator: cfg.Cluster.Name, Logf: stepLog})
//
// The adapter (the daemon uses loadrun.SegmentRunner) implements
// [SegmentRunner] by building the engine's options from the [Assignment]
// (Owns, ScaleVUs, StartAt, Offset) and forwarding its per-second
// snapshots, typed engine measurements, to [Assignment.Sink]. [Run.Spec]
// is opaque here: the load executor versions it. [Run.Job] and [Run.Step],
// the names a worker labels its share's metrics with, travel beside it in
// the run's meta, which a worker that predates them ignores. Thresholds are checked on
// [Outcome.Total]; per-worker rows are in [Outcome.Workers]. Both sides
// take only a *redis.Client, so multi-process tests can point separate
// forgeload processes at one redistest server.
//
// A load config's feeder rows are claimed in ranges of one run-wide index
// through [RowClaims] ([Assignment.Rows]), which only a segment's current
// owner may use; ranges given back are claimed first.
package cluster
