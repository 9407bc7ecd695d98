package metrics

import "github.com/prometheus/client_golang/prometheus"

// Values of the state label of forgeload_state, as in Gitea's runner.
const (
	StateIdle        = "idle"        // ready, no job running
	StateBusy        = "busy"        // ready, at least one job running
	StateUnavailable = "unavailable" // not ready (see /readyz)
)

// RegisterState registers forgeload_state{state} on reg: 1 for the
// daemon's state and 0 for the others, read at scrape time from ready
// (unavailable while it returns an error) and from the running jobs
// SetRunning was given (busy when one runs, else idle). It is Gitea's
// runner's state gauge.
func (m *Metrics) RegisterState(reg prometheus.Registerer, ready Readiness) error {
	for _, st := range []string{StateIdle, StateBusy, StateUnavailable} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "state", ConstLabels: prometheus.Labels{"state": st},
			Help: "1 for the runner's state (idle, busy or unavailable, as Gitea's runner), 0 for the others.",
		}, func() float64 {
			if m.state(ready) == st {
				return 1
			}
			return 0
		})
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) state(ready Readiness) string {
	if ready.Ready() != nil {
		return StateUnavailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running > 0 {
		return StateBusy
	}
	return StateIdle
}
