package loadrun

import (
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// toCluster is an engine snapshot in the cluster's form, sharing its
// histograms: the cluster's sink merges it into a buffer of its own.
func toCluster(s *load.Snapshot) *snapshot.Snapshot {
	return &snapshot.Snapshot{Second: s.Second, Stats: s.Stats, Endpoints: s.Endpoints, Dropped: s.Dropped, DroppedBy: s.DroppedBy,
		GeneratorLate: s.GeneratorLate, GeneratorLateMax: s.GeneratorLateMax, Checks: s.Checks, InFlight: int64(s.InFlight)}
}

// fromCluster is a (merged) cluster snapshot as an engine snapshot,
// sharing its histograms. TargetRPS is left 0: it is the plan's, not a sum
// over workers.
func fromCluster(cs *snapshot.Snapshot) *load.Snapshot {
	return &load.Snapshot{Second: cs.Second, Stats: cs.Stats, Endpoints: cs.Endpoints, Dropped: cs.Dropped, DroppedBy: cs.DroppedBy,
		GeneratorLate: cs.GeneratorLate, GeneratorLateMax: cs.GeneratorLateMax, Checks: cs.Checks, InFlight: int(cs.InFlight)}
}
