package grpcload

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
)

func str(s string) *string { return &s }

// TestChecksOnCalls: status checks read the gRPC status code, body checks
// each response message as protobuf JSON; a failed one fails the call
// with class check (a failed call keeps its own class).
func TestChecksOnCalls(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, nil)
	for _, tc := range []struct {
		method string
		spec   check.Spec
		class  string // "" for success
	}{
		{"SayHello", check.Spec{JSON: str("$.message"), Equals: str("hello")}, ""},
		{"SayHello", check.Spec{BodyNotContains: str("hello")}, "check"},
		{"SayHello", check.Spec{Status: []int{0}}, ""},
		{"SayHello", check.Spec{Status: []int{5}}, "check"},
		{"Stream", check.Spec{BodyContains: str(`"message"`)}, ""},
		{"Stream", check.Spec{JSON: str("$.nothing")}, "check"},
		{"Fail", check.Spec{Status: []int{0}}, "grpc_not_found"},
	} {
		s, err := check.New([]check.Spec{tc.spec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(Options{Target: g.Addr, Method: method(t, tc.method), Message: `{"name": "a", "count": 2}`, Checks: s.Endpoint(0)})
		if err != nil {
			t.Fatal(err)
		}
		var smp load.Sample
		err = d.DoSample(context.Background(), &smp)
		d.Close()
		name := tc.method + " " + s.All()[0].Name()
		var ce *check.Error
		switch {
		case tc.class == "" && err != nil:
			t.Errorf("%s: err %v, want success", name, err)
		case tc.class != "" && (err == nil || smp.Class.String() != tc.class):
			t.Errorf("%s: err %v, class %v; want class %s", name, err, smp.Class, tc.class)
		case tc.class == "check" && !errors.As(err, &ce):
			t.Errorf("%s: err %v is not the check's", name, err)
		}
		if st := s.Stats()[0]; st.Passed+st.Failed == 0 {
			t.Errorf("%s: counted nothing", name)
		}
	}
}

func TestNewRefusesHeaderChecks(t *testing.T) {
	t.Parallel()
	s, err := check.New([]check.Spec{{Header: str("X")}}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Target: "127.0.0.1:1", Method: method(t, "SayHello"), Checks: s.Endpoint(0)})
	if err == nil || !strings.Contains(err.Error(), "protocol grpc has no header to check") {
		t.Errorf("New with a header check = %v, want it refused", err)
	}
}
