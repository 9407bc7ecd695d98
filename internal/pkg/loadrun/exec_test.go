package loadrun

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// TestDialRefusalNamesTheMaskedTarget: a target whose name resolves to an
// allowed address for the pre-flight check and to a denied one at dial
// time stops the run; the refusal names the target URL with its password
// and token hidden, and the address it was refused at, not "[unparsable
// URL redacted]".
func TestDialRefusalNamesTheMaskedTarget(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	var seen atomic.Int64
	bad := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { seen.Add(1) }))
	bad.Listener = l
	bad.Start()
	defer bad.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	var lookups atomic.Int64
	dns := dnstest.Start(t, func(string) netip.Addr {
		if lookups.Add(1) == 1 {
			return netip.MustParseAddr("127.0.0.1")
		}
		return netip.MustParseAddr("127.0.0.2")
	})
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}, Resolver: dns.Resolver()})
	if err != nil {
		t.Fatal(err)
	}
	target := "http://bob:pw-s3cret@rebind.test:" + port + "/items?access_token=tok-s3cret"
	cfg, err := spec.Parse("test.yaml", []byte("target: "+target+"\ntotal: 3\nconcurrency: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	tst, err := New(context.Background(), cfg, Settings{Policy: pol, Engine: build.Settings{Resolver: dns.Resolver()}})
	if err != nil {
		t.Fatalf("New: %v (the pre-flight check sees the allowed address)", err)
	}
	defer tst.Close()
	out, err := tst.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Refused == nil || !errors.Is(out.Refused, policy.ErrDenied) {
		t.Fatalf("Refused = %v, want a policy refusal at dial time", out.Refused)
	}
	msg := out.Refused.Error()
	want := "http://bob:xxxxx@rebind.test:" + port + "/items?access_token=xxxxx"
	if !strings.Contains(msg, want) || !strings.Contains(msg, "127.0.0.2:"+port) || strings.Contains(msg, "s3cret") || strings.Contains(msg, "unparsable") {
		t.Errorf("refusal %q, want it to name %s and the address 127.0.0.2:%s, with no secret", msg, want, port)
	}
	if seen.Load() != 0 {
		t.Errorf("the denied address saw %d requests", seen.Load())
	}
}
