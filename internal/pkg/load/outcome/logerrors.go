package outcome

import (
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// log_errors: the one policy of `forgeload load` and the load step. The
// first LogErrorsFirst failures are logged, then at most one each
// LogErrorsEvery, so that a run failing all along keeps showing what
// fails (a fixed cap would go silent after its first seconds) while its
// log grows with the duration, not with the rate. Each line names the
// endpoint, the status and the error class.
const (
	LogErrorsFirst = 10
	LogErrorsEvery = time.Second
)

// FailureLogger returns the engine's LogFailure hook under the log_errors
// policy: logf receives one line per logged failure, "request failed:
// endpoint %q status %d class %s: err", and, at the first failure left
// out, a line saying that the rest are sampled. endpoints are the config's
// endpoints in the engine's order ([spec.Config.Mix]); a paired A/B run's
// baseline side (indexes from len(endpoints) on) is named with
// [duet.BaselinePrefix]. It is safe for
// concurrent use.
func FailureLogger(endpoints []spec.Endpoint, logf func(format string, args ...any)) func(*load.Sample, error) {
	every := &rate.Sometimes{First: LogErrorsFirst, Interval: LogErrorsEvery}
	var noted atomic.Bool
	return func(s *load.Sample, err error) {
		did := false
		every.Do(func() {
			did = true
			name := ""
			switch n := len(endpoints); {
			case s.Endpoint < n:
				name = endpoints[s.Endpoint].Name
			case s.Endpoint < 2*n: // a paired A/B run's baseline side
				name = duet.BaselinePrefix + endpoints[s.Endpoint-n].Name
			}
			logf("request failed: endpoint %q status %d class %s: %v", name, s.Status, s.Class, err)
		})
		if !did && noted.CompareAndSwap(false, true) {
			logf("more requests failed: log_errors shows the first %d, then one a second; the summary counts them all", LogErrorsFirst)
		}
	}
}
