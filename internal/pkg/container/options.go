package container

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// optionSpec is one docker create flag [Spec.ApplyOptions] understands.
type optionSpec struct {
	value bool // takes a value
	apply func(s *Spec, v string) error
}

var options = map[string]optionSpec{
	"--health-cmd": {true, func(s *Spec, v string) error {
		health(s).Test = []string{"CMD-SHELL", v}
		return nil
	}},
	"--health-interval":       {true, durationOpt(func(s *Spec, d time.Duration) { health(s).Interval = d })},
	"--health-timeout":        {true, durationOpt(func(s *Spec, d time.Duration) { health(s).Timeout = d })},
	"--health-start-period":   {true, durationOpt(func(s *Spec, d time.Duration) { health(s).StartPeriod = d })},
	"--health-start-interval": {true, func(*Spec, string) error { return nil }},
	"--health-retries": {true, func(s *Spec, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number of retries, got %q", v)
		}
		health(s).Retries = n
		return nil
	}},
	"--no-healthcheck": {false, func(s *Spec, _ string) error {
		s.Health = &Health{Test: []string{"NONE"}}
		return nil
	}},
	"--cpus": {true, func(s *Spec, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || math.IsInf(f, 0) || f > 1024 {
			return fmt.Errorf("want a number of CPUs such as 1.5, got %q", v)
		}
		s.NanoCPUs = int64(f * 1e9)
		return nil
	}},
	"--cpu-shares":         {true, intOpt(func(s *Spec, n int64) { s.CPUShares = n })},
	"--pids-limit":         {true, intOpt(func(s *Spec, n int64) { s.PidsLimit = n })},
	"--memory":             {true, bytesOpt(func(s *Spec, n int64) { s.Memory = n })},
	"--memory-reservation": {true, bytesOpt(func(s *Spec, n int64) { s.MemoryReservation = n })},
	"--shm-size":           {true, bytesOpt(func(s *Spec, n int64) { s.ShmSize = n })},
	"--env": {true, func(s *Spec, v string) error {
		if k, _, _ := strings.Cut(v, "="); k == "" {
			return fmt.Errorf("want NAME=value, got %q", v)
		}
		s.Env = append(s.Env, v)
		return nil
	}},
	"--entrypoint": {true, func(s *Spec, v string) error { s.Entrypoint = []string{v}; return nil }},
	"--user":       {true, func(s *Spec, v string) error { s.User = v; return nil }},
	"--workdir":    {true, func(s *Spec, v string) error { s.WorkingDir = v; return nil }},
	"--hostname":   {true, func(s *Spec, v string) error { s.Hostname = v; return nil }},
	"--network-alias": {true, func(s *Spec, v string) error {
		s.Aliases = append(s.Aliases, v)
		return nil
	}},
	"--label": {true, func(s *Spec, v string) error {
		k, val, _ := strings.Cut(v, "=")
		if k == "" {
			return fmt.Errorf("want key=value, got %q", v)
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = val
		return nil
	}},
	"--tmpfs": {true, func(s *Spec, v string) error {
		p, o, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("want an absolute path such as /tmp, got %q", v)
		}
		if s.Tmpfs == nil {
			s.Tmpfs = map[string]string{}
		}
		s.Tmpfs[p] = o
		return nil
	}},
	"--volume":      {true, func(s *Spec, v string) error { s.Binds = append(s.Binds, v); return nil }},
	"--add-host":    {true, func(s *Spec, v string) error { s.ExtraHosts = append(s.ExtraHosts, v); return nil }},
	"--cap-add":     {true, func(s *Spec, v string) error { s.CapAdd = append(s.CapAdd, v); return nil }},
	"--cap-drop":    {true, func(s *Spec, v string) error { s.CapDrop = append(s.CapDrop, v); return nil }},
	"--stop-signal": {true, func(s *Spec, v string) error { s.StopSignal = v; return nil }},
	"--read-only":   {false, func(s *Spec, _ string) error { s.ReadOnly = true; return nil }},
	"--init":        {false, func(s *Spec, _ string) error { s.Init = true; return nil }},
	// --rm is what the runner does anyway.
	"--rm": {false, func(*Spec, string) error { return nil }},
}

// shortOptions are the one-letter forms.
var shortOptions = map[string]string{
	"-e": "--env", "-m": "--memory", "-u": "--user", "-w": "--workdir",
	"-h": "--hostname", "-l": "--label", "-v": "--volume",
}

// refused are docker flags that would let a job escape the runner's
// control of the container; they get their own message.
var refused = map[string]string{
	"--privileged": "gives the container the host's devices and kernel capabilities",
	"--network":    "the runner puts every container on the job's own network",
	"--net":        "the runner puts every container on the job's own network",
	"--pid":        "would share the host's process namespace",
	"--ipc":        "would share another namespace",
	"--userns":     "would change the user namespace",
	"--name":       "the runner names the containers so it can remove them",
	"--publish":    "publish ports with ports: instead",
	"-p":           "publish ports with ports: instead",
	"--device":     "would give the container host devices",
}

func health(s *Spec) *Health {
	if s.Health == nil || (len(s.Health.Test) == 1 && s.Health.Test[0] == "NONE") {
		s.Health = &Health{}
	}
	return s.Health
}

func durationOpt(set func(*Spec, time.Duration)) func(*Spec, string) error {
	return func(s *Spec, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 2s or 1m30s, got %q", v)
		}
		set(s, d)
		return nil
	}
}

func intOpt(set func(*Spec, int64)) func(*Spec, string) error {
	return func(s *Spec, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", v)
		}
		set(s, n)
		return nil
	}
}

func bytesOpt(set func(*Spec, int64)) func(*Spec, string) error {
	return func(s *Spec, v string) error {
		n, err := ParseBytes(v)
		if err != nil {
			return err
		}
		set(s, n)
		return nil
	}
}

// ParseBytes parses a docker size such as 512m, 1g, 100k or 1048576 (bytes).
// The suffixes b, k, m, g and t (and kb, mb, ... or kib, mib, ...) are
// powers of 1024, as docker reads them.
func ParseBytes(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want a size such as 512m or 1g, got %q", v)
	}
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "b"), "i")
	scale := map[string]float64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]
	if scale == 0 || f*scale > math.MaxInt64/2 {
		return 0, fmt.Errorf("want a size such as 512m or 1g, got %q", v)
	}
	return int64(f * scale), nil
}

// ApplyOptions applies a job's options: string (docker create flags such
// as --health-cmd "pg_isready" --cpus 1 --memory 512m) to s. Every flag it
// does not know, and those that would take the container out of the
// runner's control, are errors that list what is supported.
func (s *Spec) ApplyOptions(opts string) error {
	args, err := SplitArgs(opts)
	if err != nil {
		return fmt.Errorf("options: %w", err)
	}
	var errs []error
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if long, ok := shortOptions[name]; ok {
			name = long
		}
		if why, bad := refused[name]; bad {
			errs = append(errs, fmt.Errorf("options: %s is not allowed: %s", name, why))
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		spec, ok := options[name]
		if !strings.HasPrefix(a, "-") {
			errs = append(errs, fmt.Errorf("options: %q is not a flag; options holds docker create flags only, such as --cpus 1 (quote values that contain spaces)", a))
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("options: %q is not a supported docker create flag; supported: %s", a, supported()))
			continue
		}
		if spec.value && !hasVal {
			if i+1 >= len(args) {
				errs = append(errs, fmt.Errorf("options: %s needs a value", name))
				continue
			}
			i++
			val = args[i]
		} else if !spec.value && hasVal {
			errs = append(errs, fmt.Errorf("options: %s takes no value, got %q", name, a))
			continue
		}
		if err := spec.apply(s, val); err != nil {
			errs = append(errs, fmt.Errorf("options: %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func supported() string {
	names := make([]string, 0, len(options))
	for k := range options {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// SplitArgs splits a command line as a POSIX shell would, without
// expansions: spaces separate words, '...' and "..." quote (with \" and \\
// escapes inside double quotes), and a backslash escapes the next character.
func SplitArgs(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inArg = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\' || s[i+1] == '$' || s[i+1] == '`') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inArg = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inArg = true
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out, nil
}
