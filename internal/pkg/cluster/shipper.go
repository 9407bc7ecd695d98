package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
)

// shipper is the worker's metric path: [shipper.Second] merges snapshots
// into a local per-second buffer without ever blocking, and one writer
// goroutine XADDs the buffer once per second. When Redis is slow the buffer
// keeps merging; an entry that failed is retried with the same sequence
// number q so the coordinator can drop duplicates by (w, q).
type shipper struct {
	m *member

	mu      sync.Mutex
	pending map[int]*snapshot.Snapshot
	q       int64 // last sequence number assigned; writer-owned but read by lastSeq
	drops   int64 // cumulative dropped arrivals, for the heartbeat
	flushCh chan flushReq

	inflight *shipEntry // writer-owned
}

type shipEntry struct {
	q     int64
	sec   int
	final bool
	body  []byte
}

type flushReq struct {
	ctx  context.Context
	done chan error
}

var _ Sink = (*shipper)(nil)

func newShipper(m *member) *shipper {
	return &shipper{m: m, pending: map[int]*snapshot.Snapshot{}, flushCh: make(chan flushReq)}
}

// Second merges s into the pending buffer. It never blocks on Redis.
func (s *shipper) Second(snap *snapshot.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[snap.Second]
	if p == nil {
		p = snapshot.New(snap.Second)
		s.pending[snap.Second] = p
	}
	p.Merge(snap)
	s.drops += snap.Dropped
}

func (s *shipper) dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drops
}

func (s *shipper) lastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q
}

// run is the single writer. It ships once per heartbeat period until ctx ends.
func (s *shipper) run(ctx context.Context) {
	t := time.NewTicker(s.m.p.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, s.m.p.o.Heartbeat)
			_ = s.send(cctx, false)
			cancel()
		case r := <-s.flushCh:
			r.done <- s.send(r.ctx, true)
		}
	}
}

// flush ships everything pending plus a final marker, through the writer.
func (s *shipper) flush(ctx context.Context) error {
	r := flushReq{ctx: ctx, done: make(chan error, 1)}
	select {
	case s.flushCh <- r:
	case <-ctx.Done():
		return fmt.Errorf("flush metrics: %w", ctx.Err())
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("flush metrics: %w", ctx.Err())
	}
}

func (s *shipper) send(ctx context.Context, final bool) error {
	if s.inflight != nil {
		if err := s.xadd(ctx, s.inflight); err != nil {
			return err
		}
		s.inflight = nil
	}
	s.mu.Lock()
	batch := s.pending
	s.pending = map[int]*snapshot.Snapshot{}
	s.mu.Unlock()
	secs := slices.Sorted(maps.Keys(batch))
	for i, sec := range secs {
		body, err := batch[sec].MarshalBinary()
		if err != nil {
			return fmt.Errorf("encode metrics second %d: %w", sec, err)
		}
		e := &shipEntry{q: s.nextQ(), sec: sec, body: body}
		if err := s.xadd(ctx, e); err != nil {
			s.inflight = e
			s.mu.Lock() // put back what was not sent, merged with anything new
			for _, rest := range secs[i+1:] {
				if p := s.pending[rest]; p != nil {
					batch[rest].Merge(p)
				}
				s.pending[rest] = batch[rest]
			}
			s.mu.Unlock()
			return err
		}
	}
	if final {
		// The marker is an empty snapshot in the versioned wire form, so
		// the coordinator's merger accepts it and sees the final flag.
		body, err := snapshot.New(-1).MarshalBinary()
		if err != nil {
			return fmt.Errorf("encode final metrics marker: %w", err)
		}
		e := &shipEntry{q: s.nextQ(), sec: -1, final: true, body: body}
		if err := s.xadd(ctx, e); err != nil {
			s.inflight = e
			return err
		}
	}
	return nil
}

// unsent reports whether anything recorded has not reached Redis yet. Only
// the writer (or the member once the writer has exited) may call it.
func (s *shipper) unsent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight != nil || len(s.pending) > 0
}

func (s *shipper) nextQ() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q++
	return s.q
}

func (s *shipper) xadd(ctx context.Context, e *shipEntry) error {
	f := 0
	if e.final {
		f = 1
	}
	k := s.m.k
	_, err := s.m.p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: k.metrics(), MaxLen: metricsCapPerW * 64, Approx: true, Values: map[string]any{
			"w": s.m.p.o.ID, "g": s.m.appliedGenForShip(), "q": e.q, "s": e.sec, "f": f, "b": e.body,
		}})
		pipe.ExpireNX(ctx, k.metrics(), time.Duration(s.m.ttl)*time.Second)
		return nil
	})
	if err != nil {
		return fmt.Errorf("ship metrics second %d (q=%d) to %s: %w", e.sec, e.q, k.metrics(), err)
	}
	return nil
}
