package loadrun

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// sleeper starts a loopback server that answers every request after
// delay, counting them.
func sleeper(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		select {
		case <-time.After(delay): // the system under test's own latency
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestPairedRun: a paired A/B run of two identical targets passes, and of
// a candidate twice as slow as its baseline fails as a regression; each
// target gets half the arrivals, and both sides are in the summary.
// Service times of 400 ms and 60 starting workers: on a busy 2-core box
// the generator's scheduling delay (tens of ms) is a few percent of
// them, where it swamped a 20 ms service time and made identical
// targets differ by more than the 10% limit.
func TestPairedRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		cand, base time.Duration
		regressed  bool
	}{
		{"identical", 400 * time.Millisecond, 400 * time.Millisecond, false},
		{"2x slower", 800 * time.Millisecond, 400 * time.Millisecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cand, nc := sleeper(t, tt.cand)
			base, nb := sleeper(t, tt.base)
			cfg := validated(t, "duet.yaml", "target: "+cand.URL+"/items\nrate: 60\nconcurrency: 60\nduration: 7s\nseed: 1\n",
				map[string]string{"baseline_target": base.URL})
			lt, err := New(context.Background(), cfg, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			defer lt.Close()
			out, err := lt.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if out.Duet == nil {
				t.Fatal("a run with baseline_target has no paired verdict")
			}
			if d := nc.Load() - nb.Load(); d < -1 || d > 1 {
				t.Errorf("candidate got %d requests, baseline %d: want them alternating", nc.Load(), nb.Load())
			}
			// validity warns: a generator starved on a loaded test box makes
			// the run INVALID (rightly); the paired verdict is under test.
			o := outcome.New(outcome.Input{Result: out.Result, Duet: out.Duet, ValidityWarn: true})
			var text strings.Builder
			if err := o.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Log(text.String())
			for _, w := range []string{"baseline:", "Paired A/B run", base.URL} {
				if !strings.Contains(text.String(), w) {
					t.Errorf("the summary does not show %q", w)
				}
			}
			if got := out.Duet.Regressed(); got != tt.regressed {
				t.Errorf("regressed = %v, want %v", got, tt.regressed)
			}
			wantKind := outcome.Pass
			if tt.regressed {
				wantKind = outcome.Fail
			}
			if o.Verdict.Kind != wantKind {
				t.Errorf("verdict %s %v, want %s", o.Verdict.Kind, o.Verdict.Reasons, wantKind)
			}
			if tt.regressed && (len(o.Verdict.Reasons) == 0 || !strings.Contains(o.Verdict.Reasons[0], "regressed against the baseline target")) {
				t.Errorf("reasons %q do not name the paired regression", o.Verdict.Reasons)
			}
		})
	}
}

// TestPairedRunDeniedBaseline: the baseline target goes through the
// target policy like the target: a denied one refuses the run before a
// byte is sent to either.
func TestPairedRunDeniedBaseline(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t, func(string) netip.Addr { return netip.MustParseAddr("127.0.0.1") })
	cand, nc := sleeper(t, 0)
	base, nb := sleeper(t, 0)
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"*.example"}, Resolver: dns.Resolver()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := validated(t, "duet.yaml", "target: http://ok.test:"+portOf(t, cand.URL)+"/\ntotal: 4\n",
		map[string]string{"baseline_target": "http://evil.example:" + portOf(t, base.URL)})
	lt, err := New(context.Background(), cfg, Settings{Policy: pol, Engine: build.Settings{Resolver: dns.Resolver()}})
	if err == nil {
		lt.Close()
		t.Fatal("New accepted a denied baseline_target")
	}
	if !errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), "evil.example") {
		t.Errorf("error %v: want a policy refusal naming evil.example", err)
	}
	if nc.Load() != 0 || nb.Load() != 0 {
		t.Errorf("requests sent: candidate %d, baseline %d; want none", nc.Load(), nb.Load())
	}
}
