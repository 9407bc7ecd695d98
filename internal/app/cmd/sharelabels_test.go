package cmd

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// shareCluster coordinates through a real Redis as runner w1.
type shareCluster struct{ rdb *redis.Client }

func (c shareCluster) Coordinate(ctx context.Context, p cluster.Run, o cluster.CoordOptions, _ func(string) string) (*cluster.Outcome, error) {
	o.Coordinator, o.StartLead = "w1", 300*time.Millisecond
	return cluster.Coordinate(ctx, c.rdb, p, o)
}

// shareHost is one host of TestClusterShareLabels: its cluster pool runs
// its shares through the daemon's SegmentRunner and share observers into
// its own metrics, which it serves over HTTP.
type shareHost struct {
	id      string
	metrics string // its /metrics URL
}

// startShareHosts starts one pool per id on the Redis at addr, each with
// its metrics served on 127.0.0.1, until the test ends, and returns once
// every pool has announced itself.
func startShareHosts(t *testing.T, addr string, ids ...string) []shareHost {
	t.Helper()
	pol, err := policy.New(t.Context(), policy.Options{Deny: []string{"127.0.0.2/32"}}) // loopback targets allowed
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(ids))
	t.Cleanup(func() {
		cancel()
		for range ids {
			<-done
		}
	})
	var hosts []shareHost
	for _, id := range ids {
		reg := prometheus.NewRegistry()
		m := metrics.New(reg, "test", id)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		p, err := cluster.NewPool(shareRedis(t, addr), cluster.PoolOptions{ID: id, Capacity: 1, Logf: t.Logf,
			Runner: &loadrun.SegmentRunner{Policy: pol, Observer: newShareObserver(m)}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- p.Run(ctx) }()
		hosts = append(hosts, shareHost{id: id, metrics: srv.URL + "/metrics"})
	}
	rdb := shareRedis(t, addr)
	waitFor(t, "the pools to announce themselves", 30*time.Second, func() bool {
		st, err := cluster.Status(ctx, rdb)
		return err == nil && len(st.Runners) == len(ids)
	})
	return hosts
}

func shareRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	requestsLine = regexp.MustCompile(`^forgeload_load_requests_total\{(.*)\} (\S+)$`)
	labelPair    = regexp.MustCompile(`([a-z_]+)="((?:[^"\\]|\\.)*)"`)
)

// scrape reads h's /metrics over HTTP and returns its body and its
// requests per (workflow_job, step) pair.
func (h shareHost) scrape(t *testing.T) (string, map[[2]string]float64) {
	t.Helper()
	resp, err := http.Get(h.metrics)
	if err != nil {
		t.Fatalf("scrape %s: %v", h.id, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %v", h.id, resp.Status, err)
	}
	sums := map[[2]string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		m := requestsLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[p[1]] = p[2]
		}
		n, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("scrape %s: %q: %v", h.id, line, err)
		}
		sums[[2]string{labels[metrics.LabelJob], labels[metrics.LabelStep]}] += n
	}
	return string(b), sums
}

// TestClusterShareLabels: a two-host run over a real Redis, each host's
// share run by the daemon's SegmentRunner and share observer and scraped
// over HTTP. Every host, the coordinator's included, labels its share
// with the job and the step the coordinator shipped: the step's secret
// masked before it left the coordinator, its hostile tail (newlines, too
// long) sanitized and cut by the metrics package. A run shipped without
// names, as by a coordinator that predates them, is labelled (cluster) on
// both. Before, every share was (cluster).
func TestClusterShareLabels(t *testing.T) {
	parallelLong(t, 8)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer target.Close()
	rs := redistest.Start(t)
	hosts := startShareHosts(t, rs.Addr(), "w1", "w2")
	cfg, err := spec.Parse("labels.yaml", []byte("target: "+target.URL+"\nrate: 20\nduration: 1s\nvalidity: warn\ndistributed: {workers: 2, join_timeout: 20s}\n"))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-s3cret"
	mask := func(s string) string { return strings.ReplaceAll(s, secret, "***") }
	step := "soak " + secret + " " + strings.Repeat("tail\n", 40)
	c := shareCluster{shareRedis(t, rs.Addr())}
	if _, err := loadrun.Coordinate(t.Context(), cfg, loadrun.CoordSettings{Cluster: c, Logf: t.Logf, Mask: mask, Job: "perf", Step: step}); err != nil {
		t.Fatal(err)
	}
	named := [2]string{"perf", metrics.LabelValue(mask(step))}
	if !strings.HasPrefix(named[1], "soak *** tail tail") || len(named[1]) > metrics.MaxLabelLength {
		t.Fatalf("the step's label would be %q: want the masked name, cut to %d bytes", named[1], metrics.MaxLabelLength)
	}
	// Shipped without names: what a coordinator that predates them ships.
	if _, err := loadrun.Coordinate(t.Context(), cfg, loadrun.CoordSettings{Cluster: c, Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	unnamed := [2]string{metrics.LabelCluster, metrics.LabelCluster}
	for _, h := range hosts {
		body, sums := h.scrape(t)
		if sums[named] == 0 || sums[unnamed] == 0 || len(sums) != 2 {
			t.Errorf("host %s: requests per (workflow_job, step) %v, want some under %q and some under %q, and no other pair", h.id, sums, named, unnamed)
		}
		if strings.Contains(body, secret) {
			t.Errorf("host %s: /metrics shows the step's secret", h.id)
		}
	}
}
