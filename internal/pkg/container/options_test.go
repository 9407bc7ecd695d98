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
	  --cpus 1.5 -m 512m --memory-reservation=1g -e A=b --env 'C=d e' --entrypoint /bin/sh -u nobody --rm --init --tmpfs /run:size=1m --label k=v`)
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
}

// Every bad option is reported at once, each naming the flag and the fix.
func TestApplyOptionsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ opts, want string }{
		{"--privileged", "options: --privileged is not allowed: gives the container"},
		{"--network host", "options: --network is not allowed"},
		{"--frobnicate 3", `options: "--frobnicate" is not a supported docker create flag; supported: --add-host,`},
		{"--cpus lots", `options: --cpus: want a number of CPUs such as 1.5, got "lots"`},
		{"--memory lots", `options: --memory: want a size such as 512m or 1g, got "lots"`},
		{"--memory 5 parsecs", `options: "parsecs" is not a flag`},
		{"--health-interval", "options: --health-interval needs a value"},
		{"--init=yes", `options: --init takes no value, got "--init=yes"`},
		{`--health-cmd "unclosed`, "options: unclosed \""},
	} {
		var s Spec
		err := s.ApplyOptions(tc.opts)
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
	f.Fuzz(func(t *testing.T, opts string) {
		var s Spec
		_ = s.ApplyOptions(opts)
		_, _ = SplitArgs(opts)
	})
}
