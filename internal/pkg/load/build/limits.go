package build

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// Limits are the runner admin's caps (the daemon config's `load` section). A
// zero field means no limit.
type Limits struct {
	// MaxRate caps the peak arrival rate (load.max_rate).
	MaxRate float64
	// MaxConcurrency caps concurrency and vus (load.max_concurrency).
	MaxConcurrency int
	// MaxDuration caps the duration (load.max_duration); a config without a
	// duration gets this one. It is also a hard bound: the run stops, and
	// its requests in flight are cancelled, load.MaxInterruptGrace after
	// it, whatever graceful_shutdown says (load.Options.Deadline).
	MaxDuration time.Duration
	// MaxGracefulShutdown caps graceful_shutdown
	// (load.max_graceful_shutdown): how long requests in flight may run on
	// after the plan's end.
	MaxGracefulShutdown time.Duration
	// MaxEndpoints caps the endpoints of a run, those of a HAR file
	// included (load.max_endpoints): the engine keeps latency histograms
	// per endpoint.
	MaxEndpoints int
}

// CheckEndpoints fails a config with more endpoints (endpoints and HAR
// entries together) than l allows. Call it before anything that costs per
// endpoint, such as checking each target.
func (l Limits) CheckEndpoints(cfg *spec.Config) error {
	return joinLimits(l.endpoints(len(cfg.Mix()), cfg.HARFile != ""))
}

func (l Limits) endpoints(n int, har bool) []error {
	if l.MaxEndpoints <= 0 || n <= l.MaxEndpoints {
		return nil
	}
	fix := "use fewer endpoints"
	if har {
		fix = "filter har_file with har_filter, or use fewer endpoints"
	}
	return []error{fmt.Errorf("%d endpoints are above this runner's limit of %d (load.max_endpoints in the runner config): %s", n, l.MaxEndpoints, fix)}
}

// grace checks o's graceful shutdown against MaxGracefulShutdown (a
// missing one gets the default or the cap, the lower) and sets the hard
// deadline of MaxDuration. whose and config name the limit in errors.
func (l Limits) grace(o *load.Options, whose, config string) []error {
	var errs []error
	if l.MaxGracefulShutdown > 0 {
		switch {
		case o.Grace > l.MaxGracefulShutdown:
			errs = append(errs, fmt.Errorf("graceful_shutdown %s is above %s limit of %s (load.max_graceful_shutdown in %s): lower graceful_shutdown",
				o.Grace, whose, l.MaxGracefulShutdown, config))
		case o.Grace == 0 && load.DefaultGrace > l.MaxGracefulShutdown:
			o.Grace = l.MaxGracefulShutdown
		}
	}
	if l.MaxDuration > 0 {
		o.Deadline = l.MaxDuration + load.MaxInterruptGrace
	}
	return errs
}

// Check fails options that ask for more than the runner allows, gives an
// open-ended run the maximum duration, and sets the hard deadline of
// MaxDuration. Errors name the daemon config key and how to fix the load
// config. Endpoints are checked on the config: see [Limits.CheckEndpoints].
func (l Limits) Check(o *load.Options) error {
	var errs []error
	if l.MaxRate > 0 {
		if peak := PeakRate(o); peak > l.MaxRate {
			errs = append(errs, fmt.Errorf("rate %s req/s is above this runner's limit of %s req/s (load.max_rate in the runner config): lower rate or load_patterns",
				formatRate(peak), formatRate(l.MaxRate)))
		}
	}
	if l.MaxConcurrency > 0 {
		if c := max(o.Concurrency, PeakVUs(o)); c > l.MaxConcurrency {
			errs = append(errs, fmt.Errorf("concurrency/vus %d is above this runner's limit of %d (load.max_concurrency in the runner config): lower concurrency or vus", c, l.MaxConcurrency))
		} else if o.MaxConcurrency > l.MaxConcurrency {
			errs = append(errs, fmt.Errorf("max_concurrency %d is above this runner's limit of %d (load.max_concurrency in the runner config): lower max_concurrency, or leave it out for the runner's most", o.MaxConcurrency, l.MaxConcurrency))
		}
	}
	if l.MaxDuration > 0 {
		switch {
		case o.Duration > l.MaxDuration:
			errs = append(errs, fmt.Errorf("duration %s is above this runner's limit of %s (load.max_duration in the runner config): lower duration", o.Duration, l.MaxDuration))
		case o.Duration == 0:
			o.Duration = l.MaxDuration
		}
	}
	errs = append(errs, l.grace(o, "this runner's", "the runner config")...)
	return joinLimits(errs)
}

// CheckShare applies the limits to one host's share of a multi-host run:
// share of the peak rate, its scaled VUs (scale, nil for none), the whole
// concurrency (open model: in flight on this host), the duration (and its
// hard deadline), the graceful shutdown and the endpoints (o.Endpoints,
// set by [New]).
func (l Limits) CheckShare(o *load.Options, share float64, scale func(int) int) error {
	var errs []error
	if l.MaxRate > 0 {
		if mine := PeakRate(o) * share; mine > l.MaxRate {
			errs = append(errs, fmt.Errorf("this worker's share of the rate, %s req/s, is above its limit of %s req/s (load.max_rate in this runner's config): add workers or lower rate",
				formatRate(mine), formatRate(l.MaxRate)))
		}
	}
	if l.MaxConcurrency > 0 {
		c := o.Concurrency
		if !o.Open() {
			c = max(o.Concurrency, PeakVUs(o))
			if scale != nil {
				c = scale(c)
			}
		}
		// The pool grows on demand: on this worker, up to its own cap.
		o.MaxConcurrency = min(o.MaxConcurrency, l.MaxConcurrency)
		if c > l.MaxConcurrency {
			errs = append(errs, fmt.Errorf("this worker's concurrency/vus %d is above its limit of %d (load.max_concurrency in this runner's config): lower concurrency or vus", c, l.MaxConcurrency))
		}
	}
	if l.MaxDuration > 0 && o.Duration > l.MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s is above this worker's limit of %s (load.max_duration in this runner's config): lower duration", o.Duration, l.MaxDuration))
	}
	errs = append(errs, l.endpoints(len(o.Endpoints), false)...)
	errs = append(errs, l.grace(o, "this worker's", "this runner's config")...)
	return joinLimits(errs)
}

// PeakRate is the highest arrival rate o asks for: its rate or the peak of
// its stages; 0 in the closed model.
func PeakRate(o *load.Options) float64 {
	peak := o.Rate
	for _, s := range o.Stages {
		peak = max(peak, s.From, s.To)
	}
	return peak
}

// PeakVUs is the most virtual users o asks for at once: vus or the peak of
// its VU stages.
func PeakVUs(o *load.Options) int {
	v := o.VUs
	for _, s := range o.VUStages {
		v = max(v, s.Target)
	}
	return v
}

func formatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func joinLimits(errs []error) error {
	if len(errs) > 0 {
		return fmt.Errorf("load limits: %w", errors.Join(errs...))
	}
	return nil
}
