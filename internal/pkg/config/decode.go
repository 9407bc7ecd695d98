package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// parser decodes one config source after another into a Config and
// remembers where each key was last set, so that validation errors can point
// at the line or variable that set the bad value.
type parser struct {
	file string
	// src maps a key path ("runner.capacity", "runner.labels[1]") to where
	// it was set: "file:line" or "env FORGELOAD_RUNNER_CAPACITY".
	src  map[string]string
	errs []error
}

// yamlLine matches the "line N: " prefix of yaml.v3 syntax errors.
var yamlLine = regexp.MustCompile(`^line (\d+): `)

var durationType = reflect.TypeFor[time.Duration]()

// keyName is the YAML key of a struct field.
func keyName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

// knownKeys lists the YAML keys of struct type t, sorted.
func knownKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, keyName(t.Field(i)))
	}
	sort.Strings(keys)
	return keys
}

func (p *parser) loc(n *yaml.Node) string {
	return fmt.Sprintf("%s:%d", p.file, n.Line)
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: "+format, append([]any{p.loc(n)}, args...)...))
}

func (p *parser) decodeFile(cfg *Config, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		where := p.file
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			where += ":" + m[1]
			msg = msg[len(m[0]):]
		}
		return fmt.Errorf("%s: %s (fix the YAML syntax; `forgeload config generate` prints a valid example)", where, msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // only comments
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil
	}
	p.decodeStruct(root, reflect.ValueOf(cfg).Elem(), "")
	return errors.Join(p.errs...)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

// rejectAlias reports YAML aliases, which the config does not expand: they
// would hide where a value came from and can blow up exponentially.
func (p *parser) rejectAlias(n *yaml.Node, path string) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		p.errorf(n, "%s: YAML anchors and aliases (&name, *name) are not supported in the config; write the value out", displayPath(path))
		return true
	}
	return false
}

func displayPath(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func (p *parser) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if p.rejectAlias(n, path) || isNull(n) {
		return
	}
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a mapping of keys (%s), got %s", displayPath(path), strings.Join(knownKeys(t), ", "), kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "%s: a key must be a plain name, got %s", displayPath(path), kindName(k))
			continue
		}
		full := join(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			p.errorf(k, "key %q appears twice (lines %d and %d); keep one", full, line, k.Line)
			continue
		}
		seen[k.Value] = k.Line
		idx := -1
		for j := range t.NumField() {
			if keyName(t.Field(j)) == k.Value {
				idx = j
				break
			}
		}
		if idx < 0 {
			where := "at the top level"
			if path != "" {
				where = "in " + path
			}
			hint := ""
			if s := suggest.Closest(k.Value, knownKeys(t), strings.ToLower); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.errorf(k, "key %q is unknown%s; known keys %s: %s", full, hint, where, strings.Join(knownKeys(t), ", "))
			continue
		}
		p.decodeValue(val, v.Field(idx), full)
	}
}

func (p *parser) decodeValue(n *yaml.Node, v reflect.Value, path string) {
	if p.rejectAlias(n, path) {
		return
	}
	if v.Kind() == reflect.Struct {
		p.decodeStruct(n, v, path)
		return
	}
	p.src[path] = p.loc(n)
	switch v.Kind() {
	case reflect.Slice:
		p.decodeList(n, v, path)
	case reflect.Map:
		p.decodeMap(n, v, path)
	default:
		if n.Kind != yaml.ScalarNode {
			p.errorf(n, "%s: want a single value (%s), got %s", path, example(v.Type()), kindName(n))
			return
		}
		if isNull(n) {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if msg := setScalar(v, n.Value); msg != "" {
			p.errorf(n, "%s: %s", path, msg)
		}
	}
}

func (p *parser) decodeList(n *yaml.Node, v reflect.Value, path string) {
	out := []string{}
	if !isNull(n) {
		if n.Kind != yaml.SequenceNode {
			p.errorf(n, "%s: want a list, e.g. [a, b], got %s", path, kindName(n))
			return
		}
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			if p.rejectAlias(item, ip) {
				continue
			}
			if item.Kind != yaml.ScalarNode || isNull(item) {
				p.errorf(item, "%s: want a string, got %s", ip, kindName(item))
				continue
			}
			p.src[ip] = p.loc(item)
			out = append(out, item.Value)
		}
	}
	v.Set(reflect.ValueOf(out))
}

func (p *parser) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	out := map[string]string{}
	if !isNull(n) {
		if n.Kind != yaml.MappingNode {
			p.errorf(n, "%s: want a mapping of NAME: value, got %s", path, kindName(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if p.rejectAlias(k, path) || p.rejectAlias(val, path) {
				continue
			}
			if k.Kind != yaml.ScalarNode || isNull(k) {
				p.errorf(k, "%s: a name must be a plain string, got %s", path, kindName(k))
				continue
			}
			ip := path + "." + k.Value
			if _, dup := out[k.Value]; dup {
				p.errorf(k, "%s: %q appears twice; keep one", path, k.Value)
				continue
			}
			if val.Kind != yaml.ScalarNode {
				p.errorf(val, "%s: want a single value, got %s", ip, kindName(val))
				continue
			}
			p.src[ip] = p.loc(k)
			if isNull(val) {
				out[k.Value] = ""
			} else {
				out[k.Value] = val.Value
			}
		}
	}
	v.Set(reflect.ValueOf(out))
}

// example describes the wanted form of a value of type t.
func example(t reflect.Type) string {
	if t == durationType {
		return "a duration, e.g. 5s"
	}
	switch t.Kind() {
	case reflect.Int:
		return "a whole number, e.g. 2"
	case reflect.Float64:
		return "a number, e.g. 500"
	case reflect.Bool:
		return "true or false"
	default:
		return "a string"
	}
}

// setScalar parses text into v, which is a string, int, float64, bool or
// time.Duration. It returns "" on success, else what is wrong and what is
// wanted (without the key).
func setScalar(v reflect.Value, text string) string {
	if v.Type() == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			if _, nerr := strconv.ParseFloat(text, 64); nerr == nil {
				return fmt.Sprintf("%q has no unit (want a duration such as %ss, %sm or %sh)", text, text, text, text)
			}
			return fmt.Sprintf("%q is not a duration (want Go syntax, e.g. 5s, 1m30s, 3h)", text)
		}
		v.SetInt(int64(d))
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Int:
		i, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(text), "_", ""), 10, 64)
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) || err == nil && (i < math.MinInt32 || i > math.MaxInt32) {
			return fmt.Sprintf("%q is out of range (want at most %d)", text, math.MaxInt32)
		}
		if err != nil {
			return fmt.Sprintf("%q is not a whole number (want e.g. 2)", text)
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(text), "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%q is not a number (want e.g. 500 or 2.5)", text)
		}
		v.SetFloat(f)
	case reflect.Bool:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return fmt.Sprintf("%q is not true or false", text)
		}
	default:
		return fmt.Sprintf("unsupported type %s (this is a bug in forgeload)", v.Type())
	}
	return ""
}

// EnvName returns the environment variable that overrides the key at path,
// e.g. EnvName("runner.fetch_interval") = "FORGELOAD_RUNNER_FETCH_INTERVAL".
func EnvName(path string) string {
	return "FORGELOAD_" + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// applyEnv applies FORGELOAD_<SECTION>_<KEY> overrides. An unset or empty
// variable is ignored. Lists are comma-separated; maps are comma-separated
// NAME=value pairs and replace the file's map.
func (p *parser) applyEnv(cfg *Config, getenv func(string) string) error {
	root := reflect.ValueOf(cfg).Elem()
	for i := range root.NumField() {
		sec := root.Field(i)
		secName := keyName(root.Type().Field(i))
		for j := range sec.NumField() {
			path := secName + "." + keyName(sec.Type().Field(j))
			name := EnvName(path)
			text := getenv(name)
			if text == "" {
				continue
			}
			p.src[path] = "env " + name
			fail := func(msg string) {
				p.errs = append(p.errs, fmt.Errorf("env %s: %s: %s", name, path, msg))
			}
			f := sec.Field(j)
			switch f.Kind() {
			case reflect.Slice:
				list := []string{}
				for item := range strings.SplitSeq(text, ",") {
					if item = strings.TrimSpace(item); item != "" {
						p.src[fmt.Sprintf("%s[%d]", path, len(list))] = "env " + name
						list = append(list, item)
					}
				}
				f.Set(reflect.ValueOf(list))
			case reflect.Map:
				m := map[string]string{}
				n := 0
				for pair := range strings.SplitSeq(text, ",") {
					if strings.TrimSpace(pair) == "" {
						continue
					}
					n++
					k, val, ok := strings.Cut(pair, "=")
					k = strings.TrimSpace(k)
					if !ok || k == "" {
						// The entry itself is not shown: it may be a secret value.
						fail(fmt.Sprintf("entry %d is not NAME=value (want e.g. %s=A=1,B=2)", n, name))
						continue
					}
					m[k] = val
					p.src[path+"."+k] = "env " + name
				}
				f.Set(reflect.ValueOf(m))
			default:
				if msg := setScalar(f, text); msg != "" {
					fail(msg)
				}
			}
		}
	}
	return errors.Join(p.errs...)
}
