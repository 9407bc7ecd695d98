package dnstest

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
)

func TestAnswersChange(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	s := Start(t, func(name string) netip.Addr {
		if name != "flip.test." {
			return netip.Addr{}
		}
		if n.Add(1) == 1 {
			return netip.MustParseAddr("127.0.0.1")
		}
		return netip.MustParseAddr("127.0.0.2")
	})
	r := s.Resolver()
	for i, want := range []string{"127.0.0.1", "127.0.0.2"} {
		got, err := r.LookupNetIP(context.Background(), "ip4", "flip.test")
		if err != nil {
			t.Fatalf("lookup %d: %v", i, err)
		}
		if len(got) != 1 || got[0].String() != want {
			t.Fatalf("lookup %d = %v, want %s", i, got, want)
		}
	}
	if _, err := r.LookupNetIP(context.Background(), "ip4", "other.test"); err == nil {
		t.Fatal("lookup of an unknown name succeeded")
	}
}
