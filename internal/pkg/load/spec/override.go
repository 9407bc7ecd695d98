package spec

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// supersedes lists, for keys that are alternatives to others, the keys a
// key set inline clears when they came from the file. So `rate: 500` given
// inline wins over the file's load_patterns or vus instead of conflicting
// with them, and arrival_model inline wins over the file's arrival block.
var supersedes = map[string][]string{
	"rate":          {"load_patterns", "vus"},
	"load_patterns": {"rate", "vus"},
	"vus":           {"rate", "load_patterns", "concurrency"},
	"concurrency":   {"vus"},
	"arrival":       {"arrival_model"},
	"arrival_model": {"arrival"},
}

// Override applies inline keys, such as a workflow step's `with:` keys or
// CLI flags, on top of c: inline wins. Keys are the config's keys (any
// case, '_' or '-'), and a dotted key sets one key of a block
// ("distributed.workers", "arrival.model"). Values are strings: scalar keys
// take them as written (rate: "500", duration: "1m"); block and list keys
// (headers, load_patterns, endpoints, vus, distributed, ...) take YAML or
// JSON text; thresholds takes one threshold per line.
//
// Maps merge key by key (an inline header adds to the file's headers);
// lists and scalars replace. Setting rate, load_patterns, vus or
// concurrency inline clears the conflicting load-model keys that came from
// the file (see the docs). Keys that are not config keys, such as a step's
// `config:`, must be removed by the caller. Errors name the key as
// "inline: key: ...". On error, c may be partly updated.
func (c *Config) Override(kv map[string]string) error {
	vals := make(map[string]any, len(kv))
	for k, v := range kv {
		vals[k] = v
	}
	return c.override(vals)
}

// OverrideValues is [Config.Override] for values that are already typed,
// such as numbers from a parsed YAML `with:` block: a string is treated as
// by Override, a time.Duration as its String form, and any other value (int,
// float64, bool, []any, map[string]any) is encoded as YAML and decoded like
// the file.
func (c *Config) OverrideValues(kv map[string]any) error {
	return c.override(kv)
}

func (c *Config) override(kv map[string]any) error {
	if c.origin == nil {
		c.origin = map[string]origin{}
	}
	d := &decoder{c: c, src: "inline", inline: true}
	fields := d.topFields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	set := map[string]bool{}
	for _, key := range sortedKeys(kv) {
		top, sub, dotted := strings.Cut(key, ".")
		f := lookupField(fields, top)
		if f == nil {
			e := strictyaml.Unknown(&yaml.Node{Value: top}, "", strictyaml.Keys{Names: names, Fold: normKey})
			d.errs.Add(&Error{Source: "inline", Msg: e.Msg})
			continue
		}
		node, err := valueNode(kv[key], f.structured && !dotted)
		if err != nil {
			d.errs.Add(&Error{Source: "inline", Key: f.name, Msg: err.Error()})
			continue
		}
		if dotted {
			if !f.structured {
				d.errs.Add(&Error{Source: "inline", Key: key, Msg: fmt.Sprintf("%s is not a block, so %q has no sub-keys; set %s itself", f.name, key, f.name)})
				continue
			}
			// {sub: value}, decoded by the block's own decoder, which
			// merges into the existing block.
			node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: sub}, node,
			}}
		} else {
			d.clearOrigin(f.name)
		}
		d.mark(nil, f.name)
		set[f.name] = true
		f.set(node, f.name)
	}
	if err := d.errs.Err(); err != nil {
		return err
	}
	for key := range set {
		for _, other := range supersedes[key] {
			if o, ok := c.origin[other]; ok && !o.inline && !set[other] {
				c.clear(other)
			}
		}
	}
	c.applyDefaults()
	return nil
}

// clear resets a superseded key to "not given". The arrival spellings
// share one field, which the inline key has already set.
func (c *Config) clear(key string) {
	switch key {
	case "rate":
		c.Rate = 0
	case "load_patterns":
		c.Patterns = nil
	case "vus":
		c.VUs = VUs{}
	case "concurrency":
		c.Concurrency = 0
	}
	delete(c.origin, key)
	(&decoder{c: c}).clearOrigin(key)
}

// valueNode turns an inline value into a YAML node. Strings for scalar keys
// stay strings; strings for block keys are parsed as YAML.
func valueNode(v any, structured bool) (*yaml.Node, error) {
	if dur, ok := v.(time.Duration); ok {
		v = dur.String()
	}
	if s, ok := v.(string); ok {
		if !structured {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}, nil
		}
		n, _, err := strictyaml.Parse([]byte(s))
		if err != nil {
			err.Msg = strings.TrimPrefix(err.Msg, "invalid YAML: ")
			return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
		}
		if n == nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, nil
		}
		return n, checkSize(n)
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("cannot use a value of type %T: %v", v, err)
	}
	return &n, nil
}
