package duet

import (
	"context"
	"slices"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// side is a requester that reports which endpoint it was asked for, as
// the drivers do, and counts its calls.
type side struct {
	calls    int
	endpoint int
}

func (s *side) Do(ctx context.Context) error { return s.DoSample(ctx, &load.Sample{}) }
func (s *side) DoSample(_ context.Context, smp *load.Sample) error {
	s.calls++
	if smp.Attempts <= 1 {
		smp.Endpoint = s.endpoint
	}
	return nil
}

func TestPairAlternates(t *testing.T) {
	t.Parallel()
	cand, base := &side{endpoint: 1}, &side{endpoint: 1}
	p := Pair(cand, base, 2)
	var got []int
	for range 6 {
		var s load.Sample
		_ = p.DoSample(context.Background(), &s)
		got = append(got, s.Endpoint)
	}
	if want := []int{1, 3, 1, 3, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("endpoints = %v, want %v (even arrivals to the candidate, odd to the baseline, offset by 2)", got, want)
	}
	// A retry of a baseline request stays on the baseline, whoever's turn it is.
	s := load.Sample{Endpoint: 3, Attempts: 2}
	_ = p.DoSample(context.Background(), &s)
	s2 := load.Sample{Endpoint: 3, Attempts: 2}
	_ = p.DoSample(context.Background(), &s2)
	if s.Endpoint != 3 || s2.Endpoint != 3 || base.calls != 5 || cand.calls != 3 {
		t.Errorf("retries: endpoints %d, %d, calls cand %d base %d; want both on the baseline (3), 3 and 5 calls", s.Endpoint, s2.Endpoint, cand.calls, base.calls)
	}
	if n := Names([]string{"a", "b"}); !slices.Equal(n, []string{"a", "b", "baseline:a", "baseline:b"}) {
		t.Errorf("Names = %v", n)
	}
}
