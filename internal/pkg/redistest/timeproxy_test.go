package redistest

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTimeProxyStepsAndFreezesTime: behind the time proxy, TIME is
// Redis's clock plus the offset, in a pipeline beside other commands too,
// and frozen after FreezeTime; every other reply passes unchanged.
func TestTimeProxyStepsAndFreezesTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(testing.TB, string) *Proxy
	}{{"in this process", StartTimeProxy}, {"in a process of its own", StartTimeProxyProcess}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testTimeProxy(t, tc.start)
		})
	}
}

func testTimeProxy(t *testing.T, start func(testing.TB, string) *Proxy) {
	srv := Start(t)
	p := start(t, srv.Addr())
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	via := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = direct.Close(); _ = via.Close() })
	now := func(c *redis.Client) time.Time {
		t.Helper()
		ts, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	near := func(got, want time.Time, what string) {
		t.Helper()
		if d := got.Sub(want); d < -time.Second || d > time.Second {
			t.Errorf("%s: TIME %s, want about %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
	}
	near(now(via), now(direct), "no offset")
	p.SetTimeOffset(5 * time.Second)
	near(now(via), now(direct).Add(5*time.Second), "+5s")
	// A pipeline: only the TIME reply changes.
	var tm *redis.TimeCmd
	var get *redis.StringCmd
	if _, err := via.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "k", "12345", 0)
		tm = pipe.Time(ctx)
		get = pipe.Get(ctx, "k")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	near(tm.Val(), now(direct).Add(5*time.Second), "+5s in a pipeline")
	if get.Val() != "12345" {
		t.Errorf("GET through the time proxy = %q, want 12345", get.Val())
	}
	p.SetTimeOffset(-60 * time.Second)
	near(now(via), now(direct).Add(-60*time.Second), "-60s")
	p.FreezeTime()
	first := now(via)
	before := now(direct)
	for !now(direct).After(before.Add(2 * time.Millisecond)) { // poll Redis's own clock until it has moved
	}
	if again := now(via); !again.Equal(first) {
		t.Errorf("frozen TIME moved from %s to %s", first, again)
	}
	p.ThawTime()
	near(now(via), now(direct).Add(-60*time.Second), "thawed at -60s")
}

// FuzzReadReply: the relay's reply reader never panics and never reads
// past a reply it returns.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n", "%1\r\n+a\r\n:1\r\n", "|1\r\n+k\r\n+v\r\n+OK\r\n", "$-1\r\n", "*-1\r\n", ">2\r\n+a\r\n+b\r\n", "$5\r\nab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		br := bufio.NewReader(strings.NewReader(s))
		raw, err := readReply(br)
		if err == nil && !strings.HasPrefix(s, string(raw)) {
			t.Fatalf("reply %q is not a prefix of the input %q", raw, s)
		}
		var c timeRewrite
		_ = c.rewriteReply([]byte(s))
	})
}
