package threshold

import (
	"strings"
	"testing"
	"time"
)

// phaseSource has one phase, plateau, whose metrics are fast where the
// whole run's are slow.
type phaseSource struct{ fakeSource }

func (s phaseSource) Phase(name string) (Source, bool) {
	if name != "plateau" {
		return nil, false
	}
	fast := fakeMetrics{requests: 10, elapsed: time.Second, pct: map[float64]time.Duration{99: 20 * time.Millisecond}}
	return fakeSource{overall: fast, endpoints: map[string]Metrics{"login": fast}}, true
}

func (s phaseSource) PhaseNames() []string { return []string{"warmup", "plateau"} }

func TestParsePhaseSelectors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, endpoint, phase string }{
		{"http_req_duration{phase:plateau}:p99 < 200ms", "", "plateau"},
		{"http_req_duration{endpoint:login,phase:plateau}:p99 < 200ms", "login", "plateau"},
		{"http_req_failed{ phase = 'warm up' , endpoint:a }:rate < 1%", "a", "warm up"},
		{"http_req_duration{endpoint:login}:p99 < 200ms", "login", ""},
	} {
		th, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if th.Endpoint != c.endpoint || th.Phase != c.phase {
			t.Errorf("Parse(%q) = endpoint %q phase %q, want %q %q", c.in, th.Endpoint, th.Phase, c.endpoint, c.phase)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"http_req_duration{phase:}:p99 < 1s", "phase name is empty: want {phase:NAME} with a name from load_patterns[].name"},
		{"http_req_duration{phase:a,phase:b}:p99 < 1s", "names phase twice"},
		{"http_req_duration{stage:a}:p99 < 1s", "want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME}"},
		{"http_req_duration{phase:a:p99 < 1s", "selector is not closed"},
		{"sut_cpu{phase:a}:max < 80%", "want {service:NAME}"},
	} {
		if _, err := Parse(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %v, want it to say %q", c.in, err, c.want)
		}
	}
}

func TestEvaluatePhase(t *testing.T) {
	t.Parallel()
	slow := fakeMetrics{requests: 20, elapsed: 2 * time.Second, pct: map[float64]time.Duration{99: 400 * time.Millisecond}}
	src := phaseSource{fakeSource{overall: slow}}
	parse := func(s string) Threshold {
		th, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	outs := EvaluateBaseline([]Threshold{
		parse("http_req_duration:p99 < 100ms"),
		parse("http_req_duration{phase:plateau}:p99 < 100ms"),
		parse("http_req_duration{endpoint:login,phase:plateau}:p99 < 100ms"),
		parse("http_req_duration{phase:soak}:p99 < 100ms"),
	}, src, nil)
	if outs[0].Passed || !outs[1].Passed || !outs[2].Passed {
		t.Errorf("outcomes = %+v, want the overall bound failed and the plateau's passed", outs[:3])
	}
	if err := outs[3].Err; err == nil || !strings.Contains(err.Error(), `no phase named "soak"; the phases are: warmup, plateau`) {
		t.Errorf("unknown phase: err = %v, want it to list the phases", err)
	}
	noPhases := EvaluateBaseline([]Threshold{parse("http_req_duration{phase:plateau}:p99 < 100ms")}, fakeSource{overall: slow}, nil)[0]
	if noPhases.Passed || noPhases.Err == nil || !strings.Contains(noPhases.Err.Error(), "no phases") {
		t.Errorf("a source without phases: %+v, want an error saying so", noPhases)
	}
}
