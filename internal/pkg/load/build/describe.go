package build

import (
	"slices"
	"strconv"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// masked replaces a value that must not be shown.
const masked = "***"

func headerText(h map[string]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v := h[k]
		if redact.Sensitive(k) {
			v = masked
		}
		b.WriteString(k + ": " + v + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Describe returns cfg as key/value rows for reports, with credentials
// masked: URL passwords, credential-like query parameters and header values
// (Authorization, cookies, tokens, keys), and request bodies, which are
// shown by size only. Callers that know more secrets (a job's) mask the
// rows again.
func Describe(cfg *spec.Config) []summary.ConfigRow {
	var rows []summary.ConfigRow
	add := func(k, v string) {
		if v != "" && v != "0" {
			rows = append(rows, summary.ConfigRow{Key: k, Value: v})
		}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	add("protocol", describeProtocol(cfg))
	add("target", redact.URLAs(cfg.Target, masked))
	add("method", cfg.Method)
	add("headers", headerText(cfg.Headers))
	if n := len(cfg.Body); n > 0 {
		add("body", strconv.Itoa(n)+" bytes")
	}
	add("body_file", cfg.BodyFile)
	add("rate", f(cfg.Rate))
	add("concurrency", strconv.Itoa(cfg.Concurrency))
	add("max_concurrency", strconv.Itoa(cfg.MaxConcurrency))
	add("validity", string(cfg.Validity))
	if cfg.Duration > 0 {
		add("duration", cfg.Duration.String())
	}
	add("total", strconv.FormatInt(cfg.Total, 10))
	if cfg.Timeout > 0 {
		add("timeout", cfg.Timeout.String())
	}
	add("retries", strconv.Itoa(cfg.Retries))
	add("arrival.model", string(cfg.Arrival.Model))
	for i, p := range cfg.Patterns {
		v := string(p.Type)
		switch p.Type {
		case spec.PatternRamp:
			v += " " + f(p.FromRPS) + "→" + f(p.ToRPS) + " req/s over " + p.Duration.String()
		case spec.PatternStep:
			for _, st := range p.Steps {
				v += " " + f(st.RPS) + " req/s for " + st.Duration.String() + ";"
			}
			v = strings.TrimSuffix(v, ";")
		default:
			v += " " + f(p.RPS) + " req/s for " + p.Duration.String()
		}
		add("load_patterns["+strconv.Itoa(i)+"]", v)
	}
	add("vus", strconv.Itoa(cfg.VUs.Count))
	for i, e := range cfg.Endpoints {
		how := e.Method
		if p := cfg.EndpointProtocol(e); p != spec.ProtocolHTTP {
			how = string(p) // a mixed-protocol run's other endpoints have no method
		}
		v := strings.TrimSpace(how + " " + redact.URLAs(e.URL+e.Path, masked) + " weight " + strconv.Itoa(e.Weight))
		if h := headerText(e.Headers); h != "" {
			v += "\n" + h
		}
		name := e.Name
		if name == "" {
			name = strconv.Itoa(i)
		}
		add("endpoints["+name+"]", v)
	}
	add("thresholds", describeThresholds(cfg))
	if d := cfg.Distributed; d != nil {
		add("distributed.workers", strconv.Itoa(d.Workers))
	}
	return rows
}

// describeProtocol is cfg's protocol, or for a mixed-protocol run "mixed"
// with the protocols of its endpoints.
func describeProtocol(cfg *spec.Config) string {
	if !cfg.Mixed() {
		return string(cfg.Protocol)
	}
	var ps []string
	for _, p := range cfg.Protocols() {
		ps = append(ps, string(p))
	}
	return "mixed (" + strings.Join(ps, ", ") + ")"
}

// describeThresholds is the thresholds, one a line, each abort_on_fail one
// marked with its delay.
func describeThresholds(cfg *spec.Config) string {
	lines := slices.Clone(cfg.Thresholds)
	for _, a := range cfg.ThresholdAborts {
		if a.Index >= 0 && a.Index < len(lines) {
			lines[a.Index] += "  [abort_on_fail, delay " + a.Delay.String() + "]"
		}
	}
	return strings.Join(lines, "\n")
}
