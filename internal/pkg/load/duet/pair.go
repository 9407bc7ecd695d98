package duet

import (
	"context"
	"sync/atomic"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// BaselinePrefix prefixes the baseline side's endpoint names.
const BaselinePrefix = "baseline:"

// Pairing is the requester of a paired A/B run; see [Pair].
type Pairing struct {
	cand, base load.Requester
	n          int
	next       atomic.Uint64
}

// Pair returns a requester that sends arrival k (counted from 0 in the
// order the engine starts them) to cand when k is even and to base when k
// is odd. cand and base must be the same requests against two targets,
// with n endpoints each: the baseline's are reported as endpoints n…2n-1
// (see [Names]). A retry (Sample.Attempts > 1) stays on its side.
func Pair(cand, base load.Requester, n int) *Pairing {
	return &Pairing{cand: cand, base: base, n: n}
}

// Names returns the endpoint names of a paired run: the candidate's, then
// the baseline's with [BaselinePrefix].
func Names(cand []string) []string {
	out := append([]string(nil), cand...)
	for _, n := range cand {
		out = append(out, BaselinePrefix+n)
	}
	return out
}

// Do sends one request to the side whose turn it is.
func (p *Pairing) Do(ctx context.Context) error {
	var s load.Sample
	return p.DoSample(ctx, &s)
}

// DoSample sends one request to the side whose turn it is, reporting the
// baseline's under the offset endpoint index.
func (p *Pairing) DoSample(ctx context.Context, s *load.Sample) error {
	baseline := p.next.Add(1)%2 == 0 // the first arrival (1) is the candidate's
	if s.Attempts > 1 {
		baseline = s.Endpoint >= p.n // a retry repeats its request, on its side
		if baseline {
			s.Endpoint -= p.n
		}
	}
	if !baseline {
		return p.cand.DoSample(ctx, s)
	}
	err := p.base.DoSample(ctx, s)
	s.Endpoint += p.n
	return err
}
