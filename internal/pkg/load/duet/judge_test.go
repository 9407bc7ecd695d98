package duet

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

// noisyRun simulates a paired run of 30 seconds on a shared machine: each
// second's machine noise (log-normal, σ 0.4) slows both sides alike, each
// side has its own smaller noise (σ 0.1), and the candidate is factor
// times slower. Both sides fail about 0.5% of requests.
func noisyRun(seed uint64, factor float64) (secs []Second, cand, base Point) {
	rng := rand.New(rand.NewPCG(seed, 1))
	side := func(machine, f float64) Point {
		own := math.Exp(0.1 * rng.NormFloat64())
		lat := func(ms float64) time.Duration {
			return time.Duration(ms * machine * own * f * float64(time.Millisecond))
		}
		var errs int64
		for range 100 {
			if rng.Float64() < 0.005 {
				errs++
			}
		}
		return Point{Requests: 100, Errors: errs, P50: lat(10), P95: lat(25), P99: lat(40)}
	}
	for i := range 30 {
		machine := math.Exp(0.4 * rng.NormFloat64())
		s := Second{Second: i, Candidate: side(machine, factor), Baseline: side(machine, 1)}
		secs = append(secs, s)
	}
	return secs, secs[len(secs)/2].Candidate, secs[len(secs)/2].Baseline
}

func TestJudgeSeededNoise(t *testing.T) {
	t.Parallel()
	var falseAlarms, caught int
	for seed := range uint64(20) {
		secs, c, b := noisyRun(seed, 1)
		if v := Judge(secs, c, b, nil); v.Regressed() || v.Err() != nil {
			falseAlarms++
			t.Logf("seed %d, identical: %v", seed, v.Err())
		}
		secs, c, b = noisyRun(seed, 2)
		if v := Judge(secs, c, b, nil); v.Regressed() && v.Err() != nil {
			caught++
		} else {
			t.Logf("seed %d, 2× slower: not caught: %+v", seed, v.Deltas)
		}
	}
	if falseAlarms > 1 {
		t.Errorf("identical sides: %d of 20 seeds judged a regression, want at most 1", falseAlarms)
	}
	if caught != 20 {
		t.Errorf("2× slower candidate: caught in %d of 20 seeds, want 20", caught)
	}
}

func TestJudgeDeterministic(t *testing.T) {
	t.Parallel()
	secs, c, b := noisyRun(7, 1.08)
	v1, v2 := Judge(secs, c, b, nil), Judge(secs, c, b, nil)
	for i := range v1.Deltas {
		if v1.Deltas[i].Noise != v2.Deltas[i].Noise || v1.Deltas[i].Regressed != v2.Deltas[i].Regressed {
			t.Errorf("%s: %q then %q: the bootstrap is not deterministic", v1.Deltas[i].Metric, v1.Deltas[i].Noise, v2.Deltas[i].Noise)
		}
	}
}

func TestJudgeLimitAndErrors(t *testing.T) {
	t.Parallel()
	// 1.5× slower: a regression against 10%, not against 80%.
	secs, c, b := noisyRun(3, 1.5)
	if v := Judge(secs, c, b, compare.Limits{"p99": 0.8}); v.Regressed() {
		t.Errorf("1.5× against p99=80%%: regressed: %v", v.Err())
	}
	if v := Judge(secs, c, b, compare.Limits{"p99": 0.1}); !v.Regressed() {
		t.Errorf("1.5× against p99=10%%: not regressed: %+v", v.Deltas)
	}
	// The candidate fails 20% of its requests: beyond +1 point.
	secs, c, b = noisyRun(4, 1)
	for i := range secs {
		secs[i].Candidate.Errors = 20
	}
	v := Judge(secs, c, b, nil)
	if er := v.Deltas[len(v.Deltas)-1]; er.Metric != "error_rate" || !er.Regressed {
		t.Errorf("20%% errors against 0.5%%: %+v, want error_rate regressed", er)
	}
}

func TestJudgeTooShort(t *testing.T) {
	t.Parallel()
	secs, c, b := noisyRun(1, 1)
	secs = secs[:MinSeconds-1]
	secs = append(secs, Second{Candidate: Point{Requests: 5}}) // the baseline answered nothing
	v := Judge(secs, c, b, nil)
	if !v.TooShort || v.Err() == nil {
		t.Errorf("%d paired seconds: TooShort %v, Err %v; want a failure", v.Seconds, v.TooShort, v.Err())
	}
}

// TestJudgeFailingBaseline: a baseline target that answers nothing
// successfully (the candidate then looks better on every metric) is not
// a comparison: the run fails as too short to judge.
func TestJudgeFailingBaseline(t *testing.T) {
	t.Parallel()
	secs, c, b := noisyRun(2, 1)
	for i := range secs {
		secs[i].Baseline.Errors = secs[i].Baseline.Requests
	}
	if v := Judge(secs, c, b, nil); !v.TooShort || v.Err() == nil {
		t.Errorf("a baseline failing every request: TooShort %v, Err %v; want a failure", v.TooShort, v.Err())
	}
}
