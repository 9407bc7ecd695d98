package spec

import (
	"strings"
	"testing"
	"time"
)

const phased = `target: https://api.example.com
load_patterns:
  - name: warmup
    type: ramp
    from_rps: 1
    to_rps: 10
    duration: 10s
  - name: plateau
    type: constant
    rps: 10
    duration: 20s
`

func TestThresholdMappingItems(t *testing.T) {
	t.Parallel()
	c := mustParse(t, phased+`thresholds:
  - http_req_duration:p99 < 300ms
  - expr: http_req_failed:rate < 1%   # a comment
    abort_on_fail: true
    delay: 10s
  - expr: http_req_duration{phase:plateau}:p99 < 200ms
  - expr: http_requests:count > 10
    abort_on_fail: true
`)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ths, err := c.ParsedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	if len(ths) != 4 {
		t.Fatalf("thresholds = %+v, want 4", ths)
	}
	for i, want := range []struct {
		abort bool
		delay time.Duration
	}{{false, 0}, {true, 10 * time.Second}, {false, 0}, {true, 0}} {
		if ths[i].AbortOnFail != want.abort || ths[i].Delay != want.delay {
			t.Errorf("threshold %d %q: abort %v delay %v, want %v %v", i, ths[i].Source, ths[i].AbortOnFail, ths[i].Delay, want.abort, want.delay)
		}
	}
	if ths[1].Source != "http_req_failed:rate < 1%" || ths[2].Phase != "plateau" {
		t.Errorf("thresholds = %+v", ths)
	}
	// Inline thresholds (a flag, a step's input) replace the file's, and
	// their abort_on_fail with them.
	if err := c.Override(map[string]string{"thresholds": "http_req_failed:rate < 5%"}); err != nil {
		t.Fatal(err)
	}
	if ths, _ := c.ParsedThresholds(); len(ths) != 1 || ths[0].AbortOnFail || len(c.ThresholdAborts) != 0 {
		t.Errorf("after the override: %+v, aborts %+v", ths, c.ThresholdAborts)
	}
}

func TestThresholdMappingErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"thresholds:\n  - abort_on_fail: true\n", "thresholds[0].expr: a threshold written as a mapping needs expr"},
		{"thresholds:\n  - expr: http_req_failed:rate < 1%\n    delay: 5s\n", "thresholds[0].delay: delay applies only to a threshold with abort_on_fail: true"},
		{"thresholds:\n  - expr: http_req_failed:rate < 1%\n    abort: true\n", "abort"},
		{"thresholds:\n  - expr: http_req_failed:rate < 1%\n    abort_on_fail: maybe\n", "is not true or false"},
		{"thresholds:\n  - expr: [a]\n", "thresholds[0].expr"},
	} {
		_, err := Parse("test.yaml", []byte(base+c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

func TestThresholdUnknownPhase(t *testing.T) {
	t.Parallel()
	c := mustParse(t, phased+"thresholds:\n  - http_req_duration{phase:soak}:p99 < 200ms\n")
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `threshold "http_req_duration{phase:soak}:p99 < 200ms" selects phase "soak", which is not a phase of this config (phases: warmup, plateau)`) {
		t.Errorf("Validate() = %v, want an error naming the threshold and listing the phases", err)
	}
	c = mustParse(t, base+"thresholds:\n  - http_req_duration{phase:plateau}:p99 < 200ms\n")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "the config has no named phases") {
		t.Errorf("Validate() = %v, want it to say the config has no phases", err)
	}
	c = mustParse(t, "target: https://api.example.com\nvus:\n  start: 1\n  stages:\n    - {name: ramp, duration: 5s, target: 10}\n    - {name: hold, duration: 5s, target: 10}\nthresholds:\n  - http_req_duration{phase:hold}:p99 < 200ms\n")
	if err := c.Validate(); err != nil {
		t.Errorf("a named VU stage is a phase: %v", err)
	}
	if got := strings.Join(c.PhaseNames(), ","); got != "ramp,hold" {
		t.Errorf("PhaseNames() = %q", got)
	}
}

// FuzzThresholdItems checks that thresholds written as mappings never
// panic and that each abort marks a threshold the config holds.
func FuzzThresholdItems(f *testing.F) {
	for _, s := range []string{
		"  - expr: http_req_failed:rate < 1%\n    abort_on_fail: true\n    delay: 10s\n",
		"  - http_req_duration:p99 < 1s\n  - expr: http_req_duration{phase:plateau}:p99 < 1s\n",
		"  - expr: |\n      a\n      b\n    abort_on_fail: true\n",
		"  - {expr: 'http_req_duration{endpoint:a,phase:warmup}:p99 < 1s', abort_on_fail: yes, delay: -1s}\n",
		"  - expr:\n    abort_on_fail: true\n",
		"  - {}\n  - null\n  - [a]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, items string) {
		c, err := Parse("fuzz.yaml", []byte(phased+"thresholds:\n"+items))
		if err != nil {
			return
		}
		for _, a := range c.ThresholdAborts {
			if a.Index < 0 || a.Index >= len(c.Thresholds) {
				t.Fatalf("abort %+v marks no threshold of %q", a, c.Thresholds)
			}
		}
		if c.Validate() != nil {
			return
		}
		ths, err := c.ParsedThresholds()
		if err != nil {
			t.Fatalf("a valid config's thresholds do not parse: %v", err)
		}
		names := c.PhaseNames()
		for _, th := range ths {
			if th.Phase != "" && th.Phase != names[0] && th.Phase != names[1] {
				t.Fatalf("threshold %q passed validation with an unknown phase", th.Source)
			}
			if th.Delay < 0 {
				t.Fatalf("threshold %q has a negative delay %v", th.Source, th.Delay)
			}
		}
	})
}

func TestThresholdAbortRefusedWhereItCannotFire(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, want string }{
		{"http_req_duration:p99 < baseline * 1.10", "compares with a baseline, which is only read after the run: abort_on_fail cannot apply to it"},
		{"sut_cpu:max < 80%", "abort_on_fail applies to http_req_duration, http_req_failed and http_requests"},
	} {
		c2 := mustParse(t, base+"thresholds:\n  - expr: "+c.expr+"\n    abort_on_fail: true\n")
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with abort_on_fail: Validate() = %v, want %q", c.expr, err, c.want)
		}
	}
}
