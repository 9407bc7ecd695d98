package build

import (
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Phases returns the named phases of cfg's timeline: each named
// load_patterns[] entry, back to back from plan time 0, then each named
// vus.stages[] leg. Unnamed ones are not phases.
func Phases(cfg *spec.Config) []load.Phase {
	var out []load.Phase
	var at time.Duration
	for _, p := range cfg.Patterns {
		span := p.Span()
		if p.Name != "" {
			out = append(out, load.Phase{Name: p.Name, Start: at, End: at + span})
		}
		at += span
	}
	at = 0
	for _, st := range cfg.VUs.Stages {
		if st.Name != "" {
			out = append(out, load.Phase{Name: st.Name, Start: at, End: at + st.Duration})
		}
		at += st.Duration
	}
	return out
}

var _ threshold.PhaseSource = source{}

// PhaseNames lists the result's phases, for errors.
func (s source) PhaseNames() []string { return s.r.PhaseNames() }

// Phase is the result restricted to the seconds of the phase named name;
// its rates are over the part of the phase the run covered.
func (s source) Phase(name string) (threshold.Source, bool) {
	ps, covered, ok := s.r.Phase(name)
	if !ok {
		return nil, false
	}
	sub := &load.Result{Elapsed: covered, Stats: ps.Stats, Endpoints: ps.Endpoints, SUT: s.r.SUT}
	return source{sub}, true
}
