package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// crankfireFlags are Crankfire's command-line flags on `forgeload load`,
// with Crankfire's names and meanings. Each maps to a config key and, like
// the other flags, overrides the file only when given. Values keep their
// text and are checked by the config decoder, so a numeric flag given a
// non-number fails as bad input naming the key.
type crankfireFlags struct {
	config, method, body, bodyFile, timeout, retries, graceful string
	feederPath, feederType, protocol                           string
	wsInterval, wsReceive, wsHandshake                         string
	sseRead, sseMax                                            string
	grpcProto, grpcService, grpcMethod, grpcMessage            string
	grpcTimeout, grpcTLS, grpcInsecure, logErrors              string
	har, harFilter                                             string
	trEndpoint, trProtocol, trService, trRate, trInsecure      string
	headers, wsMessages, grpcMetadata                          []string
}

// scalar is one Crankfire flag whose text is a config key's value.
type scalar struct {
	flag, key, usage string
	val              *string
	boolean          bool
}

func (cf *crankfireFlags) scalars() []scalar {
	return []scalar{
		{"method", "method", "HTTP method (config key method)", &cf.method, false},
		{"body", "body", "request body (config key body)", &cf.body, false},
		{"body-file", "body_file", "file whose content is the request body (config key body_file)", &cf.bodyFile, false},
		{"timeout", "timeout", "per-request timeout, e.g. 30s (config key timeout)", &cf.timeout, false},
		{"retries", "retries", "retries of a failed request (config key retries)", &cf.retries, false},
		{"graceful-shutdown", "graceful_shutdown", "how long requests in flight may finish after the end (config key graceful_shutdown)", &cf.graceful, false},
		{"log-errors", "log_errors", "log failed requests to stderr (config key log_errors)", &cf.logErrors, true},
		{"feeder-path", "feeder.path", "CSV or JSON file of rows for {{placeholders}} (config key feeder.path)", &cf.feederPath, false},
		{"feeder-type", "feeder.type", "csv or json (config key feeder.type)", &cf.feederType, false},
		{"protocol", "protocol", "http, websocket, sse or grpc (config key protocol)", &cf.protocol, false},
		{"ws-message-interval", "websocket.message_interval", "pause between WebSocket messages (config key websocket.message_interval)", &cf.wsInterval, false},
		{"ws-receive-timeout", "websocket.receive_timeout", "WebSocket receive timeout (config key websocket.receive_timeout)", &cf.wsReceive, false},
		{"ws-handshake-timeout", "websocket.handshake_timeout", "WebSocket handshake timeout (config key websocket.handshake_timeout)", &cf.wsHandshake, false},
		{"sse-read-timeout", "sse.read_timeout", "SSE read timeout (config key sse.read_timeout)", &cf.sseRead, false},
		{"sse-max-events", "sse.max_events", "SSE events per session (config key sse.max_events)", &cf.sseMax, false},
		{"grpc-proto-file", "grpc.proto_file", ".proto file of the gRPC service (config key grpc.proto_file)", &cf.grpcProto, false},
		{"grpc-service", "grpc.service", "gRPC service, e.g. helloworld.Greeter (config key grpc.service)", &cf.grpcService, false},
		{"grpc-method", "grpc.method", "gRPC method, e.g. SayHello (config key grpc.method)", &cf.grpcMethod, false},
		{"grpc-message", "grpc.message", "gRPC request as JSON (config key grpc.message)", &cf.grpcMessage, false},
		{"grpc-timeout", "grpc.timeout", "gRPC per-call timeout (config key grpc.timeout)", &cf.grpcTimeout, false},
		{"grpc-tls", "grpc.tls", "use TLS for gRPC (config key grpc.tls)", &cf.grpcTLS, true},
		{"grpc-insecure", "grpc.insecure", "skip gRPC certificate verification (config key grpc.insecure)", &cf.grpcInsecure, true},
		{"har", "har_file", "HAR recording whose requests are replayed (config key har_file)", &cf.har, false},
		{"har-filter", "har_filter", "HAR filter, e.g. 'host:api.example.com;method:GET,POST' (config key har_filter)", &cf.harFilter, false},
		{"tracing-endpoint", "tracing.endpoint", "OTLP receiver spans are exported to, e.g. localhost:4317 (config key tracing.endpoint)", &cf.trEndpoint, false},
		{"tracing-protocol", "tracing.protocol", "OTLP over grpc (default) or http (config key tracing.protocol)", &cf.trProtocol, false},
		{"tracing-service-name", "tracing.service_name", "service.name of the spans (config key tracing.service_name)", &cf.trService, false},
		{"tracing-sample-rate", "tracing.sample_rate", "share of requests traced, 0 to 1 (config key tracing.sample_rate)", &cf.trRate, false},
		{"tracing-insecure", "tracing.insecure", "no TLS to the OTLP receiver (config key tracing.insecure)", &cf.trInsecure, true},
	}
}

// addCrankfireFlags registers Crankfire's flags on fl.
func addCrankfireFlags(fl *pflag.FlagSet) *crankfireFlags {
	cf := &crankfireFlags{}
	fl.StringVar(&cf.config, "config", "", "load config file, as Crankfire's --config (same as -f)")
	for _, s := range cf.scalars() {
		fl.StringVar(s.val, s.flag, "", s.usage)
		if s.boolean {
			fl.Lookup(s.flag).NoOptDefVal = "true"
		}
	}
	fl.StringArrayVar(&cf.headers, "header", nil, "request header as Key=Value or 'Key: Value' (repeatable; config key headers)")
	fl.StringArrayVar(&cf.wsMessages, "ws-messages", nil, "WebSocket message (repeatable; config key websocket.messages)")
	fl.StringArrayVar(&cf.grpcMetadata, "grpc-metadata", nil, "gRPC metadata as key=value (repeatable; config key grpc.metadata)")
	return cf
}

// overrides returns the config keys of the Crankfire flags given.
func (cf *crankfireFlags) overrides(changed func(string) bool) (map[string]any, error) {
	kv := map[string]any{}
	for _, s := range cf.scalars() {
		if changed(s.flag) {
			kv[s.key] = *s.val
		}
	}
	pairs := func(flag string, vals []string, seps string) (map[string]any, error) {
		m := map[string]any{}
		for _, v := range vals {
			i := strings.IndexAny(v, seps)
			if i <= 0 {
				return nil, fmt.Errorf("--%s %q: want key=value", flag, v)
			}
			m[strings.TrimSpace(v[:i])] = strings.TrimSpace(v[i+1:])
		}
		return m, nil
	}
	if len(cf.headers) > 0 {
		h, err := pairs("header", cf.headers, "=:")
		if err != nil {
			return nil, err
		}
		kv["headers"] = h
	}
	if len(cf.grpcMetadata) > 0 {
		md, err := pairs("grpc-metadata", cf.grpcMetadata, "=")
		if err != nil {
			return nil, err
		}
		kv["grpc.metadata"] = md
	}
	if len(cf.wsMessages) > 0 {
		msgs := make([]any, len(cf.wsMessages))
		for i, m := range cf.wsMessages {
			msgs[i] = m
		}
		kv["websocket.messages"] = msgs
	}
	return kv, nil
}
