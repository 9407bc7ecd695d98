package build

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/httpload"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// mixed is the requester of a mixed-protocol run (spec.Config.Mixed): it
// picks each request's endpoint by weight among the endpoints of every
// protocol, as the HTTP driver does among its own, and has the driver of
// that endpoint's protocol send it. Its HTTP endpoints share one HTTP
// driver (so their connections and extracted variables are shared as in
// an HTTP run); every other endpoint has a driver of its own. All drivers
// share the run's feeder, auth and variables, through Sample.User. It is
// safe for concurrent use.
type mixed struct {
	routes []route
	cum    []int // cumulative weights
	total  int
	// meters are the protocols' drivers with their own measurements, by
	// protocol, and the endpoint names of each protocol.
	protocols []spec.Protocol
	meters    map[spec.Protocol][]load.ProtocolMeter
	names     map[spec.Protocol][]string
}

// route is how one endpoint of a mixed run is sent: by its own driver r,
// or as endpoint local of the run's HTTP driver.
type route struct {
	r     load.Requester
	http  *httpload.Driver
	local int
}

var _ load.Requester = (*mixed)(nil)

// Do sends one request.
func (m *mixed) Do(ctx context.Context) error {
	var s load.Sample
	return m.DoSample(ctx, &s)
}

// DoSample sends one request to an endpoint chosen by weight (a retry
// repeats its endpoint) and reports it in s, Endpoint being the index
// into the run's endpoints.
func (m *mixed) DoSample(ctx context.Context, s *load.Sample) error {
	i := 0
	if s.Attempts > 1 && s.Endpoint >= 0 && s.Endpoint < len(m.routes) {
		i = s.Endpoint
	} else {
		n := rand.IntN(m.total)
		for m.cum[i] <= n {
			i++
		}
	}
	rt := &m.routes[i]
	var err error
	if rt.http != nil {
		err = rt.http.DoEndpoint(ctx, s, rt.local)
	} else {
		err = rt.r.DoSample(ctx, s)
	}
	s.Endpoint = i
	return err
}

// protocolStats returns the run's per-protocol measurements, one entry
// per protocol in the order of its first endpoint (see
// load.Result.Protocols).
func (m *mixed) protocolStats() []*load.ProtocolStats {
	out := make([]*load.ProtocolStats, 0, len(m.protocols))
	for _, p := range m.protocols {
		ps := &load.ProtocolStats{Protocol: string(p)}
		for _, d := range m.meters[p] {
			ps.Merge(d.ProtocolStats())
		}
		ps.Endpoints = m.names[p]
		out = append(out, ps)
	}
	return out
}

// mixedDriver builds the drivers of a mixed-protocol run, one per
// non-HTTP endpoint and one for all the HTTP endpoints, and the requester
// that picks among them.
func (p *Engine) mixedDriver(cfg *spec.Config, s Settings, conns int) (load.Requester, error) {
	mix := cfg.Mix()
	m := &mixed{routes: make([]route, len(mix)), meters: map[spec.Protocol][]load.ProtocolMeter{}, names: map[spec.Protocol][]string{}}
	var closers []func()
	p.closer = func() {
		for _, c := range closers {
			c()
		}
	}
	names := make([]string, len(mix))
	var httpIdx []int
	var httpMix []spec.Endpoint
	for i, ep := range mix {
		m.total += ep.Weight
		m.cum = append(m.cum, m.total)
		if ep.Protocol == spec.ProtocolHTTP {
			httpIdx, httpMix = append(httpIdx, i), append(httpMix, ep)
			continue
		}
		d, err := p.protocolDriver(cfg, s, ep, i, conns)
		if err != nil {
			return nil, fmt.Errorf("endpoints[%d] (%s): %w", i, ep.Protocol, err)
		}
		closers = append(closers, d.Close)
		m.routes[i].r = d
		m.meters[ep.Protocol] = append(m.meters[ep.Protocol], d)
		names[i] = ep.Name
		if names[i] == "" {
			names[i] = d.Names()[0]
		}
	}
	if len(httpMix) > 0 {
		d, err := p.newHTTPAt(cfg, httpMix, httpIdx, s, conns)
		if err != nil {
			return nil, err
		}
		closers = append(closers, d.Close)
		p.Driver = d
		for j, i := range httpIdx {
			m.routes[i] = route{http: d, local: j}
			names[i] = d.Names()[j]
		}
	}
	for i, ep := range mix {
		if len(m.names[ep.Protocol]) == 0 {
			m.protocols = append(m.protocols, ep.Protocol)
		}
		m.names[ep.Protocol] = append(m.names[ep.Protocol], names[i])
	}
	p.mixed, p.Options.Endpoints = m, names
	return m, nil
}

// protocolMeterDriver is a driver of a protocol other than HTTP.
type protocolMeterDriver interface {
	load.Requester
	load.ProtocolMeter
	Names() []string
	Close()
}

// protocolDriver builds the driver of endpoint i, ep, of a protocol other
// than HTTP.
func (p *Engine) protocolDriver(cfg *spec.Config, s Settings, ep spec.Endpoint, i, conns int) (protocolMeterDriver, error) {
	checks := p.checks.Endpoint(i)
	switch ep.Protocol {
	case spec.ProtocolWebSocket:
		return p.newWebSocket(cfg, s, ep, checks, conns)
	case spec.ProtocolSSE:
		return p.newSSE(cfg, s, ep, checks, conns)
	case spec.ProtocolGRPC:
		return p.newGRPC(cfg, s, ep, checks, conns)
	}
	return nil, fmt.Errorf("protocol %q has no driver (want http, websocket, sse or grpc)", ep.Protocol)
}
