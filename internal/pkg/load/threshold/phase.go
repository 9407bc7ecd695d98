package threshold

import (
	"fmt"
	"strings"
)

// KeyPhase and KeyEndpoint are the selector keys of the request metrics:
// http_req_duration{endpoint:login,phase:plateau}:p99.
const (
	KeyEndpoint = "endpoint"
	KeyPhase    = "phase"
)

// PhaseSource is a [Source] that also has the metrics of each named phase
// of the run. The engine's result implements it; a source without phases
// (an older baseline) fails a phase threshold with a clear error.
type PhaseSource interface {
	Source
	// Phase returns the source restricted to the seconds of the phase
	// named name, and false when the run has no such phase.
	Phase(name string) (Source, bool)
	// PhaseNames lists the run's phases, for errors.
	PhaseNames() []string
}

// selectors parses `{key:NAME}` or `{key:NAME,key:NAME}` with the keys
// endpoint and phase, each at most once, into t.
func (p *parser) selectors(t *Threshold) error {
	open := p.pos
	end := strings.IndexByte(p.rest(), '}')
	if end < 0 {
		return p.errorf(open, "selector is not closed: want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME}")
	}
	inner := p.src[open+1 : open+end]
	p.pos = open + end + 1
	for part := range strings.SplitSeq(inner, ",") {
		key, val, ok := strings.Cut(part, ":")
		if !ok {
			key, val, ok = strings.Cut(part, "=")
		}
		key = strings.TrimSpace(key)
		if !ok || key != KeyEndpoint && key != KeyPhase {
			return p.errorf(open, "want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME} to select an endpoint or a phase")
		}
		val = unquote(strings.TrimSpace(val))
		if val == "" {
			if key == KeyPhase {
				return p.errorf(open, "phase name is empty: want {phase:NAME} with a name from load_patterns[].name or vus.stages[].name")
			}
			return p.errorf(open, "endpoint name is empty: want {endpoint:NAME} with the name from endpoints[].name")
		}
		dst := &t.Endpoint
		if key == KeyPhase {
			dst = &t.Phase
		}
		if *dst != "" {
			return p.errorf(open, "the selector names %s twice: give each of endpoint and phase at most once", key)
		}
		*dst = val
	}
	return nil
}

// unquote drops one pair of matching quotes around v.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// phaseOf returns the part of src that t checks: src itself, or with a
// Phase the phase's source.
func phaseOf(t Threshold, src Source) (Source, error) {
	if t.Phase == "" || src == nil {
		return src, nil
	}
	ps, ok := src.(PhaseSource)
	if !ok {
		return nil, fmt.Errorf("evaluate threshold %q: these results have no phases, so {phase:%s} cannot be checked", t.Source, t.Phase)
	}
	sub, ok := ps.Phase(t.Phase)
	if !ok {
		names := ps.PhaseNames()
		if len(names) == 0 {
			return nil, fmt.Errorf("evaluate threshold %q: no phase named %q: the run has no named phases; name them with load_patterns[].name or vus.stages[].name", t.Source, t.Phase)
		}
		return nil, fmt.Errorf("evaluate threshold %q: no phase named %q; the phases are: %s", t.Source, t.Phase, strings.Join(names, ", "))
	}
	return sub, nil
}
