package load

import "time"

// Phase is a named window of plan time: one named load pattern of a
// config, from its Start to its End (plan time 0 is the run's start).
type Phase struct {
	Name  string        `json:"name"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
}

// holds reports whether plan second sec belongs to p: the second's
// midpoint lies in [Start, End), so each second belongs to at most one
// phase of a timeline and a whole-second phase holds exactly its seconds.
func (p Phase) holds(sec int) bool {
	mid := time.Duration(sec)*time.Second + time.Second/2
	return mid >= p.Start && mid < p.End
}

// PhaseStats are the Stats of the seconds of one phase: the merge of the
// per-second snapshots whose second lies in the phase (a request counts in
// the second it completed in), built by [Result.AddSnapshot] off the
// engine's request path.
type PhaseStats struct {
	Phase
	Stats
	// Endpoints are the per-endpoint Stats within the phase.
	Endpoints []EndpointStats `json:"endpoints"`
}

// SetPhases makes r keep per-phase Stats for phases; call it before the
// first AddSnapshot. A run's engine sets [Options.Phases] here itself.
func (r *Result) SetPhases(phases []Phase) {
	r.Phases = make([]PhaseStats, 0, len(phases))
	for _, p := range phases {
		r.Phases = append(r.Phases, PhaseStats{Phase: p})
	}
}

// addPhases merges s into the phase that holds its second, if any.
func (r *Result) addPhases(s *Snapshot) {
	for i := range r.Phases {
		p := &r.Phases[i]
		if !p.holds(s.Second) {
			continue
		}
		p.Stats.Merge(&s.Stats)
		for j := range s.Endpoints {
			p.endpoint(s.Endpoints[j].Name).Merge(&s.Endpoints[j].Stats)
		}
	}
}

// mergePhases adds o's phase stats to r's, phase by phase (by name and
// window); r takes o's phases when it has none.
func (r *Result) mergePhases(o *Result) {
	for i := range o.Phases {
		op := &o.Phases[i]
		k := -1
		for j := range r.Phases {
			if r.Phases[j].Phase == op.Phase {
				k = j
				break
			}
		}
		if k < 0 {
			r.Phases = append(r.Phases, PhaseStats{Phase: op.Phase})
			k = len(r.Phases) - 1
		}
		p := &r.Phases[k]
		p.Stats.Merge(&op.Stats)
		for j := range op.Endpoints {
			p.endpoint(op.Endpoints[j].Name).Merge(&op.Endpoints[j].Stats)
		}
	}
}

func (p *PhaseStats) endpoint(name string) *Stats {
	for i := range p.Endpoints {
		if p.Endpoints[i].Name == name {
			return &p.Endpoints[i].Stats
		}
	}
	p.Endpoints = append(p.Endpoints, EndpointStats{Name: name})
	return &p.Endpoints[len(p.Endpoints)-1].Stats
}

// PhaseNames returns the distinct names of r's phases, in timeline order.
func (r *Result) PhaseNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range r.Phases {
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return names
}

// Phase returns the Stats of the phase named name (merged over every
// window of that name) and the plan time the phase covered in a run of
// r.Elapsed, for its rates; ok is false when r has no such phase.
func (r *Result) Phase(name string) (stats *PhaseStats, covered time.Duration, ok bool) {
	out := &PhaseStats{Phase: Phase{Name: name}}
	for i := range r.Phases {
		p := &r.Phases[i]
		if p.Name != name {
			continue
		}
		if !ok {
			out.Start = p.Start
		}
		ok = true
		out.End = p.End
		out.Stats.Merge(&p.Stats)
		for j := range p.Endpoints {
			out.endpoint(p.Endpoints[j].Name).Merge(&p.Endpoints[j].Stats)
		}
		covered += max(0, min(p.End, r.Elapsed)-p.Start)
	}
	return out, covered, ok
}
