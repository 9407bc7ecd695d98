package build

import (
	"context"
	"fmt"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/extract"
	"github.com/forgeload/forgeload/internal/pkg/load/grpcload"
	"github.com/forgeload/forgeload/internal/pkg/load/httpload"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/sseload"
	"github.com/forgeload/forgeload/internal/pkg/load/wsload"
)

// driver builds the requester of cfg's protocol (or, for a
// mixed-protocol run, of each endpoint's), sets p.Options.Endpoints, and
// records how to close it and read its protocol measurements.
func (p *Engine) driver(cfg *spec.Config, s Settings, workers int) (load.Requester, error) {
	conns := max(workers, 1)
	suite, err := cfg.CheckSuite()
	if err != nil {
		return nil, err
	}
	p.checks = suite
	if cfg.Mixed() {
		return p.mixedDriver(cfg, s, conns)
	}
	if cfg.Protocol == spec.ProtocolHTTP || cfg.Protocol == "" {
		return p.httpDriver(cfg, s, conns)
	}
	d, err := p.protocolDriver(cfg, s, cfg.Mix()[0], 0, conns)
	if err != nil {
		return nil, err
	}
	p.closer, p.proto, p.Options.Endpoints = d.Close, d, d.Names()
	return d, nil
}

// newWebSocket builds the WebSocket driver of endpoint ep (its URL,
// headers and websocket block, resolved by spec.Config.Mix).
func (p *Engine) newWebSocket(cfg *spec.Config, s Settings, ep spec.Endpoint, checks check.List, conns int) (*wsload.Driver, error) {
	w := ep.WebSocket
	if w == nil {
		w = &spec.WebSocket{}
	}
	return wsload.New(wsload.Options{
		URL: ep.URL, Headers: ep.Headers, Messages: w.Messages, MessageInterval: w.MessageInterval,
		ReceiveTimeout: w.ReceiveTimeout, ExpectReplies: w.ExpectReplies, HandshakeTimeout: w.HandshakeTimeout,
		Timeout: cfg.Timeout, Connections: conns, DialControl: s.DialControl, Resolver: s.Resolver, CheckRedirect: s.CheckRedirect,
		Vars: p.vars, Checks: checks,
	})
}

// newSSE builds the server-sent events driver of endpoint ep.
func (p *Engine) newSSE(cfg *spec.Config, s Settings, ep spec.Endpoint, checks check.List, conns int) (*sseload.Driver, error) {
	e := ep.SSE
	if e == nil {
		e = &spec.SSE{}
	}
	return sseload.New(sseload.Options{
		URL: ep.URL, Headers: ep.Headers, MaxEvents: e.MaxEvents, ReadTimeout: e.ReadTimeout,
		Timeout: cfg.Timeout, Connections: conns, DialControl: s.DialControl, Resolver: s.Resolver, Vars: p.vars,
		Checks: checks,
	})
}

// newGRPC builds the gRPC driver of endpoint ep, loading its method from
// the job's proto file.
func (p *Engine) newGRPC(cfg *spec.Config, s Settings, ep spec.Endpoint, checks check.List, conns int) (*grpcload.Driver, error) {
	g := ep.GRPC
	// Through the config, so a job's proto files stay inside its
	// workspace and bounded.
	read := func(path string) ([]byte, error) { return cfg.ReadFile("grpc.proto_file", path) }
	md, err := grpcload.LoadMethodFrom(context.Background(), g.ProtoFile, read, g.Service, g.Method)
	if err != nil {
		return nil, err
	}
	timeout := g.Timeout
	if timeout == 0 {
		timeout = cfg.Timeout
	}
	return grpcload.New(grpcload.Options{
		Target: ep.URL, Method: md, Message: g.Message, Metadata: g.Metadata, Timeout: timeout,
		TLS: g.TLS, Insecure: g.Insecure, Concurrency: conns, DialControl: s.DialControl, Resolver: s.Resolver, Vars: p.vars,
		Checks: checks,
	})
}

// httpDriver builds the HTTP driver of cfg's endpoint mix and, for a
// paired A/B run (baseline_target), a second one of the same mix against
// the baseline target, paired with the first (package duet).
func (p *Engine) httpDriver(cfg *spec.Config, s Settings, conns int) (load.Requester, error) {
	d, err := p.newHTTP(cfg, cfg.Mix(), s, conns)
	if err != nil {
		return nil, err
	}
	p.Driver, p.closer, p.Options.Endpoints = d, d.Close, d.Names()
	bmix := cfg.BaselineMix()
	if bmix == nil {
		return d, nil
	}
	b, err := p.newHTTP(cfg, bmix, s, conns)
	if err != nil {
		return nil, fmt.Errorf("baseline_target: %w", err)
	}
	p.baseline = b
	p.closer = func() { d.Close(); b.Close() }
	n := len(p.Options.Endpoints)
	p.Options.Endpoints = duet.Names(p.Options.Endpoints)
	p.Duet = duet.NewCollector(n)
	return duet.Pair(d, b, n), nil
}

// newHTTP builds an HTTP driver of mix, reading each body file once.
func (p *Engine) newHTTP(cfg *spec.Config, mix []spec.Endpoint, s Settings, conns int) (*httpload.Driver, error) {
	return p.newHTTPAt(cfg, mix, nil, s, conns)
}

// newHTTPAt builds an HTTP driver of mix, whose endpoint j is the run's
// endpoint at[j] (nil: j itself), reading each body file once.
func (p *Engine) newHTTPAt(cfg *spec.Config, mix []spec.Endpoint, at []int, s Settings, conns int) (*httpload.Driver, error) {
	suite := p.checks
	var eps []httpload.Endpoint
	bodies := map[string][]byte{} // one read per file, however many endpoints share it
	for j, e := range mix {
		i := j
		if at != nil {
			i = at[j]
		}
		body := []byte(e.Body)
		if e.BodyFile != "" {
			b, ok := bodies[e.BodyFile]
			if !ok {
				var err error
				if b, err = cfg.ReadFile("body_file", e.BodyFile); err != nil {
					return nil, fmt.Errorf("endpoint %d: read %w: check the path (relative paths are relative to the config file)", i+1, err)
				}
				bodies[e.BodyFile] = b
			}
			body = b
		}
		var exs []*extract.Extractor
		for j, x := range e.Extractors {
			ex, err := extract.New(x.JSONPath, x.Regex, x.Var, x.OnError)
			if err != nil {
				return nil, fmt.Errorf("endpoints[%d].extractors[%d]: %w", i, j, err)
			}
			exs = append(exs, ex)
		}
		eps = append(eps, httpload.Endpoint{Name: e.Name, URL: e.URL, Method: e.Method, Headers: e.Headers, Body: body, Weight: e.Weight, Extractors: exs,
			Checks: suite.Endpoint(i)})
	}
	return httpload.New(httpload.Options{
		Endpoints:   eps,
		Timeout:     cfg.Timeout,
		Connections: conns,
		DialControl: s.DialControl,
		Resolver:    s.Resolver,
		Vars:        p.vars,

		CheckMaxBody: suite.MaxBody(),
	})
}
