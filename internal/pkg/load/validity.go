package load

import (
	"strconv"
	"strings"
	"time"
)

// Validity rules: what a run must deliver to be a valid measurement of the
// load it was asked for.
const (
	// MinAchievedRatio is the least share of its asked arrivals a valid
	// open-model run sends ([Result.AchievedRatio]).
	MinAchievedRatio = 0.99
	// GeneratorBehindSeconds is how many plan seconds must each have more
	// than GeneratorBehindShare of their requests sent more than
	// GeneratorLateTolerance late while a worker was free before the run
	// counts as generator-bound: a machine that hiccups for a second or
	// two never makes a run invalid.
	GeneratorBehindSeconds = 3
	// GeneratorBehindShare is the share of a second's requests that must
	// be generator-late for that second to count as behind.
	GeneratorBehindShare = 0.10
)

// Invalidity is one reason a run did not deliver the load it was asked
// for, with what to do about it.
type Invalidity struct {
	// Reason is achieved_rate, dropped, generator_bound or max_concurrency.
	Reason string `json:"reason"`
	// Detail is one line: what was measured and the fix.
	Detail string `json:"detail"`
}

// Behind is the evidence of the generator falling behind: arrivals it sent
// more than GeneratorLateTolerance late while a worker was free.
type Behind struct {
	// Late counts them; Max is the latest.
	Late int64
	Max  time.Duration
	// Seconds are the plan seconds in which more than GeneratorBehindShare
	// of the requests were such arrivals.
	Seconds []int
	// Behind is the verdict: at least GeneratorBehindSeconds such seconds
	// and more than 1% of all requests.
	Behind bool
}

// GeneratorBehind returns r's evidence that the generator, not the target,
// fell behind its schedule.
func GeneratorBehind(r *Result) Behind {
	b := Behind{Late: r.GeneratorLate, Max: r.GeneratorLateMax}
	for _, s := range r.Seconds {
		if s.GeneratorLate > 0 && float64(s.GeneratorLate) > GeneratorBehindShare*float64(s.Requests) {
			b.Seconds = append(b.Seconds, s.Second)
		}
	}
	b.Behind = len(b.Seconds) >= GeneratorBehindSeconds && b.Late*100 > r.Requests
	return b
}

// String describes the evidence in one line, such as "412 arrivals sent
// more than 10.00ms late while a worker was free (up to 230.00ms late);
// behind in 5 seconds (at 3-7 s)".
func (b Behind) String() string {
	if b.Late == 0 {
		return "no arrival was sent more than " + fmtDur(GeneratorLateTolerance) + " late while a worker was free"
	}
	s := strconv.FormatInt(b.Late, 10) + " arrivals sent more than " + fmtDur(GeneratorLateTolerance) +
		" late while a worker was free (up to " + fmtDur(b.Max) + " late); behind in " + plural(len(b.Seconds), "second")
	if len(b.Seconds) > 0 {
		s += " (at " + secondRanges(b.Seconds) + ")"
	}
	return s
}

// secondRanges formats sorted seconds as ranges: "3-7, 12, 15-16 s", at
// most a few of them.
func secondRanges(secs []int) string {
	const most = 5
	var parts []string
	for i := 0; i < len(secs); {
		j := i
		for j+1 < len(secs) && secs[j+1] == secs[j]+1 {
			j++
		}
		p := strconv.Itoa(secs[i])
		if j > i {
			p += "-" + strconv.Itoa(secs[j])
		}
		parts = append(parts, p)
		i = j + 1
	}
	if len(parts) > most {
		parts = append(parts[:most], "…")
	}
	return strings.Join(parts, ", ") + " s"
}

// AchievedRatio returns the share of the open model's arrivals that were
// sent: requests / (requests + dropped). Every arrival that fell due in a
// run is either sent or dropped (with its reason), so this is the achieved
// rate over the asked one, exact for Poisson arrivals and for a run that
// total ended before its responses came back, where requests per second
// of the run's elapsed time would read low. It returns 0 and false in the
// closed model, or when nothing fell due.
func (r *Result) AchievedRatio() (float64, bool) {
	asked := r.Requests + r.Dropped
	if !r.Open || asked <= 0 {
		return 0, false
	}
	return float64(r.Requests) / float64(asked), true
}

// Validity returns why r did not deliver the load it was asked for, most
// telling first; nil when it did. An interrupted run is not judged. In the
// open model a run is invalid when it dropped arrivals (reason
// achieved_rate when it sent less than MinAchievedRatio of them, else
// dropped), reached its worker cap with more than 1% of its arrivals
// waiting for a free worker, or when the generator fell behind
// ([GeneratorBehind]). A multi-host merge is judged by the same rules,
// but for the arrivals dropped while a share moved to another host
// (DropHandover): those alone do not make it invalid, though they count
// in the achieved ratio.
func (r *Result) Validity() []Invalidity {
	if r.Interrupted || !r.Open {
		return nil
	}
	var out []Invalidity
	// Under 99% of the asked arrivals sent is the achieved rate missing
	// its target; any fewer is still a load not delivered.
	// A handover's drops alone are set aside (a takeover always drops
	// the arrivals that fell due while it started), but they count in
	// the achieved ratio like any other: a run that lost a host's share
	// for long enough to miss 1% of its load did not deliver it.
	handover := r.DroppedBy[DropHandover.String()]
	ratio := 1.0
	if r.Dropped > 0 {
		ratio = float64(r.Requests) / float64(r.Requests+r.Dropped)
	}
	if r.Dropped-handover > 0 || ratio < MinAchievedRatio {
		why := "dropped"
		if ratio < MinAchievedRatio {
			why = "achieved_rate"
		}
		out = append(out, Invalidity{Reason: why, Detail: "sent " + strconv.FormatInt(r.Requests, 10) + " of " +
			strconv.FormatInt(r.Requests+r.Dropped, 10) + " arrivals asked (" + fmtPct(ratio) + "); " + strconv.FormatInt(r.Dropped, 10) +
			" never sent (" + fmtCounts(r.DroppedBy) + "): " + dropFix(r.DroppedBy)})
	}
	if r.MaxWorkers > 0 && r.Workers >= r.MaxWorkers && r.Queued*100 > r.Requests {
		out = append(out, Invalidity{Reason: "max_concurrency", Detail: "the worker pool reached max_concurrency (" + strconv.Itoa(r.MaxWorkers) +
			") and " + strconv.FormatInt(r.Queued, 10) + " arrivals waited for a free worker: raise max_concurrency, or lower the rate if the target cannot take it"})
	}
	if r.Stalled > 0 {
		out = append(out, Invalidity{Reason: "generator_bound", Detail: "the generator stalled (a frozen process or host, not the target) and skipped " +
			strconv.FormatInt(r.Stalled, 10) + " overdue arrivals rather than send them in a burst: look for what froze the runner (a VM pause, swapping, a long GC)"})
	} else if b := GeneratorBehind(r); b.Behind {
		out = append(out, Invalidity{Reason: "generator_bound", Detail: "the generator fell behind its schedule: " + b.String() +
			": lower the rate, give the runner more CPU, or split the test over more hosts"})
	}
	return out
}

// dropFix is what to do about dropped arrivals, by their main reason.
func dropFix(by map[string]int64) string {
	main, n := "", int64(-1)
	for _, k := range sortedKeys(by) {
		if by[k] > n {
			main, n = k, by[k]
		}
	}
	switch main {
	case DropLate.String():
		return "every worker was busy for longer than max lateness; raise max_concurrency, or lower the rate if the target cannot take it"
	case DropStop.String(), DropCanceled.String():
		return "arrivals were still waiting for a worker when the run stopped; raise max_concurrency, or lower the rate if the target cannot take it (graceful_shutdown gives the last ones longer)"
	case DropLease.String():
		return "a host did not hold its lease (it was paused or cut off); check the cluster's hosts"
	case DropFeeder.String():
		return "the feeder ran out of rows; add rows or set recycle: true"
	case DropAuth.String():
		return "the credentials could not be fetched; check auth"
	case DropHandover.String():
		return "a lost host's share was idle until another host took it over; check why the host was lost, or lower cluster.lease for quicker takeovers"
	case DropStall.String():
		return "the generator stalled (a frozen process or host) and skipped the arrivals that fell due meanwhile; look for what froze the runner (a VM pause, swapping, a long GC)"
	}
	return "see the per-worker rows; add workers or lower the rate"
}

// plural is "1 second" or "n seconds".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
