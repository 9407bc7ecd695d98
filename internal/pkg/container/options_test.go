package container

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestApplyOptions(t *testing.T) {
	t.Parallel()
	var s Spec
	err := s.ApplyOptions(`--health-cmd "pg_isready -U \"x\"" --health-interval=2s --health-timeout 1s --health-retries 5 --health-start-period 3s
	  --cpus 1.5 -m 512m --memory-reservation=1g -e A=b --env 'C=d e' --entrypoint /bin/sh -u nobody --rm --init --tmpfs /run:size=1m --label k=v
	  --cap-drop ALL --cap-add chown --cap-add=CAP_SETUID`, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Health{Test: []string{"CMD-SHELL", `pg_isready -U "x"`}, Interval: 2 * time.Second, Timeout: time.Second, StartPeriod: 3 * time.Second, Retries: 5}
	if !reflect.DeepEqual(s.Health, want) {
		t.Errorf("Health = %+v, want %+v", s.Health, want)
	}
	if s.NanoCPUs != 1_500_000_000 || s.Memory != 512<<20 || s.MemoryReservation != 1<<30 {
		t.Errorf("resources = %d CPUs, %d mem, %d reservation", s.NanoCPUs, s.Memory, s.MemoryReservation)
	}
	if !reflect.DeepEqual(s.Env, []string{"A=b", "C=d e"}) || s.User != "nobody" || !s.Init || s.Tmpfs["/run"] != "size=1m" || s.Labels["k"] != "v" || s.Entrypoint[0] != "/bin/sh" {
		t.Errorf("spec = %+v", s)
	}
	// Adding back what --cap-drop ALL took from Docker's default set needs
	// no listing: it widens nothing.
	if !reflect.DeepEqual(s.CapDrop, []string{"ALL"}) || !reflect.DeepEqual(s.CapAdd, []string{"CHOWN", "SETUID"}) {
		t.Errorf("CapDrop, CapAdd = %v, %v; want [ALL], [CHOWN SETUID]", s.CapDrop, s.CapAdd)
	}
}

// Every bad option is reported at once, each naming the flag and the fix.
func TestApplyOptionsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ opts, want string }{
		{"--privileged", "options: --privileged is not allowed on any forgeload runner (no config key allows it): it gives the container every device"},
		{"--network host", "options: --network is not allowed on any forgeload runner"},
		{"--network=container:x --cpus 1", "options: --network is not allowed on any forgeload runner"},
		{"--frobnicate 3", `options: "--frobnicate" is not a supported docker create flag; supported: --add-host,`},
		{"--cpus lots", `options: --cpus: want a number of CPUs such as 1.5, got "lots"`},
		{"--memory lots", `options: --memory: want a size such as 512m or 1g, got "lots"`},
		{"--memory 5 parsecs", `options: "parsecs" is not a flag`},
		{"--health-interval", "options: --health-interval needs a value"},
		{"--init=yes", `options: --init takes no value, got "--init=yes"`},
		{`--health-cmd "unclosed`, "options: unclosed \""},
	} {
		var s Spec
		err := s.ApplyOptions(tc.opts, Policy{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ApplyOptions(%q) = %v, want it to contain %q", tc.opts, err, tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1048576": 1 << 20, "512m": 512 << 20, "1g": 1 << 30, "1.5GB": 3 << 29, "64MiB": 64 << 20, "100k": 100 << 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "m", "-1m", "5x", "1e400"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = nil error, want one", in)
		}
	}
}

func FuzzApplyOptions(f *testing.F) {
	f.Add(`--health-cmd "a b" --cpus 1 -m 1g -e A=1`)
	f.Add(`'--x`)
	f.Add(`--cap-add=sys_admin --cap-add CHOWN --privileged --sysctl a=b`)
	f.Add(`--network host --cpus 1 -p 80 --cap-drop ALL`)
	f.Fuzz(func(t *testing.T, opts string) {
		var s Spec
		if err := s.ApplyOptions(opts, Policy{}); err == nil {
			noWidening(t, opts, s)
		}
		_, _ = SplitArgs(opts)
	})
}

// Every capability outside Docker's default set, in any spelling, is
// refused unless the admin lists it, with a message naming the flag and
// the key; what the admin lists is added in the Engine's spelling.
func TestApplyOptionsCapabilities(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"DAC_READ_SEARCH", "SYS_ADMIN", "cap_sys_admin", "Sys_Ptrace", "ALL", "NET_ADMIN", "SYS_MODULE", "BPF"} {
		var s Spec
		err := s.ApplyOptions("--cap-add "+c, Policy{})
		canon, _ := CanonicalCapability(c)
		want := "options: --cap-add " + c + " is not allowed on this runner: a capability widens what the container can do to the host; the runner's admin can allow it by adding " + canon + " to container.allowed_capabilities"
		if err == nil || err.Error() != want {
			t.Errorf("ApplyOptions(--cap-add %s) = %v, want %q", c, err, want)
		}
		if len(s.CapAdd) != 0 {
			t.Errorf("ApplyOptions(--cap-add %s) added %v", c, s.CapAdd)
		}
	}
	var s Spec
	if err := s.ApplyOptions("--cap-add=CAP_DAC_READ_SEARCH --cap-add net_admin", Policy{Capabilities: []string{"dac_read_search", "CAP_NET_ADMIN"}}); err != nil || !reflect.DeepEqual(s.CapAdd, []string{"DAC_READ_SEARCH", "NET_ADMIN"}) {
		t.Errorf("with both listed: CapAdd = %v, err %v; want [DAC_READ_SEARCH NET_ADMIN]", s.CapAdd, err)
	}
	s = Spec{}
	if err := s.ApplyOptions("--cap-add SYS_ADMIN", Policy{Capabilities: []string{"NET_ADMIN"}}); err == nil {
		t.Errorf("SYS_ADMIN with only NET_ADMIN listed: no error")
	}
	s = Spec{}
	if err := s.ApplyOptions("--cap-add SYS_ADMIN --cap-add ALL", Policy{Capabilities: []string{"ALL"}}); err != nil || !reflect.DeepEqual(s.CapAdd, []string{"SYS_ADMIN", "ALL"}) {
		t.Errorf("with ALL listed: CapAdd = %v, err %v", s.CapAdd, err)
	}
	for _, bad := range []string{"--cap-add NOT_A_CAP", "--cap-add SYS_ADMIN,NET_ADMIN", "--cap-add ''"} {
		s = Spec{}
		if err := s.ApplyOptions(bad, Policy{Capabilities: []string{"ALL"}}); err == nil || !strings.Contains(err.Error(), "is not a Linux capability") {
			t.Errorf("ApplyOptions(%s) = %v, want 'is not a Linux capability'", bad, err)
		}
	}
}

// Every refused flag is refused in both spellings (--flag v, --flag=v),
// naming the flag and saying that no key allows it; its value is not
// taken for a flag of its own.
func TestApplyOptionsRefused(t *testing.T) {
	t.Parallel()
	all := Policy{Capabilities: []string{"ALL"}, Options: GatedOptions()}
	for name, r := range refused {
		forms := []string{name}
		if r.value {
			forms = []string{name + " host", name + "=host", name + " /x:/y"}
		}
		for _, f := range forms {
			var s Spec
			err := s.ApplyOptions(f+" --cpus 1", all)
			want := "options: " + name + " is not allowed on any forgeload runner (no config key allows it): "
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ApplyOptions(%q) = %v, want one error starting %q", f, err, want)
			}
			if s.NanoCPUs != 1e9 {
				t.Errorf("ApplyOptions(%q): the flag after it was not read", f)
			}
		}
	}
	for short, long := range map[string]string{"-p": "--publish", "-P": "--publish-all"} {
		var s Spec
		if err := s.ApplyOptions(short+" 80", Policy{}); err == nil || !strings.Contains(err.Error(), long+" is not allowed") {
			t.Errorf("ApplyOptions(%s) = %v, want %s refused", short, err, long)
		}
	}
}

// The gated flags are refused, naming container.allowed_options, unless
// the admin lists them; listed, they set the spec.
func TestApplyOptionsGated(t *testing.T) {
	t.Parallel()
	opts := "--sysctl net.core.somaxconn=4096 --ulimit nofile=65536 --ulimit=nproc=100:200 --group-add 1234"
	var s Spec
	err := s.ApplyOptions(opts, Policy{Options: []string{"--ulimit"}})
	for _, name := range []string{"--sysctl", "--group-add"} {
		want := "options: " + name + " is not allowed on this runner: "
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "adding "+name+" to container.allowed_options") {
			t.Errorf("ApplyOptions(%q) = %v, want %s refused naming container.allowed_options", opts, err, name)
		}
	}
	if strings.Contains(err.Error(), "--ulimit") || len(s.Ulimits) != 2 {
		t.Errorf("listed --ulimit: err %v, Ulimits %v", err, s.Ulimits)
	}
	s = Spec{}
	if err := s.ApplyOptions(opts, Policy{Options: GatedOptions()}); err != nil {
		t.Fatal(err)
	}
	if s.Sysctls["net.core.somaxconn"] != "4096" || !reflect.DeepEqual(s.Ulimits, []Ulimit{{"nofile", 65536, 65536}, {"nproc", 100, 200}}) || !reflect.DeepEqual(s.GroupAdd, []string{"1234"}) {
		t.Errorf("spec = %+v", s)
	}
	for _, bad := range []string{"--ulimit nofile", "--ulimit nofile=2:1", "--ulimit frobs=1", "--ulimit nofile=-1:5", "--sysctl x", "--group-add ''"} {
		s = Spec{}
		if err := s.ApplyOptions(bad, Policy{Options: GatedOptions()}); err == nil {
			t.Errorf("ApplyOptions(%s) = nil error, want one", bad)
		}
	}
}

// noWidening fails t when s, accepted under the zero Policy, holds
// anything that widens the container beyond Docker's defaults.
func noWidening(t *testing.T, opts string, s Spec) {
	t.Helper()
	for _, c := range s.CapAdd {
		if !defaultCapabilities[c] {
			t.Fatalf("ApplyOptions(%q) under the zero Policy added capability %q", opts, c)
		}
	}
	if s.Sysctls != nil || s.Ulimits != nil || s.GroupAdd != nil {
		t.Fatalf("ApplyOptions(%q) under the zero Policy set a gated field: %+v", opts, s)
	}
}
