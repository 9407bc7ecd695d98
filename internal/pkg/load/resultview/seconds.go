package resultview

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// chartSeconds are the seconds the time charts draw: secs without the
// trailing seconds that lie wholly past elapsed (the drain after the
// plan's end, whose completions are in the totals and the latency
// spectrum, but whose rates would read as a fall to zero), and with a
// last second that the run covered only in part counted per second of
// what it covered, so that a run of 2.5 s does not end on half its rate.
// Without elapsed (a live run) secs are drawn as they are.
func chartSeconds(secs []load.Second, elapsed time.Duration) []load.Second {
	if elapsed <= 0 || len(secs) < 2 {
		return secs
	}
	end := len(secs)
	for end > 1 && time.Duration(secs[end-1].Second)*time.Second >= elapsed {
		end--
	}
	out := secs[:end:end]
	last := out[end-1]
	covered := (elapsed - time.Duration(last.Second)*time.Second).Seconds()
	if covered >= 1 || covered <= 0 {
		return out
	}
	out = append(out[:end-1:end-1], perSecond(last, covered))
	return out
}

// perSecond is s with its counts divided by covered, the part of the
// second the run covered (0 < covered < 1), rounded to whole requests.
func perSecond(s load.Second, covered float64) load.Second {
	scale := func(n int64) int64 { return int64(math.Round(float64(n) / covered)) }
	s.Requests, s.Errors, s.Dropped, s.Late = scale(s.Requests), scale(s.Errors), scale(s.Dropped), scale(s.Late)
	s.Status = maps.Clone(s.Status)
	for k, n := range s.Status {
		s.Status[k] = scale(n)
	}
	s.Classes = maps.Clone(s.Classes)
	for k, n := range s.Classes {
		s.Classes[k] = scale(n)
	}
	s.Endpoints = slices.Clone(s.Endpoints)
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		e.Requests, e.Errors = scale(e.Requests), scale(e.Errors)
	}
	return s
}

// liveCards relabels the headline of a running test: the asked rate is the
// plan's mean over the seconds so far, the window of the achieved rate,
// and the duration is the time elapsed of the time planned (when known).
func (v *View) liveCards(planned time.Duration) {
	for i := range v.Cards {
		c := &v.Cards[i]
		switch c.Key {
		case "target_rps":
			c.Label = "Planned rate so far"
		case "rps":
			c.Label = "Achieved rate so far"
		case "elapsed_s":
			if planned > 0 {
				c.Label = "Elapsed"
				c.Value = strconv.FormatFloat(v.Summary.ElapsedSeconds, 'f', 0, 64) + " s of " + strconv.FormatFloat(planned.Seconds(), 'f', 0, 64) + " s planned"
			}
		}
	}
}
