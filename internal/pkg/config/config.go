package config

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// Config is the daemon's configuration. Build it with [Load] or [Parse]; the
// zero value is not valid (use [Default] for the defaults). A Config is plain
// data: it is safe for concurrent reads but not for concurrent writes.
type Config struct {
	Log       Log        `yaml:"log"`
	Runner    Runner     `yaml:"runner"`
	Load      LoadLimits `yaml:"load"`
	Metrics   Metrics    `yaml:"metrics"`
	Cluster   Cluster    `yaml:"cluster"`
	Container Container  `yaml:"container"`
	Cache     Cache      `yaml:"cache"`
}

// Log configures the daemon's own log (not the jobs' logs, which go to the
// forge).
type Log struct {
	// Level is the least severe level logged: debug, info, warn or error.
	// Default info.
	Level string `yaml:"level"`
	// Format is text (human-readable, logrus' text formatter) or json (one
	// object per line). Default text.
	Format string `yaml:"format"`
}

// Runner configures how the daemon talks to the forge and runs jobs.
type Runner struct {
	// File is the path of the registration file written by `forgeload
	// register`. Default ".runner".
	File string `yaml:"file"`
	// Capacity is how many jobs run at once. Default 1; must be from 1 to
	// [MaxCapacity].
	Capacity int `yaml:"capacity"`
	// Labels are the labels this runner offers, each name[:schema[:arg]]
	// (see [ParseLabel]). Only the names go to the forge. Default
	// ["forgeload"]; must not be empty.
	Labels []string `yaml:"labels"`
	// Envs are extra environment variables for every job. Default none.
	Envs map[string]string `yaml:"envs"`
	// EnvFile is a file of KEY=VALUE lines added to every job's environment.
	// Default ".env"; a missing file is fine, and "" disables it.
	EnvFile string `yaml:"env_file"`
	// Timeout bounds each job. Default 3h; must be above 0.
	Timeout time.Duration `yaml:"timeout"`
	// ShutdownTimeout is how long running jobs may keep running after the
	// first SIGTERM; then they are cancelled and reported as cancelled.
	// Default 30m: long enough for a typical load test to finish during a
	// deploy, short enough that an upgrade is not held up for the full job
	// timeout. 0 cancels running jobs at once; at most [MaxShutdownTimeout].
	// Set systemd's TimeoutStopSec above it.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Insecure skips TLS certificate verification of the forge. Default
	// false; use only for testing.
	Insecure bool `yaml:"insecure"`
	// FetchTimeout bounds each FetchTask request. Default 5s; must be above
	// 0 and at most 60s ([MaxRequestTimeout]).
	FetchTimeout time.Duration `yaml:"fetch_timeout"`
	// FetchInterval is the wait between polls while the forge has no task.
	// Default 2s; must be above 0.
	FetchInterval time.Duration `yaml:"fetch_interval"`
	// FetchIntervalMax caps the exponential backoff between polls after
	// empty polls or errors. Default 5s (as in Gitea's runner); must be at
	// least FetchInterval.
	FetchIntervalMax time.Duration `yaml:"fetch_interval_max"`
	// ReportInterval is how often log rows and step state are sent to the
	// forge while a job runs; it also bounds how fast a cancel in the forge
	// UI is seen. Default 1s; must be from [MinReportInterval] to
	// [MaxReportInterval].
	ReportInterval time.Duration `yaml:"report_interval"`
	// FinalReportTimeout is how long a job's end waits for the forge to
	// take its last log rows and its result. Past it (the forge is down)
	// they are kept on disk next to runner.file and delivered when the
	// forge answers again, and the runner takes its next job. Default 30s;
	// must be from [MinFinalReportTimeout] to [MaxFinalReportTimeout].
	FinalReportTimeout time.Duration `yaml:"final_report_timeout"`
	// ActionCacheDir is where the actions jobs use from other
	// repositories are cached, by commit. Default "": actions/ in the
	// runner's work directory.
	ActionCacheDir string `yaml:"action_cache_dir"`
	// ActionCacheMaxMB bounds the action cache, in MiB; the actions used
	// least recently are removed past it. Default 1024; must be from 1 to
	// [MaxActionCacheMB].
	ActionCacheMaxMB int `yaml:"action_cache_max_mb"`
	// Node is the Node.js (a path, or a name on PATH) that runs the
	// JavaScript actions jobs use (runs.using: node12 to node24) on the
	// host. Default "": such actions are refused.
	Node string `yaml:"node"`
	// CommentToken is a forge token (e.g. of a bot user with write access
	// to the repositories' issues) that load steps post their comparison
	// on a pull request with when the job's own token may not comment (a
	// fork's pull request gets a read-only one). It is used for that
	// comment only, and only against this runner's forge. Default "":
	// none. A secret: it is masked in job logs and never logged; prefer
	// CommentTokenFile.
	CommentToken Secret `yaml:"comment_token"`
	// CommentTokenFile is a file holding CommentToken, readable by its
	// owner only (mode 0600 or stricter), read when the daemon starts.
	// Default "": none. At most one of the two may be set.
	CommentTokenFile string `yaml:"comment_token_file"`
}

// Secret is a config value that must not be shown: its String (and so
// %v and %+v) is "[redacted]" when it is set.
type Secret string

// String hides the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LoadLimits is the load section: what load-test jobs may do on this runner.
// (It cannot be named Load: that is the function that builds a Config.)
type LoadLimits struct {
	// AllowTargets are CIDRs (10.0.0.0/8), IPs and host globs
	// (*.staging.example.com). When non-empty, load may go only to targets
	// that match one of them. Default empty: any target not denied.
	AllowTargets []string `yaml:"allow_targets"`
	// DenyTargets are CIDRs, IPs and host globs that load may never go to,
	// in addition to the built-in denies (link-local, cloud metadata and the
	// forge itself). Default empty.
	DenyTargets []string `yaml:"deny_targets"`
	// MaxRate is the highest request rate (per second, summed over the
	// job) a job may ask for. Default 5000; 0 means unlimited.
	MaxRate float64 `yaml:"max_rate"`
	// MaxConcurrency is the most concurrent requests or virtual users a job
	// may ask for. Default 1000; 0 means unlimited.
	MaxConcurrency int `yaml:"max_concurrency"`
	// MaxDuration is the longest load phase a job may ask for. Default 1h;
	// 0 means unlimited (the job still ends at runner.timeout).
	MaxDuration time.Duration `yaml:"max_duration"`
	// MaxGracefulShutdown is the longest graceful_shutdown (how long
	// requests in flight may run on after the plan's end) a job may ask
	// for. Default 30s; 0 means unlimited. Whatever it says, a cancel, a
	// second signal or the end of max_duration stops a load step within
	// about 2 s.
	MaxGracefulShutdown time.Duration `yaml:"max_graceful_shutdown"`
	// MaxEndpoints is the most endpoints (endpoints and HAR entries
	// together) a load step may have: the engine keeps latency histograms
	// for each. Default 1000; 0 means unlimited.
	MaxEndpoints int `yaml:"max_endpoints"`
	// ProgressInterval is how often a load step logs a progress line.
	// Default 5s; must be above 0.
	ProgressInterval time.Duration `yaml:"progress_interval"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Enabled serves /metrics, /healthz and /readyz on Addr. Default false.
	Enabled bool `yaml:"enabled"`
	// Addr is the host:port to listen on. Default "127.0.0.1:9101"; an
	// empty host (":9101") listens on every interface.
	Addr string `yaml:"addr"`
	// ReadinessGrace is how long forge errors may last before /readyz
	// reports not ready. Default 30s; 0 reports not ready on the first
	// error.
	ReadinessGrace time.Duration `yaml:"readiness_grace"`
	// JobsPage serves /jobs on Addr: a read-only page of the load steps
	// this daemon is running, each with its live dashboard. Default false;
	// needs Enabled.
	JobsPage bool `yaml:"jobs_page"`
	// LoadRetention is how long the load series of a workflow job's step
	// stay after the step ended, so that a scrape sees its last counts;
	// then they are deleted. Default 10m; must be above 0.
	LoadRetention time.Duration `yaml:"load_retention"`
}

// Cluster configures Redis coordination for load tests split across hosts.
type Cluster struct {
	// RedisURL is redis://[user:pass@]host:port[/db] or rediss:// for TLS.
	// Default empty: clustering is off and every test runs on one host.
	RedisURL string `yaml:"redis_url"`
	// Name is this daemon's worker name in the cluster. Default empty: the
	// host name is used.
	Name string `yaml:"name"`
	// MaxSegments is the most segments (shares of other runners' tests)
	// this daemon runs at once. Default 1; 0 means it never runs shares of
	// other runners' tests, though it still coordinates its own.
	MaxSegments int `yaml:"max_segments"`

	// The timings below make the cluster's promises; see [Cluster.Promises]
	// and docs/cluster.md. Each daemon uses its own: Heartbeat, Lease,
	// FenceAfter and CoordinatorLostAfter when it is a worker, SweepInterval
	// and CoordinatorLease when it coordinates.

	// Heartbeat is how often a daemon renews its presence in the pool and,
	// in a run, its lease. Default 1s; at most a third of FenceAfter, so a
	// single late renewal never stops a healthy worker.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Lease is how long Redis keeps a worker's lease (and its presence)
	// after the last renewal it ran; once it has expired, the coordinator
	// hands the worker's share to another. Default 5s; must be above
	// FenceAfter.
	Lease time.Duration `yaml:"lease"`
	// FenceAfter is how long after the last renewal it sent that a worker
	// which could not renew stops its own load. Default 3.5s; must be below
	// Lease: the gap (1.5 s by default) is what keeps two hosts from ever
	// driving one share.
	FenceAfter time.Duration `yaml:"fence_after"`
	// SweepInterval is how often a coordinator looks for workers whose
	// lease has expired. Default 1s; must be above 0.
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// CoordinatorLease is the coordinator's own lease, renewed every
	// seventh of it. A coordinator that cannot reach Redis for this long
	// fails its run. Default 7s; at least [MinCoordinatorLease].
	CoordinatorLease time.Duration `yaml:"coordinator_lease"`
	// CoordinatorLostAfter is how long a worker goes on after it finds the
	// coordinator's lease gone before it stops and leaves the run. Default
	// 2s; must be above 0.
	CoordinatorLostAfter time.Duration `yaml:"coordinator_lost_after"`
}

// ClusterPromises are the times the cluster settings promise, worst case
// on a machine that is not overloaded. See [Cluster.Promises].
type ClusterPromises struct {
	// Takeover bounds how long a dead worker's share stays idle:
	// Lease + 2 × SweepInterval (7 s with the defaults). The coordinator's
	// next sweep first sees its last renewal, and the first sweep Lease
	// after that (on the coordinator's own clock) hands the share on.
	Takeover time.Duration
	// Fence bounds how long a worker cut off from Redis goes on sending:
	// FenceAfter (3.5 s), counted from its last renewal, which it sent
	// before the cut.
	Fence time.Duration
	// Margin is how long before Redis can expire the lease a cut-off worker
	// has stopped: Lease − FenceAfter (1.5 s). It covers a request already
	// past its check and clocks that run at slightly different rates.
	Margin time.Duration
	// CoordinatorLost bounds how long workers go on once their coordinator
	// has died: CoordinatorLease + CoordinatorLostAfter + Heartbeat (10 s).
	CoordinatorLost time.Duration
}

// Promises returns what c's timings promise (see [ClusterPromises]).
func (c Cluster) Promises() ClusterPromises {
	return ClusterPromises{
		Takeover:        c.Lease + 2*c.SweepInterval,
		Fence:           c.FenceAfter,
		Margin:          c.Lease - c.FenceAfter,
		CoordinatorLost: c.CoordinatorLease + c.CoordinatorLostAfter + c.Heartbeat,
	}
}

// Container configures the Docker Engine that runs jobs' services: and
// job containers (and docker:// labels).
type Container struct {
	// DockerHost is the Engine's address, such as
	// unix:///var/run/docker.sock. Default "": the DOCKER_HOST variable,
	// else the local socket.
	DockerHost string `yaml:"docker_host"`
	// PullPolicy says when images are pulled: never (use only images on
	// the Engine), missing (pull what is not there) or always. Default
	// missing.
	PullPolicy string `yaml:"pull_policy"`
	// ServiceTimeout bounds the wait for a job's services to become
	// healthy, all together. Default 5m; must be above 0.
	ServiceTimeout time.Duration `yaml:"service_timeout"`
	// ValidVolumes are globs (path.Match) of the host paths (such as
	// /srv/fixtures/*) and the named volumes (such as cache-*) a job's
	// services and container may mount. Default empty: only paths inside
	// the workspace and anonymous volumes.
	ValidVolumes []string `yaml:"valid_volumes"`
	// AllowedCapabilities are the Linux capabilities (such as NET_ADMIN)
	// a job's options: may add with --cap-add, beyond Docker's default
	// set, which may always be added back. ALL allows every one. Default
	// empty: none.
	AllowedCapabilities []string `yaml:"allowed_capabilities"`
	// AllowedOptions are the docker create flags of
	// container.GatedOptions (--sysctl, --ulimit, --group-add) a job's
	// options: may use. Default empty: none.
	AllowedOptions []string `yaml:"allowed_options"`
	// AllowBuildNetwork gives the RUN instructions of a Docker action's
	// Dockerfile (runs.image: Dockerfile), built on the Engine, the
	// Engine's default network. Default false: they run with no network.
	AllowBuildNetwork bool `yaml:"allow_build_network"`
	// BuildTimeout bounds the build of one Docker action's image (within
	// the step's and the job's timeouts). Default 10m; must be above 0.
	BuildTimeout time.Duration `yaml:"build_timeout"`
}

// Cache configures the cache server that `actions/cache` in jobs talks to
// (Gitea's runner embeds one too). Each job is given its own URL of it in
// ACTIONS_CACHE_URL, which serves its repository's entries only.
type Cache struct {
	// Enabled starts the cache server with the daemon and with forgeload
	// exec. Default false: actions/cache finds no cache and warns.
	Enabled bool `yaml:"enabled"`
	// Dir holds the cache's entries. Default "": forgeload/actions-cache
	// in the user's cache directory (e.g. ~/.cache).
	Dir string `yaml:"dir"`
	// MaxMB bounds the cache, in MiB, over every repository; the entries
	// used least recently are removed past it. Default 2048; must be from
	// 1 to [MaxActionCacheMB].
	MaxMB int `yaml:"max_mb"`
	// MaxRepoMB bounds one repository's entries, in MiB: past it, its
	// own entries used least recently are removed first, so that one
	// repository cannot push the others' out of the cache. Default 0:
	// half of MaxMB; must be from 0 to MaxMB.
	MaxRepoMB int `yaml:"max_repo_mb"`
	// Host is the address the server listens on and jobs are given.
	// Default "": the first IPv4 address of a network interface of this
	// host that is not loopback or a Docker bridge, which job containers
	// reach too (127.0.0.1 is reached by host jobs only).
	Host string `yaml:"host"`
	// Port is the port it listens on. Default 0: a free port.
	Port int `yaml:"port"`
}

// Defaults, exported so that documentation and callers can name them.
const (
	DefaultLogLevel            = "info"
	DefaultLogFormat           = "text"
	DefaultRunnerFile          = ".runner"
	DefaultCapacity            = 1
	DefaultLabel               = "forgeload"
	DefaultEnvFile             = ".env"
	DefaultTimeout             = 3 * time.Hour
	DefaultShutdownTimeout     = 30 * time.Minute
	DefaultFetchTimeout        = 5 * time.Second
	DefaultFetchInterval       = 2 * time.Second
	DefaultFetchIntervalMax    = 5 * time.Second
	DefaultActionCacheMaxMB    = 1024
	DefaultCacheMaxMB          = 2048
	MaxActionCacheMB           = 1 << 20 // 1 TiB
	DefaultReportInterval      = time.Second
	DefaultFinalReportTimeout  = 30 * time.Second
	DefaultMaxRate             = 5000
	DefaultMaxConcurrency      = 1000
	DefaultMaxDuration         = time.Hour
	DefaultMaxGracefulShutdown = 30 * time.Second
	DefaultMaxEndpoints        = 1000
	DefaultProgressInterval    = 5 * time.Second
	DefaultMetricsAddr         = "127.0.0.1:9101"
	DefaultReadinessGrace      = 30 * time.Second
	DefaultLoadRetention       = 10 * time.Minute
	DefaultClusterMaxSegment   = 1
	DefaultPullPolicy          = "missing"
	DefaultServiceTimeout      = 5 * time.Minute
	DefaultBuildTimeout        = 10 * time.Minute

	// MaxRequestTimeout bounds every forge request, and so runner.fetch_timeout.
	MaxRequestTimeout = 60 * time.Second
	// MaxCapacity bounds runner.capacity: each job holds a workspace, a
	// reporter and its load, so a larger number cannot be honoured.
	MaxCapacity = 1000
	// MinReportInterval and MaxReportInterval bound runner.report_interval:
	// shorter floods the forge with calls, longer than Gitea's 60 s
	// task-report window makes it treat a running task as stale.
	MinReportInterval = 100 * time.Millisecond
	MaxReportInterval = time.Minute
	// MinFinalReportTimeout and MaxFinalReportTimeout bound
	// runner.final_report_timeout: shorter gives up on a forge that is
	// merely slow, longer holds a job slot through an outage.
	MinFinalReportTimeout = time.Second
	MaxFinalReportTimeout = 10 * time.Minute
	// MaxShutdownTimeout bounds runner.shutdown_timeout.
	MaxShutdownTimeout = 24 * time.Hour
)

// The cluster's timings (see [Cluster]); the cluster package's defaults are
// the same, and a test in internal/app/cmd keeps them so.
const (
	DefaultClusterHeartbeat            = time.Second
	DefaultClusterLease                = 5 * time.Second
	DefaultClusterFenceAfter           = 3500 * time.Millisecond
	DefaultClusterSweepInterval        = time.Second
	DefaultClusterCoordinatorLease     = 7 * time.Second
	DefaultClusterCoordinatorLostAfter = 2 * time.Second
	// MinCoordinatorLease bounds cluster.coordinator_lease: it is renewed
	// every seventh of it, each renewal given that long, and a busy machine
	// or network misses renewals much shorter than 150 ms.
	MinCoordinatorLease = time.Second
)

// Default returns a new Config holding every default. Each call returns a
// fresh copy that the caller may modify.
func Default() *Config {
	return &Config{
		Log: Log{Level: DefaultLogLevel, Format: DefaultLogFormat},
		Runner: Runner{
			File:               DefaultRunnerFile,
			Capacity:           DefaultCapacity,
			Labels:             []string{DefaultLabel},
			Envs:               map[string]string{},
			EnvFile:            DefaultEnvFile,
			Timeout:            DefaultTimeout,
			ShutdownTimeout:    DefaultShutdownTimeout,
			FetchTimeout:       DefaultFetchTimeout,
			FetchInterval:      DefaultFetchInterval,
			FetchIntervalMax:   DefaultFetchIntervalMax,
			ReportInterval:     DefaultReportInterval,
			FinalReportTimeout: DefaultFinalReportTimeout,
			ActionCacheMaxMB:   DefaultActionCacheMaxMB,
		},
		Load: LoadLimits{
			AllowTargets:        []string{},
			DenyTargets:         []string{},
			MaxRate:             DefaultMaxRate,
			MaxConcurrency:      DefaultMaxConcurrency,
			MaxDuration:         DefaultMaxDuration,
			MaxGracefulShutdown: DefaultMaxGracefulShutdown,
			MaxEndpoints:        DefaultMaxEndpoints,
			ProgressInterval:    DefaultProgressInterval,
		},
		Metrics: Metrics{
			Addr:           DefaultMetricsAddr,
			ReadinessGrace: DefaultReadinessGrace,
			LoadRetention:  DefaultLoadRetention,
		},
		Cluster: Cluster{
			MaxSegments:          DefaultClusterMaxSegment,
			Heartbeat:            DefaultClusterHeartbeat,
			Lease:                DefaultClusterLease,
			FenceAfter:           DefaultClusterFenceAfter,
			SweepInterval:        DefaultClusterSweepInterval,
			CoordinatorLease:     DefaultClusterCoordinatorLease,
			CoordinatorLostAfter: DefaultClusterCoordinatorLostAfter,
		},
		Cache:     Cache{MaxMB: DefaultCacheMaxMB},
		Container: Container{PullPolicy: DefaultPullPolicy, ServiceTimeout: DefaultServiceTimeout, BuildTimeout: DefaultBuildTimeout, ValidVolumes: []string{}, AllowedCapabilities: []string{}, AllowedOptions: []string{}},
	}
}

// Load builds the config: defaults, then the YAML file at path (skipped when
// path == ""), then FORGELOAD_<SECTION>_<KEY> env overrides read through
// getenv (os.Getenv in production; nil reads no overrides), then validation.
// Errors name the file and line or the variable, the key, and the fix.
func Load(path string, getenv func(string) string) (*Config, error) {
	var data []byte
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config file %q: %w (check -c/--config, or run `forgeload config generate > %s` to start one)", path, err, path)
		}
		data = b
	}
	return Parse(path, data, getenv)
}

// Parse is [Load] for a file already read: data is the YAML text (empty means
// no file) and name is used in errors in place of the file name.
func Parse(name string, data []byte, getenv func(string) string) (*Config, error) {
	if name == "" {
		name = "config"
	}
	cfg := Default()
	p := &parser{file: name, src: map[string]string{}}
	if err := p.decodeFile(cfg, data); err != nil {
		return nil, err
	}
	if getenv != nil {
		if err := p.applyEnv(cfg, getenv); err != nil {
			return nil, err
		}
	}
	if err := p.validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// String prints the cluster section with any password in RedisURL
// redacted, so that logging a Config with %v or %+v never leaks it.
func (c Cluster) String() string {
	return fmt.Sprintf("{RedisURL:%s Name:%s MaxSegments:%d Heartbeat:%s Lease:%s FenceAfter:%s SweepInterval:%s CoordinatorLease:%s CoordinatorLostAfter:%s}",
		redact.URL(c.RedisURL), c.Name, c.MaxSegments, c.Heartbeat, c.Lease, c.FenceAfter, c.SweepInterval, c.CoordinatorLease, c.CoordinatorLostAfter)
}
