package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

const (
	wantStatus  = "a status code or a list of them (want e.g. [200, 201])"
	wantMaxBody = "a whole number of bytes (want e.g. 4194304 for 4 MiB)"
)

// checks decodes a list of response checks (key checks, top-level or per
// endpoint) into *dst.
func (d *decoder) checks(n *yaml.Node, path string, dst *[]check.Spec) {
	var out []check.Spec
	d.list(n, path, "checks ({status}, {body_contains}, {json, exists}, ...)", func(item *yaml.Node, p string) {
		var s check.Spec
		str := func(dst **string, raw bool) func(*yaml.Node, string) {
			return func(n *yaml.Node, p string) {
				var v string
				if raw {
					d.rawStr(n, p, &v)
				} else {
					d.str(n, p, &v)
				}
				*dst = &v
			}
		}
		d.mapping(item, p, []field{
			{name: "status", set: func(n *yaml.Node, p string) { d.statusList(n, p, &s.Status) }},
			{name: "body_contains", set: str(&s.BodyContains, true)},
			{name: "body_not_contains", set: str(&s.BodyNotContains, true)},
			{name: "json", set: str(&s.JSON, false)},
			{name: "exists", set: func(n *yaml.Node, p string) {
				var b bool
				d.boolean(n, p, &b)
				s.Exists = &b
			}},
			{name: "equals", set: str(&s.Equals, true)},
			{name: "header", set: str(&s.Header, false)},
			{name: "matches", set: str(&s.Matches, true)},
		})
		out = append(out, s)
	})
	*dst = out
}

// statusList accepts a status code or a list of them; an empty list is
// kept (not nil) so that validation can refuse it.
func (d *decoder) statusList(n *yaml.Node, path string, dst *[]int) {
	out := []int{}
	if m := strictyaml.Resolve(n); m != nil && m.Kind == yaml.SequenceNode {
		for i, item := range m.Content {
			var v int
			d.intField(item, strictyaml.Index(path, i), wantStatus, &v)
			out = append(out, v)
		}
	} else {
		var v int
		d.intField(n, path, wantStatus, &v)
		out = append(out, v)
	}
	*dst = out
}

// checks compiles every check as Validate does at run time, and refuses
// the kinds the protocol has no part of a response for.
func (v *validator) checks() {
	c := v.c
	if c.ChecksMaxBody < 0 {
		v.fail("checks_max_body", "%d is negative: want %s, or 0 for the default", c.ChecksMaxBody, wantMaxBody)
	}
	// The top-level checks run on every endpoint, so on each protocol
	// the endpoints use.
	protos := []Protocol{c.Protocol}
	if c.Mixed() {
		protos = nil
		if c.HARFile != "" {
			protos = append(protos, ProtocolHTTP) // its requests are HTTP
		}
		for _, ep := range c.Endpoints {
			if p := c.EndpointProtocol(ep); !slices.Contains(protos, p) {
				protos = append(protos, p)
			}
		}
	}
	for _, p := range protos {
		if v.checkList("checks", c.Checks, p) {
			break // one protocol's refusal is enough
		}
	}
	has := len(c.Checks) > 0
	for i, ep := range c.Endpoints {
		v.checkList(fmt.Sprintf("endpoints[%d].checks", i), ep.Checks, c.EndpointProtocol(ep))
		has = has || len(ep.Checks) > 0
	}
	v.checksThresholds(has)
}

// checksThresholds refuses a checks threshold that could only fail for
// want of data: in a config without checks. (A multi-host run's workers
// ship their check counts, so there it is judged on the merged counts.)
func (v *validator) checksThresholds(has bool) {
	if has {
		return
	}
	for _, line := range v.c.Thresholds {
		t, err := threshold.Parse(line)
		if err != nil || t.Metric != threshold.MetricChecks {
			continue // a bad threshold is reported by thresholds()
		}
		v.fail("thresholds", "threshold %q needs response checks, and the config has none: add checks: (e.g. - status: [200]), or remove the threshold", line)
	}
}

// checkList checks specs, at prefix, as checks of responses of protocol p,
// and reports whether it refused any.
func (v *validator) checkList(prefix string, specs []check.Spec, p Protocol) bool {
	refused := false
	fail := func(key, format string, args ...any) {
		refused = true
		v.fail(key, format, args...)
	}
	where, has := "protocol "+string(p), "has"
	if v.c.Mixed() && !strings.HasPrefix(prefix, "endpoints[") {
		where, has = "the "+string(p)+" endpoints", "have"
	}
	for i, s := range specs {
		key := fmt.Sprintf("%s[%d]", prefix, i)
		ch, err := check.Compile(key, s)
		if err != nil {
			var se *check.SpecError
			if errors.As(err, &se) && se.Key != "" {
				fail(key+"."+se.Key, "%s", se.Msg)
			} else {
				fail(key, "%v", err)
			}
			continue
		}
		refused = v.statusRange(key, s.Status, p) || refused
		kinds, limited := ProtocolCheckKinds(p)
		switch {
		case !limited || containsKind(kinds, ch.Kind()):
		case len(kinds) == 0:
			fail(key+"."+ch.Kind().Key(), "%s %s no response checks: remove checks (they are for protocol http)", where, has)
		default:
			fail(key+"."+ch.Kind().Key(), "%s %s no %s to check: use %s%s", where, has, ch.Kind().Key(), kindKeys(kinds), moveHint(has == "have"))
		}
	}
	return refused
}

// moveHint is what a refused top-level check of a mixed run adds: the
// top-level checks run on every endpoint.
func moveHint(mixed bool) string {
	if !mixed {
		return ""
	}
	return ", or move the check into the checks of the endpoints it is for (top-level checks run on every endpoint)"
}

// statusRange refuses status codes protocol p has not: gRPC's are 0 to
// 16, HTTP's (and SSE's) 100 to 999. It reports whether it refused.
func (v *validator) statusRange(key string, codes []int, p Protocol) bool {
	lo, hi, what := 100, 999, "HTTP status codes are 100 to 999"
	if p == ProtocolGRPC {
		lo, hi, what = 0, 16, "gRPC status codes are 0 (OK) to 16"
	}
	for _, c := range codes {
		if c < lo || c > hi {
			v.fail(key+".status", "%d is not a status code of protocol %s: %s%s", c, p, what, moveHint(v.c.Mixed() && !strings.HasPrefix(key, "endpoints[")))
			return true
		}
	}
	return false
}

// ProtocolCheckKinds returns the kinds of check a non-HTTP protocol
// supports, and false for HTTP, which supports them all.
func ProtocolCheckKinds(p Protocol) ([]check.Kind, bool) {
	switch p {
	case ProtocolWebSocket:
		return check.BodyKinds, true
	case ProtocolSSE:
		return append([]check.Kind{check.KindStatus, check.KindHeader}, check.BodyKinds...), true
	case ProtocolGRPC:
		return append([]check.Kind{check.KindStatus}, check.BodyKinds...), true
	}
	return nil, false
}

func containsKind(ks []check.Kind, k check.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func kindKeys(ks []check.Kind) string {
	keys := make([]string, len(ks))
	for i, k := range ks {
		keys[i] = k.Key()
	}
	return strings.Join(keys, ", ")
}

// CheckSuite compiles the config's checks for the run: the top-level
// ones and each endpoint's. It returns nil without checks. The config
// must have passed Validate.
func (c *Config) CheckSuite() (*check.Suite, error) {
	eps := make([]check.EndpointSpecs, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		eps[i] = check.EndpointSpecs{Prefix: fmt.Sprintf("endpoints[%d].checks", i), Specs: ep.Checks}
	}
	return check.New(c.Checks, eps, c.ChecksMaxBody)
}
