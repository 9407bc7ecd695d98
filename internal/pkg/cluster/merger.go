package cluster

import (
	"strconv"

	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
)

// merger folds the metrics stream into per-second, per-worker and total
// snapshots, dropping duplicate entries by (w, q).
type merger struct {
	seen      map[string]map[int64]bool
	seconds   map[int]*snapshot.Snapshot
	perWorker map[string]*snapshot.Snapshot
	lastSec   map[string]int
	total     *snapshot.Snapshot
	dups      int
	bad       int
}

func newMerger() *merger {
	return &merger{
		seen: map[string]map[int64]bool{}, seconds: map[int]*snapshot.Snapshot{},
		perWorker: map[string]*snapshot.Snapshot{}, lastSec: map[string]int{}, total: snapshot.New(-1),
	}
}

// add merges one stream entry (fields w, g, q, s, f, b). It returns the
// worker id and whether the entry was new and well-formed.
func (m *merger) add(v map[string]any) (string, bool) {
	w, _ := v["w"].(string)
	qs, _ := v["q"].(string)
	body, _ := v["b"].(string)
	q, err := strconv.ParseInt(qs, 10, 64)
	if w == "" || err != nil {
		m.bad++
		return w, false
	}
	if m.seen[w] == nil {
		m.seen[w] = map[int64]bool{}
	}
	if m.seen[w][q] {
		m.dups++
		return w, false
	}
	m.seen[w][q] = true
	snap, err := snapshot.Unmarshal([]byte(body))
	if err != nil {
		m.bad++
		return w, false
	}
	if snap.Second >= 0 {
		s := m.seconds[snap.Second]
		if s == nil {
			s = snapshot.New(snap.Second)
			m.seconds[snap.Second] = s
		}
		s.Merge(snap)
		if last, ok := m.lastSec[w]; !ok || snap.Second > last {
			m.lastSec[w] = snap.Second
		}
	}
	pw := m.perWorker[w]
	if pw == nil {
		pw = snapshot.New(-1)
		m.perWorker[w] = pw
	}
	pw.Merge(snap)
	m.total.Merge(snap)
	return w, true
}
