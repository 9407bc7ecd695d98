package spec

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Mix returns the requests of the run as a weighted endpoint list with
// every field resolved, so the driver needs no knowledge of defaults:
//
//   - without endpoints, one endpoint named "" with weight 1 requests Target;
//   - URL is absolute: an endpoint's path is appended to Target (one '/'
//     between them; the path keeps its query), and an endpoint with neither
//     url nor path requests Target;
//   - Method is the endpoint's, or Config.Method;
//   - Headers are Config.Headers overlaid with the endpoint's (a new map);
//   - Body and BodyFile are the endpoint's when it sets either, else the
//     config's;
//   - the requests of har_file (read by Validate) follow the endpoints,
//     each with weight 1 and the config's headers under its own;
//   - Protocol is the endpoint's, or the config's (http by default), and
//     the endpoint's block of that protocol (WebSocket, SSE or GRPC) is
//     its own or else the config's;
//   - a gRPC endpoint's host:port becomes grpc://host:port (grpcs:// with
//     TLS), so the target policy checks it like any other URL.
//
// Call it after [Config.Validate]; it does not check URLs.
func (c *Config) Mix() []Endpoint {
	if len(c.Endpoints) == 0 && len(c.har) == 0 {
		return []Endpoint{c.withProtocol(Endpoint{
			Weight:   1,
			Method:   c.Method,
			URL:      c.Target,
			Headers:  maps.Clone(c.Headers),
			Body:     c.Body,
			BodyFile: c.BodyFile,
		})}
	}
	out := make([]Endpoint, 0, len(c.Endpoints))
	for _, ep := range c.Endpoints {
		r := ep
		switch {
		case r.URL != "":
		case r.Path != "":
			r.URL = strings.TrimRight(c.Target, "/") + "/" + strings.TrimLeft(r.Path, "/")
		default:
			r.URL = c.Target
		}
		r = c.withProtocol(r)
		if r.Method == "" {
			r.Method = c.Method
		}
		h := maps.Clone(c.Headers)
		if len(ep.Headers) > 0 && h == nil {
			h = make(map[string]string, len(ep.Headers))
		}
		maps.Copy(h, ep.Headers)
		r.Headers = h
		if r.Body == "" && r.BodyFile == "" {
			r.Body, r.BodyFile = c.Body, c.BodyFile
		}
		out = append(out, r)
	}
	for _, ep := range c.har {
		r := ep
		r.Protocol = ProtocolHTTP
		h := maps.Clone(c.Headers)
		if h == nil {
			h = map[string]string{}
		}
		maps.Copy(h, ep.Headers)
		r.Headers = h
		out = append(out, r)
	}
	return out
}

// withProtocol resolves r's protocol, its protocol's block and, for gRPC,
// its URL: a host:port becomes grpc://host:port (grpcs:// with TLS), so
// the target policy can check it like any other.
func (c *Config) withProtocol(r Endpoint) Endpoint {
	r.Protocol = c.EndpointProtocol(r)
	ws, sse, g := r.WebSocket, r.SSE, r.GRPC
	r.WebSocket, r.SSE, r.GRPC = nil, nil, nil
	switch r.Protocol {
	case ProtocolWebSocket:
		r.WebSocket = cmp.Or(ws, c.WebSocket)
	case ProtocolSSE:
		r.SSE = cmp.Or(sse, c.SSE)
	case ProtocolGRPC:
		r.GRPC = cmp.Or(g, c.GRPC)
		if !strings.Contains(r.URL, "://") {
			if r.GRPC != nil && r.GRPC.TLS {
				r.URL = "grpcs://" + r.URL
			} else {
				r.URL = "grpc://" + r.URL
			}
		}
	}
	return r
}

// EndpointProtocol returns the protocol ep is sent with: its own, else the
// config's, else http.
func (c *Config) EndpointProtocol(ep Endpoint) Protocol {
	return cmp.Or(ep.Protocol, c.Protocol, ProtocolHTTP)
}

// Mixed reports whether c is a mixed-protocol run: some endpoint's own
// protocol is not http. Each endpoint of a mixed run is sent by the driver
// of its protocol (see [Config.Mix]); its summary reports the protocols'
// own measurements as a list (one entry per protocol).
func (c *Config) Mixed() bool {
	for _, ep := range c.Endpoints {
		if ep.Protocol != "" && ep.Protocol != ProtocolHTTP {
			return true
		}
	}
	return false
}

// Protocols returns the protocols c's endpoints are sent with, each once,
// in the order of their first endpoint.
func (c *Config) Protocols() []Protocol {
	var out []Protocol
	for _, ep := range c.Mix() {
		if !slices.Contains(out, ep.Protocol) {
			out = append(out, ep.Protocol)
		}
	}
	return out
}

// ParsedThresholds parses c.Thresholds with package threshold. Validate
// has already reported any error, with its file:line.
func (c *Config) ParsedThresholds() ([]threshold.Threshold, error) {
	ths, err := threshold.ParseAll(c.Thresholds)
	if err != nil {
		return nil, err
	}
	for _, a := range c.ThresholdAborts {
		if a.Index >= 0 && a.Index < len(ths) {
			ths[a.Index].AbortOnFail, ths[a.Index].Delay = true, a.Delay
		}
	}
	return ths, nil
}

// PhaseNames returns the distinct names of c's phases, in timeline
// order: the named load_patterns[], then the named vus.stages[].
func (c *Config) PhaseNames() []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, p := range c.Patterns {
		add(p.Name)
	}
	for _, s := range c.VUs.Stages {
		add(s.Name)
	}
	return names
}
