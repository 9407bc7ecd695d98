package cmd

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2EClusterKillWorkerClosedTotal: kill -9 of a worker early in a
// closed-model `total` across three daemons. In the issue, the target got
// 21,085 of `total: 20000`, the summary said 20,000 and the lost worker's
// row said 0 requests. Here the merged result never counts less than the
// target got, and the summary bounds how much more it may have got: the
// target's count lies between the merged `requests` and `requests` plus
// the stated bound; the lost worker's row counts what its last heartbeat
// said it had sent, not 0.
func TestE2EClusterKillWorkerClosedTotal(t *testing.T) {
	parallelLong(t, 16)
	rg := newClusterRig(t, "", nil)
	// /hold answers after 150 ms: 5 VUs a worker send about 33 req/s, so
	// each 300-request share takes about 9 s and w2 dies early in its own.
	before := rg.tg.total()
	id := rg.jobAt("/hold", "          total: 900\n          concurrency: 15\n          duration: 60s\n          distributed: '{workers: 3, join_timeout: 10s}'\n")
	seg := rg.startedLoad(t, "w2", 30)
	// Early, but after a heartbeat (every 1 s) has carried a count of what
	// w2 sent: about 1.5 s of its 33 req/s. Killed before its first
	// heartbeat, nothing outside w2 knew it had sent anything, and its row
	// rightly says 0 with the whole share as the bound.
	tag := "w2/" + strconv.Itoa(seg)
	waitFor(t, "w2 to send 50 requests", 30*time.Second, func() bool { return rg.tg.counts()[tag] >= 50 })
	if err := rg.d["w2"].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	got := rg.tg.total() - before
	sentW2 := rg.tg.counts()[tag]
	t.Logf("result %v; the target got %d requests, %d of them from w2 (segment %d) before it was killed", v.Result, got, sentW2, seg)

	for _, want := range []string{"worker w2 lost (lease expired)", "Unreported (lost hosts)"} {
		if !strings.Contains(log, want) {
			t.Errorf("step log lacks %q:\n%s", want, log)
		}
	}
	requests, err := strconv.ParseInt(v.Outputs["requests"], 10, 64)
	if err != nil {
		t.Fatalf("the step's requests output %q is not a count (outputs %v):\n%s", v.Outputs["requests"], v.Outputs, log)
	}
	m := regexp.MustCompile(`requests counted without metrics \(no latency or status\); the target may have got up to (\d+) more: `).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the summary does not state the bound of what the lost worker may have sent unreported:\n%s", log)
	}
	bound, _ := strconv.ParseInt(m[1], 10, 64)
	t.Logf("merged requests %d, stated bound %d, target %d", requests, bound, got)
	if got < requests || got > requests+bound {
		t.Errorf("the target got %d requests; the merged result says %d and up to %d more: want the target's count within [%d, %d]:\n%s",
			got, requests, bound, requests, requests+bound, log)
	}
	// w2's row: what it shipped or its last heartbeat said it had sent,
	// not 0.
	if n := workerRequests(t, log, "w2"); n == 0 {
		t.Errorf("w2 sent %d requests before kill -9; its row says 0:\n%s", sentW2, log)
	} else {
		t.Logf("w2's row counts %d requests; the target got %d from it", n, sentW2)
	}
	rg.tg.checkNoDoubleDrive(t, 3)
}
