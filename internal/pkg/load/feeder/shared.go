package feeder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// Claimer hands out ranges of a run-wide row index, each index to one
// caller only, across every host of a multi-host run. The cluster
// implements it in Redis.
type Claimer interface {
	// Claim takes up to n indices in [0, limit) (limit 0: no end) and
	// returns them as [from, to), with left the indices not yet claimed
	// after it (meaningless without a limit). from == to means none is
	// left.
	Claim(ctx context.Context, n, limit uint64) (from, to, left uint64, err error)
	// Return hands back indices claimed and never used, for later claims.
	Return(ctx context.Context, from, to uint64) error
}

// returnTimeout bounds giving unsent rows back at Close.
const returnTimeout = 2 * time.Second

// Shared hands out the rows of one feeder to one host of a multi-host
// run: every host claims batches of the run-wide row index from the same
// [Claimer], so no row goes to two hosts. Within a batch, rows go out in
// file order; batches are claimed in file order. It implements vars.Feed.
// Create it with [NewShared], Close it when the run ends.
type Shared struct {
	rows  *Rows
	claim Claimer
	batch uint64
	hosts uint64
	limit uint64 // 0 with recycle

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	cur, end  uint64        // the batch being used
	nfrom, nt uint64        // a prefetched batch, empty when nfrom == nt
	fetching  chan struct{} // closed when the fetch in flight ends; nil when none
	lastErr   error         // the last fetch's error (not exhaustion)
	exhausted bool
	left      uint64 // rows not yet claimed, as the last claim saw it
	capped    bool   // SetNeed was called: need bounds the claims
	need      uint64 // with capped, rows this host may still claim
}

// NewShared shares rows through c. batch is the most rows one claim takes
// (at least 1); hosts is how many hosts share the rows. Near the end no
// host should hold rows another one needs, so once fewer than
// 4·hosts·batch rows are left a claim takes only left/(4·hosts) rows (at
// least one), and only when this host needs a row. ctx bounds the claims.
// With the rows' recycle setting the index runs on and wraps.
func NewShared(ctx context.Context, rows *Rows, c Claimer, batch, hosts int) *Shared {
	batch, hosts = max(batch, 1), max(hosts, 1)
	s := &Shared{rows: rows, claim: c, batch: uint64(batch), hosts: uint64(hosts)}
	if !rows.recycle {
		s.limit = uint64(len(rows.rows))
		s.left = s.limit
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// SetNeed tells s that this host hands out at most n more rows: its
// share of a run bounded by total. Claims then never take more than that,
// so no host holds rows it will never send while another host runs out
// of them. Should this host need more after all, it claims one row at a
// time. Call it before the first Next.
func (s *Shared) SetNeed(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capped, s.need = true, n
}

// Next returns this host's next row, waiting for a claim when its batch
// is used up (ctx bounds the wait). When the run's rows are all claimed
// it returns an error wrapping vars.ErrExhausted.
func (s *Shared) Next(ctx context.Context) (vars.Row, error) {
	s.mu.Lock()
	for s.cur == s.end {
		if s.nfrom != s.nt {
			s.cur, s.end, s.nfrom, s.nt = s.nfrom, s.nt, 0, 0
			break
		}
		if s.exhausted {
			s.mu.Unlock()
			return nil, s.exhaustedErr()
		}
		if s.fetching == nil {
			s.lastErr = nil
			s.fetch()
		}
		wait := s.fetching
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		s.mu.Lock()
		if err := s.lastErr; err != nil && s.cur == s.end && s.nfrom == s.nt {
			s.mu.Unlock()
			return nil, err
		}
	}
	i := s.cur
	s.cur++
	if !s.tail() && !(s.capped && s.need == 0) && s.fetching == nil && s.nfrom == s.nt && !s.exhausted && s.end-s.cur <= s.batch/2 {
		s.fetch() // prefetch while half the batch is left
	}
	s.mu.Unlock()
	n := uint64(len(s.rows.recs))
	return &s.rows.recs[i%n], nil
}

// fetch starts a claim; s.mu is held.
func (s *Shared) fetch() {
	done := make(chan struct{})
	s.fetching = done
	n := s.batch
	if s.tail() {
		n = max(1, s.left/(4*s.hosts))
	}
	if s.capped {
		n = min(n, max(s.need, 1))
	}
	s.wg.Go(func() {
		from, to, left, err := s.claim.Claim(s.ctx, n, s.limit)
		s.mu.Lock()
		defer s.mu.Unlock()
		defer close(done)
		s.fetching = nil
		switch {
		case err != nil:
			s.lastErr = fmt.Errorf("feeder %s: claim rows for this host: %w", s.rows.name, err)
		case from == to:
			s.exhausted = true
		case s.cur == s.end:
			s.cur, s.end = from, to
		default:
			s.nfrom, s.nt = from, to
		}
		if err == nil && s.limit > 0 {
			s.left = left
		}
		if err == nil && s.capped {
			s.need -= min(s.need, to-from)
		}
	})
}

// tail reports whether few rows are left: claims shrink and nothing is
// claimed before it is needed, so no host holds rows it may never use
// while another host runs out. s.mu is held.
func (s *Shared) tail() bool { return s.limit > 0 && s.left < 4*s.hosts*s.batch }

func (s *Shared) exhaustedErr() error {
	return fmt.Errorf("%w: %s has %d rows and the hosts of this run used them all; the run needs one row per request: add rows, lower total or duration, or set feeder.recycle: true",
		vars.ErrExhausted, s.rows.name, len(s.rows.rows))
}

// Close stops claiming, waits for a claim in flight, and gives back the
// rows this host claimed and never handed out, so other hosts (or a later
// owner of this host's share) can use them. It returns the error of that
// hand-back; the rows are then lost to the run, never sent twice.
func (s *Shared) Close() error {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), returnTimeout)
	defer cancel()
	var errs []error
	for _, r := range [][2]uint64{{s.cur, s.end}, {s.nfrom, s.nt}} {
		if r[0] != r[1] {
			errs = append(errs, s.claim.Return(ctx, r[0], r[1]))
		}
	}
	s.cur, s.end, s.nfrom, s.nt = 0, 0, 0, 0
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("feeder %s: give back unused rows: %w", s.rows.name, err)
	}
	return nil
}
