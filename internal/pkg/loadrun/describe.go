package loadrun

import (
	"fmt"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// Describe is the one-line account of what is about to run: target (or
// endpoint count), load model, concurrency, duration and total.
func Describe(cfg *spec.Config, o *load.Options) string {
	var b strings.Builder
	eps := cfg.Mix()
	if len(eps) == 1 {
		fmt.Fprintf(&b, "%s %s", eps[0].Method, redact.URL(eps[0].URL))
	} else {
		fmt.Fprintf(&b, "%d endpoints", len(eps))
	}
	switch {
	case o.Rate > 0:
		fmt.Fprintf(&b, ", %g req/s (%s arrivals)", o.Rate, arrivalName(o.Arrival))
	case len(o.Stages) > 0:
		fmt.Fprintf(&b, ", %d load pattern stages", len(o.Stages))
	case o.VUs > 0 || len(o.VUStages) > 0:
		fmt.Fprintf(&b, ", closed model with virtual users")
	default:
		fmt.Fprintf(&b, ", closed loop")
	}
	fmt.Fprintf(&b, ", concurrency %d", o.Concurrency)
	if o.Open() && o.MaxConcurrency > o.Concurrency {
		fmt.Fprintf(&b, " (grows to %d)", o.MaxConcurrency)
	}
	if o.Duration > 0 {
		fmt.Fprintf(&b, ", for %s", o.Duration)
	}
	if o.Total > 0 {
		fmt.Fprintf(&b, ", at most %d requests", o.Total)
	}
	return b.String()
}

func arrivalName(m load.ArrivalModel) string {
	if m == load.Poisson {
		return "poisson"
	}
	return "uniform"
}
