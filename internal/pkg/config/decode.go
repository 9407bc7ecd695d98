package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
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
	return strictyaml.Location(p.file, n.Line, 0)
}

// fail records e, which comes from the strict-YAML layer, as an error of
// this file.
func (p *parser) fail(e *strictyaml.Error) {
	e.File = p.file
	p.errs = append(p.errs, e)
}

func (p *parser) decodeFile(cfg *Config, data []byte) error {
	root, _, serr := strictyaml.Parse(data)
	if serr != nil {
		serr.Msg += " (`forgeload config generate` prints a valid example)"
		p.fail(serr)
		return errors.Join(p.errs...)
	}
	if strictyaml.IsNull(root) {
		return nil // empty, or only comments
	}
	if p.rejectAliases(root, ""); len(p.errs) > 0 {
		return errors.Join(p.errs...)
	}
	p.decodeStruct(root, reflect.ValueOf(cfg).Elem(), "")
	return errors.Join(p.errs...)
}

// rejectAliases reports every YAML anchor and alias under n, which the
// config does not expand: they would hide where a value came from and can
// blow up exponentially.
func (p *parser) rejectAliases(n *yaml.Node, path string) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		p.fail(strictyaml.Errorf(n, path, "YAML anchors and aliases (&name, *name) are not supported in the config; write the value out"))
		return
	}
	for i, c := range n.Content {
		switch {
		case n.Kind == yaml.SequenceNode:
			p.rejectAliases(c, strictyaml.Index(path, i))
		case i%2 == 1 && n.Content[i-1].Kind == yaml.ScalarNode:
			p.rejectAliases(c, strictyaml.Join(path, n.Content[i-1].Value))
		default:
			p.rejectAliases(c, path)
		}
	}
}

func (p *parser) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	strictyaml.Block(n, path, "", strictyaml.Keys{Names: knownKeys(t)}, p.fail, func(kv strictyaml.Pair, kp string) {
		for j := range t.NumField() {
			if keyName(t.Field(j)) == kv.Name {
				p.decodeValue(kv.Value, v.Field(j), kp)
			}
		}
	})
}

func (p *parser) decodeValue(n *yaml.Node, v reflect.Value, path string) {
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
			p.fail(strictyaml.Want(n, path, "a single value ("+example(v.Type())+")"))
			return
		}
		if strictyaml.IsNull(n) {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if msg := setScalar(v, n.Value); msg != "" {
			p.fail(strictyaml.Errorf(n, path, "%s", msg))
		}
	}
}

func (p *parser) decodeList(n *yaml.Node, v reflect.Value, path string) {
	out := []string{}
	if !strictyaml.IsNull(n) {
		if n.Kind != yaml.SequenceNode {
			p.fail(strictyaml.Want(n, path, "a list, e.g. [a, b]"))
			return
		}
		for i, item := range n.Content {
			ip := strictyaml.Index(path, i)
			if item.Kind != yaml.ScalarNode || strictyaml.IsNull(item) {
				p.fail(strictyaml.Want(item, ip, "a string"))
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
	strictyaml.Block(n, path, "a mapping of NAME: value", strictyaml.Keys{}, p.fail, func(kv strictyaml.Pair, ip string) {
		if kv.Value.Kind != yaml.ScalarNode {
			p.fail(strictyaml.Want(kv.Value, ip, "a single value"))
			return
		}
		p.src[ip] = p.loc(kv.Key)
		if strictyaml.IsNull(kv.Value) {
			out[kv.Name] = ""
		} else {
			out[kv.Name] = kv.Value.Value
		}
	})
	if n.Kind == yaml.MappingNode || strictyaml.IsNull(n) {
		v.Set(reflect.ValueOf(out))
	}
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
