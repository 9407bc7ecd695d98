package cmd

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/config"
)

// TestClusterTimingDefaults: the config's default cluster timings are the
// cluster package's own defaults, so the promises docs/cluster.md states
// (7 s, 3.5 s) hold for a daemon whose config leaves them out.
func TestClusterTimingDefaults(t *testing.T) {
	parallel(t)
	var p cluster.PoolOptions
	poolTimings(config.Default().Cluster, &p)
	want := cluster.PoolOptions{Heartbeat: cluster.DefaultHeartbeat, LeaseTTL: cluster.DefaultLeaseTTL, FenceAfter: cluster.DefaultFenceAfter, CoordLostAfter: cluster.DefaultCoordLostAfter}
	if p.Heartbeat != want.Heartbeat || p.LeaseTTL != want.LeaseTTL || p.FenceAfter != want.FenceAfter || p.CoordLostAfter != want.CoordLostAfter {
		t.Errorf("pool timings from the default config: heartbeat %s, lease %s, fence %s, coordinator lost after %s; want the cluster package's %s, %s, %s, %s",
			p.Heartbeat, p.LeaseTTL, p.FenceAfter, p.CoordLostAfter, want.Heartbeat, want.LeaseTTL, want.FenceAfter, want.CoordLostAfter)
	}
	var c cluster.CoordOptions
	coordTimings(config.Default().Cluster, &c)
	if c.SweepInterval != cluster.DefaultSweepInterval || c.Lease != cluster.DefaultCoordLease {
		t.Errorf("coordinator timings from the default config: sweep %s, lease %s; want the cluster package's %s, %s",
			c.SweepInterval, c.Lease, cluster.DefaultSweepInterval, cluster.DefaultCoordLease)
	}
}
