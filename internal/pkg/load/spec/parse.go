package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
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

	root, more, serr := strictyaml.Parse(data)
	if serr != nil {
		return nil, &Error{Source: name, Line: serr.Line, Msg: serr.Msg}
	}
	if more > 0 {
		return nil, &Error{Source: name, Line: more, Msg: "more than one YAML document (a second '---'): put one load test in each file"}
	}
	root = strictyaml.Resolve(root)
	if strictyaml.IsNull(root) {
		return nil, &Error{Source: name, Msg: "config is empty: want a YAML or JSON mapping, e.g. target: https://api.example.com"}
	}
	if err := checkSize(root); err != nil {
		return nil, &Error{Source: name, Msg: err.Error()}
	}
	c := &Config{source: name, origin: map[string]origin{}}
	d := &decoder{c: c, src: name}
	if root.Kind != yaml.MappingNode {
		// The file may be anything (a key file, /etc/shadow): say what it
		// is, never what it says.
		what := map[yaml.Kind]string{yaml.SequenceNode: "a list", yaml.ScalarNode: "plain text"}[root.Kind]
		if what == "" {
			what = "not a mapping"
		}
		return nil, &Error{Source: name, Msg: fmt.Sprintf("not a load config: its top level is %s; a load config is a mapping of keys (target, rate, duration, ...)", what)}
	}
	if err := notLoadConfig(name, root, d.topFields()); err != nil {
		return nil, err
	}
	d.mapping(root, "", d.topFields())
	if err := d.errs.Err(); err != nil {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

// notLoadConfig refuses a mapping of three or more top-level keys none of
// which is a load-config key: such a file is something else (a
// registration file, a compose file), and listing its keys as unknown
// would quote it. A config with one or two mistyped keys still gets the
// unknown-key errors with their suggestions.
func notLoadConfig(name string, root *yaml.Node, fields []field) error {
	n := len(root.Content) / 2
	if n < 3 {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := strictyaml.Resolve(root.Content[i]); k.Kind == yaml.ScalarNode && lookupField(fields, k.Value) != nil {
			return nil
		}
	}
	return &Error{Source: name, Msg: fmt.Sprintf("not a load config: none of its %d top-level keys is a load-config key (target, rate, duration, endpoints, ...); point config: at a load config", n)}
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

// MaxConfigBytes bounds a load config file: a real one is a few KiB, and
// decoding costs tens of times the file's size in memory.
const MaxConfigBytes = 1 << 20

// MaxBodyFileBytes bounds one body_file; MaxBodyBytesTotal bounds all the
// body files of one config together ([Config.ReadFile]).
const (
	MaxBodyFileBytes  = 16 << 20
	MaxBodyBytesTotal = 64 << 20
)

// Load reads and parses the config file at path (see [Parse]), then makes
// body_file, endpoint body_file, feeder.path, grpc.proto_file and har_file
// relative to the config file's directory and checks that body files
// exist. The file must be a regular file of at most [MaxConfigBytes].
func Load(path string) (*Config, error) {
	data, err := jobfile.Read(path, "load config "+path, MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read %w (check the path; a relative path is from the working directory)", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	c.raw = data
	c.ResolvePaths(filepath.Dir(path))
	return c, c.checkBodyFiles()
}

// LoadIn is [Load] confined to root, for configs a job names: path is
// relative to root's directory (or absolute inside it), symlinks are
// followed only inside root, and the files the config names are read
// through root as well (see [Config.ConfineTo]). Errors name the config as
// path.
func LoadIn(root *os.Root, path string) (*Config, error) {
	data, err := jobfile.ReadIn(root, path, "load config "+path, MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	c.raw = data
	rel, _ := jobfile.Rel(root.Name(), path) // ReadIn checked it
	c.ResolvePaths(filepath.Dir(rel))
	c.root = root
	return c, c.checkBodyFiles()
}

// checkBodyFiles checks that the body files exist and are files.
func (c *Config) checkBodyFiles() error {
	var errs strictyaml.List
	check := func(key, file string) {
		if file == "" {
			return
		}
		var st os.FileInfo
		var err error
		if c.root != nil {
			var rel string
			if rel, err = jobfile.Rel(c.root.Name(), file); err != nil {
				errs.Add(c.errAt(key, "%q is outside the workspace; only files inside the workspace can be read", file))
				return
			}
			st, err = c.root.Stat(rel)
		} else {
			st, err = os.Stat(file)
		}
		if err != nil || !st.Mode().IsRegular() {
			where := ""
			if c.root != nil {
				where = " inside the workspace"
			}
			errs.Add(c.errAt(key, "%q is not a readable file%s (relative paths are from the config file's directory)", file, where))
		}
	}
	check("body_file", c.BodyFile)
	for i, ep := range c.Endpoints {
		check(fmt.Sprintf("endpoints[%d].body_file", i), ep.BodyFile)
	}
	return errs.Err()
}

// Open reports whether c selects the open model (a rate or load_patterns),
// as [load.Options.Open] does for the engine's options built from it.
func (c *Config) Open() bool { return c.Rate > 0 || len(c.Patterns) > 0 }

// ConfineTo makes c read the files it names (body files) only inside root,
// as [LoadIn] does; relative paths set inline are relative to root's
// directory. Use it for a config built from inline keys alone.
func (c *Config) ConfineTo(root *os.Root) { c.root = root }

// Raw returns the config file's text as [Load] or [LoadIn] read it, or nil
// for a config that was not loaded from a file.
func (c *Config) Raw() []byte { return c.raw }

// ReadFile reads a file the config names (a body file, a proto file): a
// regular file of at most [MaxBodyFileBytes]; see [Config.ReadFileMax].
func (c *Config) ReadFile(key, path string) ([]byte, error) {
	return c.ReadFileMax(key, path, MaxBodyFileBytes)
}

// ReadFileMax reads a file the config names: a regular file of at most
// limit bytes, inside the root of [Config.ConfineTo] when there is one,
// and no more than [MaxBodyBytesTotal] over all reads of this config. key
// names the setting in errors, e.g. "endpoints[1].body_file".
func (c *Config) ReadFileMax(key, path string, limit int64) ([]byte, error) {
	name := fmt.Sprintf("%s %s", key, path)
	var data []byte
	var err error
	if c.root != nil {
		data, err = jobfile.ReadIn(c.root, path, name, limit)
	} else {
		data, err = jobfile.Read(path, name, limit)
	}
	if err != nil {
		return nil, err
	}
	if c.bodyBytes += int64(len(data)); c.bodyBytes > MaxBodyBytesTotal {
		return nil, fmt.Errorf("%s: the files this config names add up to more than the %s limit; use fewer or smaller files", name, jobfile.Size(MaxBodyBytesTotal))
	}
	return data, nil
}

// ResolvePaths makes the relative file paths of c (body_file, endpoint
// body_file, feeder.path, grpc.proto_file, an endpoint's
// grpc.proto_file, har_file) relative to dir.
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
		if g := c.Endpoints[i].GRPC; g != nil {
			res(&g.ProtoFile)
		}
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
