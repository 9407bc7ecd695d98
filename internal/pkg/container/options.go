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
	"-p": "--publish", "-P": "--publish-all",
}

// gatedOption is a docker create flag that widens what the container can
// reach or change beyond Docker's defaults, so a job may use it only where
// the runner's admin lists it in container.allowed_options.
type gatedOption struct {
	optionSpec
	why string // what it widens
}

// gated are the flags [Policy.Options] may allow. --cap-add has a list of
// its own ([Policy.Capabilities]), per capability.
var gated = map[string]gatedOption{
	"--sysctl": {optionSpec{true, func(s *Spec, v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want name=value such as net.core.somaxconn=4096, got %q", v)
		}
		if s.Sysctls == nil {
			s.Sysctls = map[string]string{}
		}
		s.Sysctls[k] = val
		return nil
	}}, "it changes kernel settings of the container's namespaces"},
	"--ulimit": {optionSpec{true, func(s *Spec, v string) error {
		u, err := parseUlimit(v)
		if err == nil {
			s.Ulimits = append(s.Ulimits, u)
		}
		return err
	}}, "it can raise the container's resource limits above the Engine's defaults"},
	"--group-add": {optionSpec{true, func(s *Spec, v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("want a group name or id")
		}
		s.GroupAdd = append(s.GroupAdd, v)
		return nil
	}}, "it adds groups to the container's processes, and with them access to what those groups own"},
}

// refusedOption is a docker create flag no job may use, whatever the
// runner's config: each takes the container out of the runner's control or
// puts it in the host's namespaces.
type refusedOption struct {
	value bool   // takes a value (skipped with the flag)
	why   string // why, and what to do instead
}

var refused = map[string]refusedOption{
	"--privileged":         {false, "it gives the container every device and capability of the host; ask for the one capability the job needs (--cap-add, which container.allowed_capabilities controls)"},
	"--network":            {true, "the runner puts every container on the job's own network, where the services reach each other by name"},
	"--net":                {true, "the runner puts every container on the job's own network, where the services reach each other by name"},
	"--pid":                {true, "it would share the host's (or another container's) process namespace"},
	"--ipc":                {true, "it would share the host's (or another container's) IPC namespace"},
	"--uts":                {true, "it would share the host's UTS namespace"},
	"--userns":             {true, "it would change the user namespace, and with host the container's root is the host's root"},
	"--cgroupns":           {true, "it would share the host's cgroup namespace"},
	"--cgroup-parent":      {true, "it would move the container out of the Engine's cgroup and its limits"},
	"--volumes-from":       {true, "it would mount every volume of another container, which the runner cannot check; mount what the job needs with volumes:"},
	"--mount":              {true, "mount with volumes: or --volume, which the runner checks against container.valid_volumes"},
	"--runtime":            {true, "it would choose another container runtime than the Engine's default"},
	"--oom-score-adj":      {true, "it would make the host's kernel kill host processes before the container"},
	"--oom-kill-disable":   {false, "it would let the container take the host's memory without being killed"},
	"--device":             {true, "it would give the container a device of the host"},
	"--device-cgroup-rule": {true, "it would let the container use devices of the host"},
	"--security-opt":       {true, "it can turn off the container's seccomp, AppArmor or SELinux confinement, or no-new-privileges, which every container of a job runs with"},
	"--env-file":           {true, "it reads a file of the runner's host; set variables with env: or --env"},
	"--label-file":         {true, "it reads a file of the runner's host; set labels with --label"},
	"--name":               {true, "the runner names the containers so it can remove them"},
	"--publish":            {true, "publish ports with ports: instead"},
	"--publish-all":        {false, "publish ports with ports: instead"},
}

// Policy is what the runner's admin lets a job's options: add to its
// containers beyond Docker's defaults. The zero value allows nothing:
// no capability beyond Docker's default set, and no flag of
// [GatedOptions].
type Policy struct {
	// Capabilities are the capabilities a job may --cap-add
	// (container.allowed_capabilities), such as NET_ADMIN, with or
	// without the CAP_ prefix and in any case; ALL allows every one.
	Capabilities []string
	// Options are the flags of [GatedOptions] a job may use
	// (container.allowed_options), such as --ulimit.
	Options []string
}

// allowsOption reports whether p lists the gated flag name.
func (p Policy) allowsOption(name string) bool {
	for _, o := range p.Options {
		if o == name {
			return true
		}
	}
	return false
}

// allowsCapability reports whether a job may add the capability c, in its
// canonical form: Docker's default set always, any other only if p lists
// it or ALL.
func (p Policy) allowsCapability(c string) bool {
	if defaultCapabilities[c] {
		return true
	}
	for _, a := range p.Capabilities {
		if ac, ok := CanonicalCapability(a); ok && (ac == c || ac == "ALL") {
			return true
		}
	}
	return false
}

// GatedOptions are the docker create flags a job may use only where the
// runner's admin lists them in container.allowed_options, sorted.
func GatedOptions() []string {
	names := make([]string, 0, len(gated))
	for k := range gated {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// capabilities are the Linux capabilities, without the CAP_ prefix.
var capabilities = map[string]bool{}

// defaultCapabilities are those Docker gives every container: adding one
// back (after --cap-drop ALL, say) widens nothing.
var defaultCapabilities = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID
		SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
		SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE
		SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN
		SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE`) {
		capabilities[c] = true
	}
	for _, c := range strings.Fields(`CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID
		SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE`) {
		defaultCapabilities[c] = true
	}
}

// CanonicalCapability returns a capability's name as Docker's API takes
// it, upper case without the CAP_ prefix (cap_net_admin gives NET_ADMIN),
// or ALL; ok is false for a name that is no Linux capability.
func CanonicalCapability(name string) (c string, ok bool) {
	c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
	return c, c == "ALL" || capabilities[c]
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

// ulimits are the resource names --ulimit takes.
var ulimits = map[string]bool{
	"core": true, "cpu": true, "data": true, "fsize": true, "locks": true, "memlock": true, "msgqueue": true,
	"nice": true, "nofile": true, "nproc": true, "rss": true, "rtprio": true, "rttime": true, "sigpending": true, "stack": true,
}

// parseUlimit reads --ulimit's name=soft[:hard]; hard defaults to soft.
func parseUlimit(v string) (Ulimit, error) {
	bad := fmt.Errorf("want name=soft[:hard] such as nofile=65536:65536, got %q", v)
	name, lim, ok := strings.Cut(v, "=")
	if !ok || !ulimits[name] {
		return Ulimit{}, bad
	}
	softS, hardS, hasHard := strings.Cut(lim, ":")
	if !hasHard {
		hardS = softS
	}
	soft, err1 := strconv.ParseInt(softS, 10, 64)
	hard, err2 := strconv.ParseInt(hardS, 10, 64)
	if err1 != nil || err2 != nil || soft < -1 || hard < -1 || (hard != -1 && (soft == -1 || soft > hard)) {
		return Ulimit{}, bad
	}
	return Ulimit{Name: name, Soft: soft, Hard: hard}, nil
}

// ApplyOptions applies a job's options: string (docker create flags such
// as --health-cmd "pg_isready" --cpus 1 --memory 512m) to s, under the
// admin's policy p. Every flag it does not know, those that would take the
// container out of the runner's control, and those that widen its reach
// beyond what p allows are errors, all at once; each names the flag, and
// the config key that would allow it where one does.
//
// Binds from --volume are not checked here: the caller checks them with
// the job's other volumes.
func (s *Spec) ApplyOptions(opts string, p Policy) error {
	args, err := SplitArgs(opts)
	if err != nil {
		return fmt.Errorf("options: %w", err)
	}
	o := &optionWords{args: args}
	for o.i = 0; o.i < len(args); o.i++ {
		if err := s.applyOption(o, p); err != nil {
			o.errs = append(o.errs, err)
		}
	}
	return errors.Join(o.errs...)
}

// optionWords walks the words of an options: string; i is the word at
// hand, and errs gathers what value could not take.
type optionWords struct {
	args []string
	i    int
	errs []error
}

// value takes the value of the flag at hand: val when the word held it
// (--flag=val), else the next word.
func (o *optionWords) value(name, val string, hasVal bool) (string, bool) {
	if hasVal {
		return val, true
	}
	if o.i+1 >= len(o.args) {
		o.errs = append(o.errs, fmt.Errorf("options: %s needs a value", name))
		return "", false
	}
	o.i++
	return o.args[o.i], true
}

// skip passes over the value of a refused flag that takes one, so that the
// value is not read as a flag of its own.
func (o *optionWords) skip(hasVal bool) {
	if !hasVal && o.i+1 < len(o.args) {
		o.i++
	}
}

// applyOption applies the flag at o's word to s under p.
func (s *Spec) applyOption(o *optionWords, p Policy) error {
	a := o.args[o.i]
	if !strings.HasPrefix(a, "-") {
		return fmt.Errorf("options: %q is not a flag; options holds docker create flags only, such as --cpus 1 (quote values that contain spaces)", a)
	}
	name, val, hasVal := strings.Cut(a, "=")
	if long, ok := shortOptions[name]; ok {
		name = long
	}
	if r, bad := refused[name]; bad {
		if r.value {
			o.skip(hasVal)
		}
		return fmt.Errorf("options: %s is not allowed on any forgeload runner (no config key allows it): %s", name, r.why)
	}
	if name == "--cap-add" {
		v, ok := o.value(name, val, hasVal)
		if !ok {
			return nil
		}
		return s.addCapability(v, p)
	}
	spec, ok := options[name]
	if g, isGated := gated[name]; isGated {
		if !p.allowsOption(name) {
			o.skip(hasVal)
			return fmt.Errorf("options: %s is not allowed on this runner: %s; the runner's admin can allow it by adding %s to container.allowed_options", name, g.why, name)
		}
		spec, ok = g.optionSpec, true
	}
	if !ok {
		return fmt.Errorf("options: %q is not a supported docker create flag; supported: %s", a, supported(p))
	}
	if spec.value {
		if val, ok = o.value(name, val, hasVal); !ok {
			return nil
		}
	} else if hasVal {
		return fmt.Errorf("options: %s takes no value, got %q", name, a)
	}
	if err := spec.apply(s, val); err != nil {
		return fmt.Errorf("options: %s: %w", name, err)
	}
	return nil
}

// addCapability adds the capability v names, when p allows it.
func (s *Spec) addCapability(v string, p Policy) error {
	c, known := CanonicalCapability(v)
	switch {
	case !known:
		return fmt.Errorf("options: --cap-add %s: %q is not a Linux capability (want a name such as NET_ADMIN)", v, v)
	case !p.allowsCapability(c):
		return fmt.Errorf("options: --cap-add %s is not allowed on this runner: a capability widens what the container can do to the host; the runner's admin can allow it by adding %s to container.allowed_capabilities", v, c)
	}
	s.CapAdd = append(s.CapAdd, c)
	return nil
}

// supported lists the flags a job may use under p.
func supported(p Policy) string {
	names := []string{"--cap-add"}
	for k := range options {
		names = append(names, k)
	}
	for k := range gated {
		if p.allowsOption(k) {
			names = append(names, k)
		}
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
