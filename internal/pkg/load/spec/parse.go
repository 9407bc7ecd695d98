package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse reads a load config in YAML or JSON. name is the config's name in
// errors, usually its path. Parse checks syntax, keys and value types, and
// applies the documented defaults; it does not check the config as a whole:
// call [Config.Validate] after any [Config.Override].
//
// JSON is detected by a leading '{' and its syntax errors are reported with
// line:column. Relative paths (body_file and others) are left as written;
// [Load] resolves them against the config file's directory.
func Parse(name string, data []byte) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &Error{Source: name, Msg: "config is empty: want a YAML or JSON mapping, e.g. target: https://api.example.com"}
	}
	if trimmed[0] == '{' || trimmed[0] == '[' || strings.EqualFold(filepath.Ext(name), ".json") {
		if err := checkJSON(name, data); err != nil {
			// A YAML flow mapping also starts with '{'; only report the
			// JSON error when the text is not valid YAML either.
			var doc yaml.Node
			if strings.EqualFold(filepath.Ext(name), ".json") || yaml.Unmarshal(data, &doc) != nil {
				return nil, err
			}
		}
	}

	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Source: name, Line: extra.Line, Msg: "more than one YAML document (a second '---'): put one load test in each file"}
	}

	root := deref(&doc)
	if isNull(root) {
		return nil, &Error{Source: name, Msg: "config is empty: want a YAML or JSON mapping, e.g. target: https://api.example.com"}
	}
	c := &Config{source: name, origin: map[string]origin{}}
	d := &decoder{c: c, src: name}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the config must be a mapping of keys (target, rate, duration, ...), got %s", kindName(root))
		return nil, d.errs.err()
	}
	d.mapping(root, "", d.topFields())
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

// applyDefaults fills in the documented defaults of keys the config left
// out.
func (c *Config) applyDefaults() {
	if c.Method == "" {
		c.Method = DefaultMethod
	}
	if _, ok := c.origin["timeout"]; !ok {
		c.Timeout = DefaultTimeout
	}
	if c.Arrival.Model == "" {
		c.Arrival.Model = ArrivalUniform
	}
	if c.Protocol == "" {
		c.Protocol = ProtocolHTTP
	}
	if ds := c.Distributed; ds != nil {
		if _, ok := c.origin["distributed.join_timeout"]; !ok {
			ds.JoinTimeout = DefaultJoinTimeout
		}
		if ds.OnWorkerLoss == "" {
			ds.OnWorkerLoss = LossReassign
		}
	}
}

// checkJSON reports a JSON syntax error with line:column.
func checkJSON(name string, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return &Error{Source: name, Line: line, Column: col, Msg: "invalid JSON: " + se.Error()}
	}
	return &Error{Source: name, Msg: "invalid JSON: " + err.Error()}
}

// lineCol turns a byte offset into a 1-based line and column. encoding/json
// reports the offset just after the offending byte.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off > 0 {
		off--
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError rewrites yaml.v3's "yaml: line N: msg" as a positioned Error.
func yamlError(name string, err error) error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Source: name, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{Source: name, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// Load reads and parses the config file at path (see [Parse]), then makes
// body_file, endpoint body_file, feeder.path, grpc.proto_file and har_file
// relative to the config file's directory and checks that body files
// exist.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read load config: %w (check the path; a relative path is from the working directory)", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	c.ResolvePaths(filepath.Dir(path))
	var errs errorList
	check := func(key, file string) {
		if file == "" {
			return
		}
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			e := c.errAt(key, "%q is not a readable file (relative paths are from the config file's directory)", file)
			errs.add(e)
		}
	}
	check("body_file", c.BodyFile)
	for i, ep := range c.Endpoints {
		check(fmt.Sprintf("endpoints[%d].body_file", i), ep.BodyFile)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// ResolvePaths makes the relative file paths of c (body_file, endpoint
// body_file, feeder.path, grpc.proto_file, har_file) relative to dir.
// [Load] calls it with the config file's directory.
func (c *Config) ResolvePaths(dir string) {
	res := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	res(&c.BodyFile)
	res(&c.HARFile)
	for i := range c.Endpoints {
		res(&c.Endpoints[i].BodyFile)
	}
	if c.Feeder != nil {
		res(&c.Feeder.Path)
	}
	if c.GRPC != nil {
		res(&c.GRPC.ProtoFile)
	}
}

// Source returns the name the config was parsed under, usually its path.
func (c *Config) Source() string { return c.source }

// Has reports whether key (a path such as "rate" or "distributed.workers")
// was set by the config or an override, as opposed to left at its default.
func (c *Config) Has(key string) bool {
	_, ok := c.origin[key]
	return ok
}

// errAt builds an Error for key at the place it was set.
func (c *Config) errAt(key, format string, args ...any) *Error {
	e := &Error{Source: c.source, Key: key, Msg: fmt.Sprintf(format, args...)}
	// A key that was left out is reported at its closest parent that was
	// set: load_patterns[0].duration at load_patterns[0].
	for p := key; p != ""; p = parentPath(p) {
		if o, ok := c.origin[p]; ok {
			if o.inline {
				e.Source = "inline"
			} else {
				e.Line = o.line
			}
			break
		}
	}
	return e
}

// parentPath drops the last ".key" or "[i]" of a key path.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}
