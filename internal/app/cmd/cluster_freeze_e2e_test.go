package cmd

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freezeTimings give the short-freeze test a fence that a 3 s freeze is
// surely shorter than, whatever its phase to the 1 s heartbeat: with the
// default 3.5 s fence, a freeze that began up to a second after the last
// renewal resumes 3 to 4 s after it, past the fence half the time (that
// is TestE2EClusterPausedWorker's fault), and a loaded machine's late
// SIGCONT adds to it. 5 s leaves a second for that; the lease keeps the
// default's margin over the fence.
const freezeTimings = "  lease: 7s\n  fence_after: 5s\n"

// TestE2EClusterShortFreeze: w2 is frozen (SIGSTOP) for 3 s, shorter than
// its fence (freezeTimings). It keeps its share, and the arrivals that
// fell due while it was frozen (about 150) are skipped, counted as
// dropped and blamed on the generator, never sent at once: in the issue,
// a 3 s SIGSTOP put 309 requests of one share on the target in 100 ms
// against 10 asked, and the summary blamed the target (Worker-bound).
func TestE2EClusterShortFreeze(t *testing.T) {
	parallelLong(t, 12)
	rg := newTimedClusterRig(t, "", nil, freezeTimings)
	// 150 req/s over three workers: 50 per share per second, 5 per 100 ms.
	id := rg.job("          rate: 150\n          duration: 8s\n          concurrency: 30\n          distributed: '{workers: 3, join_timeout: 10s}'\n")
	seg := rg.startedLoad(t, "w2", 300)
	own := "w2/" + strconv.Itoa(seg)
	rg.d["w2"].signal(t, syscall.SIGSTOP)
	paused := time.Now()
	// The freeze is the fault being tested, not a synchronisation.
	const freeze = 3 * time.Second
	waitFor(t, freeze.String()+" of freeze", 10*time.Second, func() bool { return time.Since(paused) > freeze })
	resumed := time.Now()
	rg.d["w2"].signal(t, syscall.SIGCONT)
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	// The busiest 100 ms of w2's share after it resumed: 5 asked. A burst
	// of the 150 overdue arrivals would put most of them in one window;
	// 20 leaves room for a loaded machine's catching up.
	var after []time.Time
	for _, at := range rg.tg.all()[own] {
		if !at.Before(resumed) {
			after = append(after, at)
		}
	}
	most := 0
	for i, j := 0, 0; j < len(after); j++ {
		for after[j].Sub(after[i]) >= 100*time.Millisecond {
			i++
		}
		most = max(most, j-i+1)
	}
	t.Logf("w2 sent %d requests of segment %d after resuming, at most %d in 100 ms (5 asked)", len(after), seg, most)
	if most > 20 {
		t.Errorf("w2 sent %d requests of segment %d in 100 ms after a %s freeze, want no burst (5 asked, 20 allowed)", most, seg, freeze)
	}
	if len(after) == 0 {
		t.Errorf("w2 sent nothing after a %s freeze shorter than its fence; it should keep its share:\n%s", freeze, log)
	}
	if strings.Contains(log, "worker w2 lost") {
		t.Errorf("w2 lost after a freeze shorter than its fence:\n%s", log)
	}
	// Once the first late arrival is picked up more than 0.5 s late, it
	// and every other overdue one are skipped: about the 150 that fell due
	// in the 3 s. Fewer than 2 s of them (100) means some were sent late.
	if m := regexp.MustCompile(`the generator stalled \(a frozen process or host, not the target\) and skipped (\d+)`).FindStringSubmatch(log); m == nil {
		t.Errorf("the summary does not name the freeze (want \"the generator stalled … and skipped N\"):\n%s", log)
	} else if n, _ := strconv.Atoi(m[1]); n < 100 {
		t.Errorf("the summary says %d overdue arrivals were skipped after a %s freeze of a 50 req/s share, want about 150 (at least 100):\n%s", n, freeze, log)
	} else {
		t.Logf("the summary says %d overdue arrivals were skipped", n)
	}
}
