package changepoint

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// noisy returns n points of level·(1 + noise·N(0,1)), seeded.
func noisy(rng *rand.Rand, n int, level func(i int) float64, noise float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = level(i) * (1 + noise*rng.NormFloat64())
	}
	return xs
}

func flat(v float64) func(int) float64 { return func(int) float64 { return v } }

// TestStudent checks the t distribution against tabulated quantiles.
func TestStudent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ t, df, p float64 }{
		{2.228, 10, 0.05}, {3.169, 10, 0.01}, {12.706, 1, 0.05}, {1.960, 1e6, 0.05}, {2.576, 1e6, 0.01}, {0, 5, 1},
	} {
		if got := studentTwoSided(tc.t, tc.df); math.Abs(got-tc.p) > 0.001 {
			t.Errorf("P(|T_%v| ≥ %v) = %.5f, want %.3f", tc.df, tc.t, got, tc.p)
		}
	}
}

// TestDetectStep: one step of 20% in 60 runs with 3% noise is found where
// it is, with its size, in every seeded trial.
func TestDetectStep(t *testing.T) {
	t.Parallel()
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(3, uint64(trial)))
		xs := noisy(rng, 60, func(i int) float64 {
			if i < 35 {
				return 100
			}
			return 120
		}, 0.03)
		ps := Detect(xs, Options{})
		if len(ps) != 1 || ps[0].Index < 34 || ps[0].Index > 36 || math.Abs(ps[0].Rel()-0.2) > 0.03 {
			t.Errorf("trial %d: change points %+v, want one at 35 of about +20%%", trial, ps)
		}
	}
}

// TestDetectCreep: a creep of 0.5% a run over 60 runs (+30% in all, each
// step far inside the 2% noise) is found: change points that rise, and
// add up to at least half of the creep.
func TestDetectCreep(t *testing.T) {
	t.Parallel()
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(4, uint64(trial)))
		xs := noisy(rng, 60, func(i int) float64 { return 100 * (1 + 0.005*float64(i)) }, 0.02)
		ps := Detect(xs, Options{})
		if len(ps) == 0 {
			t.Errorf("trial %d: no change point in a creep of +30%%", trial)
			continue
		}
		for _, p := range ps {
			if p.After <= p.Before {
				t.Errorf("trial %d: change point %+v goes down in a rising creep", trial, p)
			}
		}
		if rise := ps[len(ps)-1].After/ps[0].Before - 1; rise < 0.15 {
			t.Errorf("trial %d: change points %+v rise by %.0f%%, want most of the 30%% creep", trial, ps, 100*rise)
		}
	}
}

// TestDetectFlat: a series without a change gives no change point in at
// least 19 of 20 seeded trials.
func TestDetectFlat(t *testing.T) {
	t.Parallel()
	alarms := 0
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(5, uint64(trial)))
		if ps := Detect(noisy(rng, 60, flat(100), 0.05), Options{}); len(ps) > 0 {
			alarms++
			t.Logf("trial %d: %+v", trial, ps)
		}
	}
	if alarms > 1 {
		t.Errorf("%d of 20 flat series had change points, want at most 1", alarms)
	}
}

// TestDetectDeterministic: the same series gives the same points, and
// short or constant series none.
func TestDetectDeterministic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(6, 6))
	xs := noisy(rng, 80, func(i int) float64 { return 100 + 30*float64(i/20) }, 0.04)
	a, b := Detect(xs, Options{}), Detect(slices.Clone(xs), Options{})
	if !slices.Equal(a, b) || len(a) != 3 {
		t.Errorf("Detect twice = %+v and %+v, want the same 3 points", a, b)
	}
	if ps := Detect([]float64{1, 2, 3}, Options{}); len(ps) != 0 {
		t.Errorf("3 points = %+v, want none", ps)
	}
	if ps := Detect(make([]float64, 30), Options{}); len(ps) != 0 {
		t.Errorf("30 zeros = %+v, want none", ps)
	}
}

// TestDetectRates measures the false-alarm and detection rates that
// docs/results.md quotes, over FORGELOAD_TRIALS trials (skipped when unset).
func TestDetectRates(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("FORGELOAD_TRIALS"))
	if n <= 0 {
		t.Skip("set FORGELOAD_TRIALS=N to measure the rates over N trials")
	}
	count := func(seed uint64, runs int, level func(int) float64, noise float64, ok func([]Point) bool) int {
		k := 0
		for trial := range n {
			if ok(Detect(noisy(rand.New(rand.NewPCG(seed, uint64(trial))), runs, level, noise), Options{})) {
				k++
			}
		}
		return k
	}
	found := func(ps []Point) bool { return len(ps) > 0 }
	for _, runs := range []int{20, 60, 200} {
		for _, noise := range []float64{0.02, 0.05} {
			at := runs * 2 / 3
			fa := count(7, runs, flat(100), noise, found)
			step := count(8, runs, func(i int) float64 {
				if i < at {
					return 100
				}
				return 110
			}, noise, func(ps []Point) bool {
				return slices.ContainsFunc(ps, func(p Point) bool { return p.Index >= at-2 && p.Index <= at+2 })
			})
			creep := count(9, runs, func(i int) float64 { return 100 * (1 + 0.3*float64(i)/float64(runs)) }, noise, found)
			t.Logf("%d runs, noise %.0f%%: false alarms %d/%d; +10%% step at run %d found within 2 runs %d/%d; +30%% creep found %d/%d", runs, 100*noise, fa, n, at, step, n, creep, n)
		}
	}
}
