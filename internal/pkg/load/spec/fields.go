package spec

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// The "want" texts name what a key expects, with an example.
const (
	wantRate        = "a number of requests per second (want e.g. 500)"
	wantConcurrency = "a whole number of workers (want e.g. 50)"
	wantTotal       = "a whole number of requests (want e.g. 10000)"
	wantRetries     = "a whole number of retries (want e.g. 3)"
	wantSeed        = "a whole number (want e.g. 42)"
	wantVUs         = "a whole number of virtual users (want e.g. 50)"
	wantWeight      = "a whole number weight (want e.g. 60)"
	wantWorkers     = "a whole number of forgeload daemons (want e.g. 4)"
	wantCount       = "a whole number (want e.g. 100)"
)

// topFields lists every top-level key, in the order the docs present them.
func (d *decoder) topFields() []field {
	c := d.c
	return []field{
		{name: "target", set: func(n *yaml.Node, p string) { d.str(n, p, &c.Target) }},
		{name: "method", set: func(n *yaml.Node, p string) { d.str(n, p, &c.Method); c.Method = strings.ToUpper(c.Method) }},
		{name: "headers", structured: true, set: func(n *yaml.Node, p string) { d.stringMap(n, p, true, &c.Headers) }},
		{name: "body", set: func(n *yaml.Node, p string) { d.rawStr(n, p, &c.Body) }},
		{name: "body_file", set: func(n *yaml.Node, p string) { d.str(n, p, &c.BodyFile) }},
		{name: "concurrency", set: func(n *yaml.Node, p string) { d.intField(n, p, wantConcurrency, &c.Concurrency) }},
		{name: "max_concurrency", set: func(n *yaml.Node, p string) { d.intField(n, p, wantConcurrency, &c.MaxConcurrency) }},
		{name: "rate", set: func(n *yaml.Node, p string) { d.float(n, p, wantRate, &c.Rate) }},
		{name: "duration", set: func(n *yaml.Node, p string) { d.duration(n, p, &c.Duration) }},
		{name: "total", set: func(n *yaml.Node, p string) { d.integer(n, p, wantTotal, &c.Total) }},
		{name: "timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &c.Timeout) }},
		{name: "retries", set: func(n *yaml.Node, p string) { d.intField(n, p, wantRetries, &c.Retries) }},
		{name: "graceful_shutdown", set: func(n *yaml.Node, p string) { d.duration(n, p, &c.GracefulShutdown) }},
		{name: "arrival", structured: true, set: d.arrival},
		{name: "arrival_model", set: func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			c.Arrival.Model = ArrivalModel(strings.ToLower(s))
		}},
		{name: "seed", set: func(n *yaml.Node, p string) { d.integer(n, p, wantSeed, &c.Seed) }},
		{name: "load_patterns", structured: true, set: d.patterns},
		{name: "endpoints", structured: true, set: d.endpoints},
		{name: "vus", structured: true, set: d.vus},
		{name: "think_time", structured: true, set: d.thinkTime},
		{name: "protocol", set: func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			c.Protocol = Protocol(strings.ToLower(s))
		}},
		{name: "auth", structured: true, set: d.auth},
		{name: "feeder", structured: true, set: d.feeder},
		{name: "grpc", structured: true, set: func(n *yaml.Node, p string) { d.grpc(n, p, &c.GRPC) }},
		{name: "websocket", structured: true, set: func(n *yaml.Node, p string) { d.websocket(n, p, &c.WebSocket) }},
		{name: "sse", structured: true, set: func(n *yaml.Node, p string) { d.sse(n, p, &c.SSE) }},
		{name: "thresholds", set: d.thresholds},
		{name: "checks", structured: true, set: func(n *yaml.Node, p string) { d.checks(n, p, &c.Checks) }},
		{name: "checks_max_body", set: func(n *yaml.Node, p string) { d.integer(n, p, wantMaxBody, &c.ChecksMaxBody) }},
		{name: "validity", set: func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			c.Validity = Validity(strings.ToLower(s))
		}},
		{name: "distributed", structured: true, set: d.distributed},
		{name: "json_output", set: func(n *yaml.Node, p string) { d.boolean(n, p, &c.JSONOutput) }},
		{name: "dashboard", set: func(n *yaml.Node, p string) { d.boolean(n, p, &c.Dashboard) }},
		{name: "log_errors", set: func(n *yaml.Node, p string) { d.boolean(n, p, &c.LogErrors) }},
		{name: "html_output", set: func(n *yaml.Node, p string) { d.str(n, p, &c.HTMLOutput) }},
		{name: "har_file", set: func(n *yaml.Node, p string) { d.str(n, p, &c.HARFile) }},
		{name: "har_filter", set: func(n *yaml.Node, p string) { d.str(n, p, &c.HARFilter) }},
		// Crankfire's OpenTelemetry export: accepted as any value so its
		// files parse, then refused by Validate as not supported yet.
		{name: "tracing", structured: true, set: d.tracing},
		{name: "baseline_target", set: func(n *yaml.Node, p string) { d.str(n, p, &c.BaselineTarget) }},
		{name: "baseline_limits", structured: true, set: func(n *yaml.Node, p string) { d.stringList(n, p, &c.BaselineLimits) }},
	}
}

// arrival accepts Crankfire's `arrival: {model: poisson}` and `arrival:
// poisson`.
func (d *decoder) arrival(n *yaml.Node, path string) {
	if m := strictyaml.Resolve(n); m != nil && m.Kind == yaml.ScalarNode {
		var s string
		d.str(m, path, &s)
		d.c.Arrival.Model = ArrivalModel(strings.ToLower(s))
		return
	}
	d.mapping(n, path, []field{
		{name: "model", set: func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			d.c.Arrival.Model = ArrivalModel(strings.ToLower(s))
		}},
	})
}

func (d *decoder) patterns(n *yaml.Node, path string) {
	var out []Pattern
	d.list(n, path, "patterns ({name, type, ...})", func(item *yaml.Node, p string) {
		var pt Pattern
		d.mapping(item, p, []field{
			{name: "name", set: func(n *yaml.Node, p string) { d.str(n, p, &pt.Name) }},
			{name: "type", set: func(n *yaml.Node, p string) {
				var s string
				d.str(n, p, &s)
				pt.Type = PatternType(strings.ToLower(s))
			}},
			{name: "from_rps", set: func(n *yaml.Node, p string) { d.float(n, p, wantRate, &pt.FromRPS) }},
			{name: "to_rps", set: func(n *yaml.Node, p string) { d.float(n, p, wantRate, &pt.ToRPS) }},
			{name: "rps", set: func(n *yaml.Node, p string) { d.float(n, p, wantRate, &pt.RPS) }},
			{name: "duration", set: func(n *yaml.Node, p string) { d.duration(n, p, &pt.Duration) }},
			{name: "steps", set: func(n *yaml.Node, p string) {
				d.list(n, p, "steps ({rps, duration})", func(item *yaml.Node, p string) {
					var st Step
					d.mapping(item, p, []field{
						{name: "rps", set: func(n *yaml.Node, p string) { d.float(n, p, wantRate, &st.RPS) }},
						{name: "duration", set: func(n *yaml.Node, p string) { d.duration(n, p, &st.Duration) }},
					})
					pt.Steps = append(pt.Steps, st)
				})
			}},
		})
		out = append(out, pt)
	})
	d.c.Patterns = out
}

func (d *decoder) endpoints(n *yaml.Node, path string) {
	var out []Endpoint
	d.list(n, path, "endpoints ({name, weight, path, ...})", func(item *yaml.Node, p string) {
		ep := Endpoint{Weight: 1}
		d.mapping(item, p, []field{
			{name: "name", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.Name) }},
			{name: "weight", set: func(n *yaml.Node, p string) { d.intField(n, p, wantWeight, &ep.Weight) }},
			{name: "method", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.Method); ep.Method = strings.ToUpper(ep.Method) }},
			{name: "url", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.URL) }},
			{name: "target", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.URL) }},
			{name: "path", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.Path) }},
			{name: "protocol", set: func(n *yaml.Node, p string) {
				var s string
				d.str(n, p, &s)
				ep.Protocol = Protocol(strings.ToLower(s))
			}},
			{name: "headers", set: func(n *yaml.Node, p string) { d.stringMap(n, p, true, &ep.Headers) }},
			{name: "body", set: func(n *yaml.Node, p string) { d.rawStr(n, p, &ep.Body) }},
			{name: "body_file", set: func(n *yaml.Node, p string) { d.str(n, p, &ep.BodyFile) }},
			{name: "extractors", set: func(n *yaml.Node, p string) {
				d.list(n, p, "extractors ({jsonpath, regex, var, on_error})", func(item *yaml.Node, p string) {
					var ex Extractor
					d.mapping(item, p, []field{
						{name: "jsonpath", set: func(n *yaml.Node, p string) { d.str(n, p, &ex.JSONPath) }},
						{name: "regex", set: func(n *yaml.Node, p string) { d.str(n, p, &ex.Regex) }},
						{name: "var", set: func(n *yaml.Node, p string) { d.str(n, p, &ex.Var) }},
						{name: "on_error", set: func(n *yaml.Node, p string) { d.boolean(n, p, &ex.OnError) }},
					})
					ep.Extractors = append(ep.Extractors, ex)
				})
			}},
			{name: "checks", set: func(n *yaml.Node, p string) { d.checks(n, p, &ep.Checks) }},
			{name: "websocket", set: func(n *yaml.Node, p string) { d.websocket(n, p, &ep.WebSocket) }},
			{name: "sse", set: func(n *yaml.Node, p string) { d.sse(n, p, &ep.SSE) }},
			{name: "grpc", set: func(n *yaml.Node, p string) { d.grpc(n, p, &ep.GRPC) }},
		})
		if t, ok := d.c.origin[p+".target"]; ok {
			if _, both := d.c.origin[p+".url"]; both {
				d.fail(item, p, "url and target are both set; they are one key (Crankfire accepts both spellings), keep url")
			} else {
				d.c.origin[p+".url"] = t
			}
		}
		out = append(out, ep)
	})
	d.c.Endpoints = out
}

// vus accepts a number, or {start, stages: [{duration, target}]}.
func (d *decoder) vus(n *yaml.Node, path string) {
	v := VUs{}
	if m := strictyaml.Resolve(n); m != nil && m.Kind == yaml.ScalarNode {
		d.intField(m, path, wantVUs+", or {start, stages}", &v.Count)
		d.c.VUs = v
		return
	}
	d.mapping(n, path, []field{
		{name: "start", set: func(n *yaml.Node, p string) { d.intField(n, p, wantVUs, &v.Start) }},
		{name: "stages", set: func(n *yaml.Node, p string) {
			d.list(n, p, "stages ({duration, target})", func(item *yaml.Node, p string) {
				var st VUStage
				d.mapping(item, p, []field{
					{name: "name", set: func(n *yaml.Node, p string) { d.str(n, p, &st.Name) }},
					{name: "duration", set: func(n *yaml.Node, p string) { d.duration(n, p, &st.Duration) }},
					{name: "target", set: func(n *yaml.Node, p string) { d.intField(n, p, wantVUs, &st.Target) }},
				})
				v.Stages = append(v.Stages, st)
			})
		}},
	})
	v.Count = v.Start
	for _, st := range v.Stages {
		v.Count = max(v.Count, st.Target)
	}
	d.c.VUs = v
}

// thinkTime accepts a duration, or {min, max} for a uniform random pause.
func (d *decoder) thinkTime(n *yaml.Node, path string) {
	var t ThinkTime
	if m := strictyaml.Resolve(n); m == nil || m.Kind == yaml.ScalarNode {
		d.duration(m, path, &t.Min)
		t.Max = t.Min
		d.c.ThinkTime = t
		return
	}
	hasMax := false
	d.mapping(n, path, []field{
		{name: "min", set: func(n *yaml.Node, p string) { d.duration(n, p, &t.Min) }},
		{name: "max", set: func(n *yaml.Node, p string) { hasMax = true; d.duration(n, p, &t.Max) }},
	})
	if !hasMax {
		t.Max = t.Min
	}
	d.c.ThinkTime = t
}

func (d *decoder) auth(n *yaml.Node, path string) {
	if d.c.Auth == nil {
		d.c.Auth = &Auth{}
	}
	a := d.c.Auth
	d.mapping(n, path, []field{
		{name: "type", set: func(n *yaml.Node, p string) { d.str(n, p, &a.Type); a.Type = strings.ToLower(a.Type) }},
		{name: "token_url", set: func(n *yaml.Node, p string) { d.str(n, p, &a.TokenURL) }},
		{name: "client_id", set: func(n *yaml.Node, p string) { d.str(n, p, &a.ClientID) }},
		{name: "client_secret", set: func(n *yaml.Node, p string) { d.secretStr(n, p, &a.ClientSecret) }},
		{name: "username", set: func(n *yaml.Node, p string) { d.str(n, p, &a.Username) }},
		{name: "password", set: func(n *yaml.Node, p string) { d.secretStr(n, p, &a.Password) }},
		{name: "scopes", set: func(n *yaml.Node, p string) { d.stringList(n, p, &a.Scopes) }},
		{name: "static_token", set: func(n *yaml.Node, p string) { d.secretStr(n, p, &a.StaticToken) }},
		{name: "refresh_before_expiry", set: func(n *yaml.Node, p string) { d.duration(n, p, &a.RefreshBeforeExpiry) }},
	})
}

func (d *decoder) tracing(n *yaml.Node, path string) {
	if d.c.Tracing == nil {
		d.c.Tracing = &Tracing{SampleRate: 1} // Crankfire's documented default
	}
	t := d.c.Tracing
	d.mapping(n, path, []field{
		{name: "endpoint", set: func(n *yaml.Node, p string) { d.str(n, p, &t.Endpoint) }},
		{name: "protocol", set: func(n *yaml.Node, p string) { d.str(n, p, &t.Protocol) }},
		{name: "service_name", set: func(n *yaml.Node, p string) { d.str(n, p, &t.ServiceName) }},
		{name: "sample_rate", set: func(n *yaml.Node, p string) { d.float(n, p, "a fraction from 0 to 1 (want e.g. 0.1)", &t.SampleRate) }},
		{name: "insecure", set: func(n *yaml.Node, p string) { d.boolean(n, p, &t.Insecure) }},
		{name: "propagate", set: func(n *yaml.Node, p string) {
			var b bool
			d.boolean(n, p, &b)
			t.Propagate = &b
		}},
	})
}

func (d *decoder) feeder(n *yaml.Node, path string) {
	if d.c.Feeder == nil {
		// Rows start over by default, as Crankfire's binary does.
		d.c.Feeder = &Feeder{Recycle: true}
	}
	f := d.c.Feeder
	d.mapping(n, path, []field{
		{name: "path", set: func(n *yaml.Node, p string) { d.str(n, p, &f.Path) }},
		{name: "type", set: func(n *yaml.Node, p string) { d.str(n, p, &f.Type); f.Type = strings.ToLower(f.Type) }},
		{name: "recycle", set: func(n *yaml.Node, p string) { d.boolean(n, p, &f.Recycle) }},
	})
}

// grpc decodes a grpc block into *dst (the config's or an endpoint's).
func (d *decoder) grpc(n *yaml.Node, path string, dst **GRPC) {
	if *dst == nil {
		*dst = &GRPC{}
	}
	g := *dst
	d.mapping(n, path, []field{
		{name: "proto_file", set: func(n *yaml.Node, p string) { d.str(n, p, &g.ProtoFile) }},
		{name: "service", set: func(n *yaml.Node, p string) { d.str(n, p, &g.Service) }},
		{name: "method", set: func(n *yaml.Node, p string) { d.str(n, p, &g.Method) }},
		{name: "message", set: func(n *yaml.Node, p string) { d.rawStr(n, p, &g.Message) }},
		{name: "metadata", set: func(n *yaml.Node, p string) { d.stringMap(n, p, false, &g.Metadata) }},
		{name: "timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &g.Timeout) }},
		{name: "tls", set: func(n *yaml.Node, p string) { d.boolean(n, p, &g.TLS) }},
		{name: "insecure", set: func(n *yaml.Node, p string) { d.boolean(n, p, &g.Insecure) }},
	})
}

// websocket decodes a websocket block into *dst (the config's or an
// endpoint's).
func (d *decoder) websocket(n *yaml.Node, path string, dst **WebSocket) {
	if *dst == nil {
		*dst = &WebSocket{}
	}
	w := *dst
	d.mapping(n, path, []field{
		{name: "messages", set: func(n *yaml.Node, p string) { d.stringList(n, p, &w.Messages) }},
		{name: "message_interval", set: func(n *yaml.Node, p string) { d.duration(n, p, &w.MessageInterval) }},
		{name: "receive_timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &w.ReceiveTimeout) }},
		{name: "handshake_timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &w.HandshakeTimeout) }},
		{name: "expect_replies", set: func(n *yaml.Node, p string) { d.boolean(n, p, &w.ExpectReplies) }},
	})
}

// sse decodes an sse block into *dst (the config's or an endpoint's).
func (d *decoder) sse(n *yaml.Node, path string, dst **SSE) {
	if *dst == nil {
		*dst = &SSE{}
	}
	s := *dst
	d.mapping(n, path, []field{
		{name: "read_timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &s.ReadTimeout) }},
		{name: "max_events", set: func(n *yaml.Node, p string) { d.intField(n, p, wantCount, &s.MaxEvents) }},
	})
}

// thresholds accepts a list of strings or one multi-line string, which is
// split into lines (blank lines and comments, see threshold.StripComment,
// dropped). A list item may also be a mapping {expr, abort_on_fail,
// delay} (see thresholdItem).
func (d *decoder) thresholds(n *yaml.Node, path string) {
	var out []string
	add := func(block string) {
		for line := range strings.SplitSeq(block, "\n") {
			if t := strings.TrimSpace(threshold.StripComment(line)); t != "" {
				out = append(out, t)
			}
		}
	}
	d.c.ThresholdAborts = nil
	if m := strictyaml.Resolve(n); m != nil && m.Kind == yaml.SequenceNode {
		for i, item := range m.Content {
			p := strictyaml.Index(path, i)
			if r := strictyaml.Resolve(item); r != nil && r.Kind == yaml.MappingNode {
				d.thresholdItem(item, p, &out)
				continue
			}
			if s, ok := d.scalar(item, p, "a threshold or a mapping {expr, abort_on_fail, delay}"); ok {
				add(s)
			}
		}
		d.c.Thresholds = out
		return
	}
	var raw []string
	d.stringList(n, path, &raw)
	for _, block := range raw {
		add(block)
	}
	d.c.Thresholds = out
}

// thresholdItem decodes a thresholds item written as a mapping: expr is
// the threshold, abort_on_fail stops the run when it fails, delay holds
// that judgement until this much of the run has passed.
func (d *decoder) thresholdItem(n *yaml.Node, path string, out *[]string) {
	d.mark(n, path)
	var (
		expr     string
		abort    bool
		delay    time.Duration
		delaySet bool
	)
	d.mapping(n, path, []field{
		{name: "expr", set: func(n *yaml.Node, p string) { d.str(n, p, &expr) }},
		{name: "abort_on_fail", set: func(n *yaml.Node, p string) { d.boolean(n, p, &abort) }},
		{name: "delay", set: func(n *yaml.Node, p string) { delaySet = true; d.duration(n, p, &delay) }},
	})
	expr = strings.TrimSpace(threshold.StripComment(expr))
	switch {
	case expr == "":
		d.fail(n, path+".expr", "a threshold written as a mapping needs expr, the threshold: e.g. expr: http_req_failed:rate < 1%%")
		return
	case strings.Contains(expr, "\n"):
		d.fail(n, path+".expr", "expr holds one threshold, on one line: write each threshold as an item of its own")
		return
	case delaySet && !abort:
		d.fail(n, path+".delay", "delay applies only to a threshold with abort_on_fail: true: add abort_on_fail: true, or remove delay")
		return
	}
	if abort {
		d.c.ThresholdAborts = append(d.c.ThresholdAborts, ThresholdAbort{Index: len(*out), Delay: delay})
	}
	*out = append(*out, expr)
}

func (d *decoder) distributed(n *yaml.Node, path string) {
	if d.c.Distributed == nil {
		d.c.Distributed = &Distributed{}
	}
	ds := d.c.Distributed
	d.mapping(n, path, []field{
		{name: "workers", set: func(n *yaml.Node, p string) { d.intField(n, p, wantWorkers, &ds.Workers) }},
		{name: "min_workers", set: func(n *yaml.Node, p string) { d.intField(n, p, wantWorkers, &ds.MinWorkers) }},
		{name: "join_timeout", set: func(n *yaml.Node, p string) { d.duration(n, p, &ds.JoinTimeout) }},
		{name: "on_worker_loss", set: func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			ds.OnWorkerLoss = WorkerLossPolicy(strings.ToLower(s))
		}},
	})
}
