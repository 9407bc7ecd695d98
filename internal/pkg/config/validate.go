package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/container"
)

// at returns where the key at path was last set, falling back to the file
// name (defaults are always valid, so a bad value came from a source).
func (p *parser) at(path string) string {
	if s, ok := p.src[path]; ok {
		return s
	}
	return p.file
}

func (p *parser) bad(path, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s: "+format, append([]any{p.at(path), path}, args...)...))
}

func (p *parser) positive(path string, d time.Duration) {
	if d <= 0 {
		p.bad(path, "%s must be above 0 (want e.g. %s)", d, exampleDuration(path))
	}
}

func (p *parser) nonNegative(path string, d time.Duration) {
	if d < 0 {
		p.bad(path, "%s is negative (want 0 or more, e.g. %s)", d, exampleDuration(path))
	}
}

func exampleDuration(path string) string {
	if d, ok := defaultDurations()[path]; ok && d > 0 {
		return d.String()
	}
	if d, ok := clusterDurations()[path]; ok {
		return d.String()
	}
	return "30s"
}

func defaultDurations() map[string]time.Duration {
	return map[string]time.Duration{
		"runner.timeout":              DefaultTimeout,
		"runner.shutdown_timeout":     DefaultShutdownTimeout,
		"runner.fetch_timeout":        DefaultFetchTimeout,
		"runner.fetch_interval":       DefaultFetchInterval,
		"runner.fetch_interval_max":   DefaultFetchIntervalMax,
		"runner.report_interval":      DefaultReportInterval,
		"runner.final_report_timeout": DefaultFinalReportTimeout,
		"load.max_duration":           DefaultMaxDuration,
		"load.max_graceful_shutdown":  DefaultMaxGracefulShutdown,
		"load.progress_interval":      DefaultProgressInterval,
		"metrics.readiness_grace":     DefaultReadinessGrace,
		"metrics.load_retention":      DefaultLoadRetention,
		"container.service_timeout":   DefaultServiceTimeout,
		"container.build_timeout":     DefaultBuildTimeout,
	}
}

// clusterDurations are the defaults of the cluster's timings.
func clusterDurations() map[string]time.Duration {
	return map[string]time.Duration{
		"cluster.heartbeat":              DefaultClusterHeartbeat,
		"cluster.lease":                  DefaultClusterLease,
		"cluster.fence_after":            DefaultClusterFenceAfter,
		"cluster.sweep_interval":         DefaultClusterSweepInterval,
		"cluster.coordinator_lease":      DefaultClusterCoordinatorLease,
		"cluster.coordinator_lost_after": DefaultClusterCoordinatorLostAfter,
	}
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// validate checks every section of c and returns all the problems found, in
// section order.
func (p *parser) validate(c *Config) error {
	p.errs = nil
	p.logSection(&c.Log)
	p.runnerSection(&c.Runner)
	p.runnerTimings(&c.Runner)
	p.loadSection(&c.Load)
	p.metricsSection(&c.Metrics)
	p.clusterSection(&c.Cluster)
	p.containerSection(&c.Container)
	p.cacheSection(&c.Cache)
	return errors.Join(p.errs...)
}

// logSection checks the log: section.
func (p *parser) logSection(lg *Log) {
	if !oneOf(lg.Level, "debug", "info", "warn", "error") {
		p.bad("log.level", "%q is not a level (want debug, info, warn or error)", lg.Level)
	}
	if !oneOf(lg.Format, "text", "json") {
		p.bad("log.format", "%q is not a format (want text or json)", lg.Format)
	}
}

// runnerSection checks the runner: section's registration file, capacity, labels and envs.
func (p *parser) runnerSection(r *Runner) {
	if strings.TrimSpace(r.File) == "" {
		p.bad("runner.file", "is empty (want the registration file path, e.g. %s)", DefaultRunnerFile)
	}
	if r.Capacity < 1 {
		p.bad("runner.capacity", "%d is below 1 (want how many jobs run at once, e.g. 1 or 4)", r.Capacity)
	}
	if r.Capacity > MaxCapacity {
		p.bad("runner.capacity", "%d is above the limit of %d jobs at once (want e.g. 1 or 4; run more daemons for more)", r.Capacity, MaxCapacity)
	}
	if len(r.Labels) == 0 {
		p.bad("runner.labels", "is empty (want at least one label, e.g. [%s])", DefaultLabel)
	}
	p.commentToken(r)
	if r.ActionCacheMaxMB < 1 || r.ActionCacheMaxMB > MaxActionCacheMB {
		p.bad("runner.action_cache_max_mb", "%d is not from 1 to %d (want the action cache's bound in MiB, e.g. %d)", r.ActionCacheMaxMB, MaxActionCacheMB, DefaultActionCacheMaxMB)
	}
	seen := map[string]int{}
	for i, s := range r.Labels {
		ip := fmt.Sprintf("runner.labels[%d]", i)
		l, err := ParseLabel(s)
		if err != nil {
			p.bad(ip, "%v", err)
			continue
		}
		if j, dup := seen[l.Name]; dup {
			p.bad(ip, "label name %q is also runner.labels[%d]; keep one", l.Name, j)
			continue
		}
		seen[l.Name] = i
	}
	names := make([]string, 0, len(r.Envs))
	for k := range r.Envs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexFunc(k, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) >= 0 {
			p.bad("runner.envs."+k, "%q is not a valid variable name (want letters, digits and _, e.g. HTTP_PROXY)", k)
		}
	}
}

// runnerTimings checks the runner: section's timeouts and intervals.
func (p *parser) runnerTimings(r *Runner) {
	p.positive("runner.timeout", r.Timeout)
	p.nonNegative("runner.shutdown_timeout", r.ShutdownTimeout)
	if r.ShutdownTimeout > MaxShutdownTimeout {
		p.bad("runner.shutdown_timeout", "%s is above the %s limit (want e.g. %s)", r.ShutdownTimeout, MaxShutdownTimeout, DefaultShutdownTimeout)
	}
	p.positive("runner.fetch_timeout", r.FetchTimeout)
	if r.FetchTimeout > MaxRequestTimeout {
		p.bad("runner.fetch_timeout", "%s is above the %s limit on every forge request (want at most %s)", r.FetchTimeout, MaxRequestTimeout, MaxRequestTimeout)
	}
	p.positive("runner.fetch_interval", r.FetchInterval)
	if r.FetchInterval > 0 && r.FetchIntervalMax < r.FetchInterval {
		p.bad("runner.fetch_interval_max", "%s is below runner.fetch_interval (%s); want at least %s", r.FetchIntervalMax, r.FetchInterval, r.FetchInterval)
	}
	p.positive("runner.report_interval", r.ReportInterval)
	if r.ReportInterval > 0 && (r.ReportInterval < MinReportInterval || r.ReportInterval > MaxReportInterval) {
		p.bad("runner.report_interval", "%s is outside %s to %s (shorter floods the forge with calls, longer makes it treat running jobs as stale; want e.g. %s)", r.ReportInterval, MinReportInterval, MaxReportInterval, DefaultReportInterval)
	}
	p.positive("runner.final_report_timeout", r.FinalReportTimeout)
	if r.FinalReportTimeout > 0 && (r.FinalReportTimeout < MinFinalReportTimeout || r.FinalReportTimeout > MaxFinalReportTimeout) {
		p.bad("runner.final_report_timeout", "%s is outside %s to %s (shorter gives up on a forge that is only slow, longer holds the job's slot through an outage; want e.g. %s)", r.FinalReportTimeout, MinFinalReportTimeout, MaxFinalReportTimeout, DefaultFinalReportTimeout)
	}
}

// loadSection checks the load: section's target rules and limits.
func (p *parser) loadSection(l *LoadLimits) {
	for _, list := range []struct {
		key   string
		items []string
	}{{"load.allow_targets", l.AllowTargets}, {"load.deny_targets", l.DenyTargets}} {
		for i, s := range list.items {
			if _, err := ParseTargetRule(s); err != nil {
				p.bad(fmt.Sprintf("%s[%d]", list.key, i), "%v", err)
			}
		}
	}
	if l.MaxRate < 0 || math.IsNaN(l.MaxRate) || math.IsInf(l.MaxRate, 0) {
		p.bad("load.max_rate", "%v is not allowed (want 0 for unlimited, or a rate in requests per second, e.g. %d)", l.MaxRate, DefaultMaxRate)
	}
	if l.MaxConcurrency < 0 {
		p.bad("load.max_concurrency", "%d is negative (want 0 for unlimited, or e.g. %d)", l.MaxConcurrency, DefaultMaxConcurrency)
	}
	p.nonNegative("load.max_duration", l.MaxDuration)
	p.nonNegative("load.max_graceful_shutdown", l.MaxGracefulShutdown)
	if l.MaxEndpoints < 0 {
		p.bad("load.max_endpoints", "%d is negative (want 0 for unlimited, or e.g. %d)", l.MaxEndpoints, DefaultMaxEndpoints)
	}
	p.positive("load.progress_interval", l.ProgressInterval)
}

// metricsSection checks the metrics: section.
func (p *parser) metricsSection(m *Metrics) {
	if err := checkHostPort(m.Addr); err != nil {
		p.bad("metrics.addr", "%q %v (want host:port, e.g. %s, or :9101 for every interface)", m.Addr, err, DefaultMetricsAddr)
	}
	p.nonNegative("metrics.readiness_grace", m.ReadinessGrace)
	p.positive("metrics.load_retention", m.LoadRetention)
	if m.JobsPage && !m.Enabled {
		p.bad("metrics.jobs_page", "true needs the metrics server, which is off (set metrics.enabled: true, or metrics.jobs_page: false)")
	}
}

// clusterSection checks the cluster: section; its timings are clusterTimings.
func (p *parser) clusterSection(cl *Cluster) {
	if cl.RedisURL != "" {
		if err := checkRedisURL(cl.RedisURL); err != nil {
			p.bad("cluster.redis_url", "%v (want redis://host:6379/0 or rediss://host:6380 for TLS)", err)
		}
	}
	if cl.Name != "" && !validName(cl.Name) {
		p.bad("cluster.name", "%q is not a valid name (want 1 to 64 letters, digits, '.', '_' or '-')", cl.Name)
	}
	if cl.MaxSegments < 0 {
		p.bad("cluster.max_segments", "%d is negative (want 0 to run no shares of other runners' tests, or e.g. %d)", cl.MaxSegments, DefaultClusterMaxSegment)
	}
	p.clusterTimings(cl)
}

// cacheSection checks the cache: section.
func (p *parser) cacheSection(c *Cache) {
	if c.MaxMB < 1 || c.MaxMB > MaxActionCacheMB {
		p.bad("cache.max_mb", "%d is not from 1 to %d (want the cache's bound in MiB, e.g. %d)", c.MaxMB, MaxActionCacheMB, DefaultCacheMaxMB)
	}
	if c.MaxRepoMB < 0 || c.MaxRepoMB > c.MaxMB {
		p.bad("cache.max_repo_mb", "%d is not from 0 to cache.max_mb (%d) (want one repository's bound in MiB, or 0 for half of cache.max_mb)", c.MaxRepoMB, c.MaxMB)
	}
	if c.Port < 0 || c.Port > 65535 {
		p.bad("cache.port", "%d is not a port (want 0 for a free one, or 1 to 65535)", c.Port)
	}
	if c.Host != "" && net.ParseIP(c.Host) == nil {
		p.bad("cache.host", "%q is not an IP address of this host (want e.g. 192.168.1.10, or empty to pick one job containers reach)", c.Host)
	}
}

// containerSection checks the container: section.
func (p *parser) containerSection(ct *Container) {
	if !oneOf(ct.PullPolicy, "never", "missing", "always") {
		p.bad("container.pull_policy", "%q is not a pull policy (want never, missing or always)", ct.PullPolicy)
	}
	p.positive("container.service_timeout", ct.ServiceTimeout)
	p.positive("container.build_timeout", ct.BuildTimeout)
	for i, g := range ct.ValidVolumes {
		if _, err := path.Match(g, "/"); err != nil || g == "" || (!strings.HasPrefix(g, "/") && strings.Contains(g, "/")) {
			p.bad(fmt.Sprintf("container.valid_volumes[%d]", i), "%q is neither an absolute path glob (such as /srv/fixtures/*) nor a volume name glob (such as cache-*)", g)
		}
	}
	for i, c := range ct.AllowedCapabilities {
		if _, ok := container.CanonicalCapability(c); !ok {
			p.bad(fmt.Sprintf("container.allowed_capabilities[%d]", i), "%q is not a Linux capability (want a name such as NET_ADMIN, or ALL)", c)
		}
	}
	for i, o := range ct.AllowedOptions {
		if !oneOf(o, container.GatedOptions()...) {
			p.bad(fmt.Sprintf("container.allowed_options[%d]", i), "%q is not a flag this key can allow (want one of %s; capabilities go in container.allowed_capabilities)", o, strings.Join(container.GatedOptions(), ", "))
		}
	}
}

// clusterTimings checks the cluster's timings and how they relate: the
// relations are what keep a share from being driven by two hosts, and a
// healthy worker from stopping its load.
func (p *parser) clusterTimings(cl *Cluster) {
	p.positive("cluster.heartbeat", cl.Heartbeat)
	p.positive("cluster.lease", cl.Lease)
	p.positive("cluster.fence_after", cl.FenceAfter)
	p.positive("cluster.sweep_interval", cl.SweepInterval)
	p.positive("cluster.coordinator_lease", cl.CoordinatorLease)
	p.positive("cluster.coordinator_lost_after", cl.CoordinatorLostAfter)
	if cl.Lease > 0 && cl.FenceAfter >= cl.Lease {
		p.bad("cluster.fence_after", "%s is not below cluster.lease (%s): a worker cut off from Redis would still be sending when its lease expires and another worker takes its share; want at most %s (7/10 of the lease, as the defaults), or a longer cluster.lease",
			cl.FenceAfter, cl.Lease, cl.Lease*7/10)
	}
	if cl.FenceAfter > 0 && cl.Heartbeat > cl.FenceAfter/3 {
		p.bad("cluster.heartbeat", "%s is more than a third of cluster.fence_after (%s): one late renewal would make a healthy worker stop its load; want at most %s, or a longer cluster.fence_after",
			cl.Heartbeat, cl.FenceAfter, (cl.FenceAfter / 3).Truncate(time.Millisecond))
	}
	if cl.CoordinatorLease > 0 && cl.CoordinatorLease < MinCoordinatorLease {
		p.bad("cluster.coordinator_lease", "%s is below %s: it is renewed every seventh of it, and renewals that short are missed on a busy machine or network; want e.g. %s", cl.CoordinatorLease, MinCoordinatorLease, DefaultClusterCoordinatorLease)
	}
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("is not host:port")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("has port %q, which is not a number from 0 to 65535", port)
	}
	return nil
}

// checkRedisURL checks a Redis URL without ever echoing it: it may hold a
// password.
func checkRedisURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("scheme %q is not redis or rediss", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	if err := checkHostPort(u.Host); err != nil && strings.Contains(u.Host, ":") && !strings.HasPrefix(u.Host, "[") {
		return fmt.Errorf("the host %v", err)
	}
	return nil
}

func validName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
