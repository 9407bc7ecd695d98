package spec

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

// BaselineMix returns the endpoints of a paired A/B run's baseline side:
// [Config.Mix] with each URL's scheme, user info and host replaced by
// those of BaselineTarget, so that both sides send the same paths,
// queries, methods, headers and bodies. It returns nil without
// baseline_target.
func (c *Config) BaselineMix() []Endpoint {
	if c.BaselineTarget == "" {
		return nil
	}
	base, err := url.Parse(c.BaselineTarget)
	if err != nil {
		return nil // Validate refused it already
	}
	mix := c.Mix()
	for i := range mix {
		u, err := url.Parse(mix[i].URL)
		if err != nil {
			continue
		}
		u.Scheme, u.User, u.Host = base.Scheme, base.User, base.Host
		mix[i].URL = u.String()
	}
	return mix
}

// ParsedBaselineLimits returns baseline_limits parsed, or nil when none
// are given. Errors name the key.
func (c *Config) ParsedBaselineLimits() (compare.Limits, error) {
	if len(c.BaselineLimits) == 0 {
		return nil, nil
	}
	out := compare.Limits{}
	for i, s := range c.BaselineLimits {
		m, v, err := compare.ParseLimit(s)
		if err != nil {
			return nil, c.errAt(fmt.Sprintf("baseline_limits[%d]", i), "%v", err)
		}
		out[m] = v
	}
	return out, nil
}

// baseline checks baseline_target and baseline_limits.
func (v *validator) baseline() {
	c := v.c
	if len(c.BaselineLimits) > 0 {
		if c.BaselineTarget == "" {
			v.fail("baseline_limits", "baseline_limits judge a paired A/B run, but baseline_target is not set: set baseline_target to the baseline's origin, or remove baseline_limits")
		} else if _, err := c.ParsedBaselineLimits(); err != nil {
			v.errs.Add(err)
		}
	}
	if c.BaselineTarget == "" {
		return
	}
	const key = "baseline_target"
	if c.Protocol != "" && c.Protocol != ProtocolHTTP {
		v.fail(key, "a paired A/B run works with protocol http only, not %s: remove baseline_target", c.Protocol)
		return
	}
	if c.Mixed() {
		v.fail(key, "a paired A/B run works with protocol http only, and this config's endpoints mix protocols: remove baseline_target, or the endpoints' protocol keys")
		return
	}
	if ds := c.Distributed; ds != nil && ds.Workers > 1 {
		v.fail(key, "a paired A/B run runs on one host: remove distributed, or remove baseline_target")
	}
	u, err := url.Parse(c.BaselineTarget)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		v.fail(key, "%q is not an absolute http or https URL (want the baseline's origin, e.g. http://base:8080)", c.BaselineTarget)
		return
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		v.fail(key, "%q has a path, query or fragment: give the origin only (e.g. %s://%s); each request keeps its own path", c.BaselineTarget, u.Scheme, u.Host)
	}
}
