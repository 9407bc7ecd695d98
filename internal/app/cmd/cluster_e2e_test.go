package cmd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/app/run"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// segTarget is a load target that records every request by the worker and
// segment in its X-Forgeload-Segment header, with the time it arrived.
type segTarget struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string][]time.Time // "worker/segment" → arrival times
	n    atomic.Int64
}

func newSegTarget(t *testing.T) *segTarget {
	t.Helper()
	tg := &segTarget{hits: map[string][]time.Time{}}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		tg.n.Add(1)
		tg.mu.Lock()
		tg.hits[r.Header.Get(run.SegmentHeader)] = append(tg.hits[r.Header.Get(run.SegmentHeader)], now)
		tg.mu.Unlock()
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(tg.Close)
	return tg
}

// counts returns the requests per "worker/segment" tag.
func (tg *segTarget) counts() map[string]int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	out := map[string]int{}
	for k, v := range tg.hits {
		out[k] = len(v)
	}
	return out
}

// span returns the first and last arrival of tag.
func (tg *segTarget) span(tag string) (first, last time.Time, ok bool) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	h := tg.hits[tag]
	if len(h) == 0 {
		return first, last, false
	}
	return h[0], h[len(h)-1], true
}

// tagsOf returns the "worker/segment" tags of segment seg.
func (tg *segTarget) tagsOf(seg int) []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []string
	for k := range tg.hits {
		if strings.HasSuffix(k, "/"+strconv.Itoa(seg)) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// segOfWorker returns the segment a worker drove first ("" tag excluded).
func (tg *segTarget) segOfWorker(w string) (int, bool) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for k := range tg.hits {
		if wk, s, ok := strings.Cut(k, "/"); ok && wk == w {
			n, err := strconv.Atoi(s)
			return n, err == nil
		}
	}
	return 0, false
}

// latest returns the time of the last request.
func (tg *segTarget) latest() time.Time {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var last time.Time
	for _, h := range tg.hits {
		if len(h) > 0 && h[len(h)-1].After(last) {
			last = h[len(h)-1]
		}
	}
	return last
}

// inWindow counts every request that arrived in [from, to).
func (tg *segTarget) inWindow(from, to time.Time) int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	n := 0
	for _, h := range tg.hits {
		for _, at := range h {
			if !at.Before(from) && at.Before(to) {
				n++
			}
		}
	}
	return n
}

// checkNoDoubleDrive fails if two workers ever sent requests of one
// segment during overlapping time spans.
func (tg *segTarget) checkNoDoubleDrive(t *testing.T, segs int) {
	t.Helper()
	for s := range segs {
		tags := tg.tagsOf(s)
		type span struct {
			tag         string
			first, last time.Time
		}
		var spans []span
		for _, tag := range tags {
			f, l, _ := tg.span(tag)
			spans = append(spans, span{tag, f, l})
		}
		for i := range spans {
			for j := i + 1; j < len(spans); j++ {
				a, b := spans[i], spans[j]
				if a.first.Before(b.last) && b.first.Before(a.last) {
					t.Errorf("segment %d driven twice at once: %s %s..%s and %s %s..%s", s,
						a.tag, a.first.Format("15:04:05.000"), a.last.Format("15:04:05.000"),
						b.tag, b.first.Format("15:04:05.000"), b.last.Format("15:04:05.000"))
				}
			}
		}
	}
}

// clusterRig is one fake forge, one redis-server, one target and three
// forgeload daemons in one pool: w1 takes the jobs (label coord) and
// coordinates; w2 and w3 only serve segments.
type clusterRig struct {
	f     *forgetest.Forge
	redis *redistest.Server
	tg    *segTarget
	d     map[string]*daemon
	n     map[string]*node
	proxy *redistest.Proxy // between w3 and Redis when the rig was asked for one
}

// loadExtra adds lines to a worker's load: section (each indented by two
// spaces).
func newClusterRig(t *testing.T, proxyW3 bool, loadExtra map[string]string) *clusterRig {
	t.Helper()
	rg := &clusterRig{redis: redistest.Start(t), tg: newSegTarget(t), d: map[string]*daemon{}, n: map[string]*node{}}
	rg.f = forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	for _, w := range []string{"w1", "w2", "w3"} {
		url := rg.redis.URL()
		if w == "w3" && proxyW3 {
			rg.proxy = redistest.StartProxy(t, rg.redis.Addr())
			url = "redis://" + rg.proxy.Addr() + "/0"
		}
		label, metrics := "spare", ""
		if w == "w1" {
			label, metrics = "coord", "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n"
		}
		n := newNode(t, fmt.Sprintf("  labels: [%q]\n  shutdown_timeout: 5s\nload:\n  progress_interval: 1s\n%scluster:\n  redis_url: %s\n  name: %s\n  max_segments: 2\n%s",
			label, loadExtra[w], url, w, metrics))
		registered(t, rg.f, n, "e2e-"+w)
		rg.n[w] = n
		rg.d[w] = n.startDaemon()
	}
	for w, d := range rg.d {
		waitFor(t, w+" to join the cluster pool", 15*time.Second, func() bool {
			return strings.Contains(d.out.String(), "joined the pool")
		})
	}
	return rg
}

// job queues a distributed load job for w1.
func (rg *clusterRig) job(with string) int64 {
	payload := "on: push\njobs:\n  perf:\n    runs-on: coord\n    outputs:\n      requests: ${{ steps.api.outputs.requests }}\n      workers: ${{ steps.api.outputs.workers }}\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " +
		rg.tg.URL + "/\n" + with
	return rg.f.QueueJob(forgetest.Job{RunsOn: []string{"coord"}, Payload: []byte(payload)})
}

func (rg *clusterRig) logs() string {
	var b strings.Builder
	for _, w := range []string{"w1", "w2", "w3"} {
		fmt.Fprintf(&b, "--- daemon %s ---\n%s\n", w, rg.d[w].out.String())
	}
	return b.String()
}

func (rg *clusterRig) waitDone(t *testing.T, id int64) forgetest.TaskView {
	t.Helper()
	return waitDone(t, rg.f, id, rg.d["w1"])
}

// TestE2EClusterExactTotal: a job asking for 3 workers runs on all three
// daemons, the target sees exactly the planned total split evenly, and the
// step log has the joins, the start time, live progress and one merged
// summary with per-worker rows. w2's load.max_rate (150) is below the
// plan's 300 req/s but above its share, so it takes part. Then: workers: 1
// runs locally, and asking for more workers than exist fails naming how
// many joined and which runners were available.
func TestE2EClusterExactTotal(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, map[string]string{"w2": "  max_rate: 150\n"})
	id := rg.job("          rate: 300\n          duration: 3s\n          concurrency: 20\n          distributed: '{workers: 3, join_timeout: 10s}'\n          thresholds: http_req_failed:rate < 1%\n")
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job result %v:\n%s\n%s", v.Result, log, rg.logs())
	}
	if got := rg.tg.n.Load(); got != 900 {
		t.Errorf("target saw %d requests, want exactly 900", got)
	}
	counts := rg.tg.counts()
	for _, w := range []string{"w1", "w2", "w3"} {
		s, ok := rg.tg.segOfWorker(w)
		if !ok || counts[w+"/"+strconv.Itoa(s)] != 300 {
			t.Errorf("worker %s: requests per tag %v, want 300 for its one segment", w, counts)
		}
	}
	for _, want := range []string{"3 workers joined", "start_at", "/300.0 req/s", "Load test summary", "Requests                  900", "Workers (run", "Thresholds: PASS"} {
		if !strings.Contains(log, want) {
			t.Errorf("step log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "Load test summary"); n != 1 {
		t.Errorf("step log has %d summaries, want one merged summary", n)
	}
	if v.Outputs["requests"] != "900" || v.Outputs["workers"] != "3" {
		t.Errorf("job outputs %v, want requests 900 from the merged result and workers 3", v.Outputs)
	}

	before := rg.tg.n.Load()
	v = rg.waitDone(t, rg.job("          total: 50\n          distributed: '{workers: 1}'\n"))
	if log := strings.Join(v.Log, "\n"); v.Result != runnerv1.Result_RESULT_SUCCESS || strings.Contains(log, "workers joined") || rg.tg.n.Load()-before != 50 {
		t.Errorf("workers: 1 job: result %v, %d requests, want a local run of 50:\n%s", v.Result, rg.tg.n.Load()-before, log)
	}
	v = rg.waitDone(t, rg.job("          rate: 30\n          duration: 2s\n          distributed: '{workers: 4, join_timeout: 2s}'\n"))
	if log := strings.Join(v.Log, "\n"); v.Result != runnerv1.Result_RESULT_FAILURE ||
		!strings.Contains(log, "only 3 of 4 workers joined within 2s (min_workers 4); available runners: w1, w2, w3") {
		t.Errorf("4-worker job: result %v, want a failure naming who joined and who was available:\n%s", v.Result, log)
	}

	// Poisson arrivals without a seed: the coordinator picks one for all
	// workers, so together they send exactly that seed's schedule.
	before = rg.tg.n.Load()
	v = rg.waitDone(t, rg.job("          rate: 200\n          duration: 2s\n          concurrency: 20\n          arrival_model: poisson\n          distributed: '{workers: 3, join_timeout: 10s}'\n"))
	log = strings.Join(v.Log, "\n")
	m := regexp.MustCompile(`poisson seed (\d+)`).FindStringSubmatch(log)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || m == nil {
		t.Fatalf("poisson job: result %v, want success with the seed in the log:\n%s", v.Result, log)
	}
	seed, _ := strconv.ParseUint(m[1], 10, 64)
	sched := load.NewSchedule(&load.Options{Rate: 200, Duration: 2 * time.Second, Arrival: load.Poisson, Seed: seed})
	want := 0
	for _, _, ok := sched.Next(); ok; _, _, ok = sched.Next() {
		want++
	}
	if got := rg.tg.n.Load() - before; got != int64(want) {
		t.Errorf("poisson over 3 workers: target saw %d requests, want the seed's single-host schedule of %d", got, want)
	}

	// Closed model: 7 VUs split exactly as 2/3/2 (round(v·to) − round(v·from)),
	// so segment 1 sends about 1.5 times what segments 0 and 2 send.
	before = rg.tg.n.Load()
	perSeg := func() [3]int {
		var out [3]int
		for tag, n := range rg.tg.counts() {
			if _, s, ok := strings.Cut(tag, "/"); ok {
				if i, err := strconv.Atoi(s); err == nil && i < 3 {
					out[i] += n
				}
			}
		}
		return out
	}
	base := perSeg()
	v = rg.waitDone(t, rg.job("          vus: 7\n          think_time: 50ms\n          duration: 3s\n          distributed: '{workers: 3, join_timeout: 10s}'\n"))
	after := perSeg()
	var got [3]int
	for i := range got {
		got[i] = after[i] - base[i]
	}
	if v.Result != runnerv1.Result_RESULT_SUCCESS || rg.tg.n.Load() == before {
		t.Errorf("closed-model job: result %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	if r0, r2 := float64(got[1])/float64(max(got[0], 1)), float64(got[1])/float64(max(got[2], 1)); r0 < 1.25 || r0 > 1.8 || r2 < 1.25 || r2 > 1.8 {
		t.Errorf("closed model, 7 VUs: requests per segment %v, want segment 1 (3 VUs) at about 1.5× segments 0 and 2 (2 VUs each)", got)
	} else {
		t.Logf("closed model, 7 VUs: requests per segment %v", got)
	}

	code, out := rg.n["w2"].forgeload("cluster", "status")
	if code != 0 {
		t.Fatalf("cluster status exit %d:\n%s", code, out)
	}
	if testing.Verbose() {
		t.Logf("forgeload cluster status:\n%s", out)
	}
	for _, want := range []string{"RUNNERS (3)", "w1", "w2", "w3", "RUNS (4)", "DONE", "ABORTED", "0 0-1/3→w1@"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster status lacks %q:\n%s", want, out)
		}
	}
}

// lossJob is the job of the failure tests: 300 req/s over three workers
// for long enough to lose one, see its share move and the rate recover.
const lossJob = "          rate: 300\n          duration: 12s\n          concurrency: 20\n          distributed: '{workers: 3, join_timeout: 10s}'\n"

// startedLoad waits until the target has seen n requests and w has sent
// some; it returns w's segment.
func (rg *clusterRig) startedLoad(t *testing.T, w string, n int64) int {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d requests with some from %s", n, w), 30*time.Second, func() bool {
		_, ok := rg.tg.segOfWorker(w)
		return ok && rg.tg.n.Load() >= n
	})
	seg, _ := rg.tg.segOfWorker(w)
	return seg
}

// takeover waits for another worker to send segment seg of lost worker w
// and returns its tag and first request time.
func (rg *clusterRig) takeover(t *testing.T, seg int, w string, within time.Duration) (string, time.Time) {
	t.Helper()
	var tag string
	waitFor(t, fmt.Sprintf("segment %d of %s to be taken over", seg, w), within, func() bool {
		for _, tg := range rg.tg.tagsOf(seg) {
			if !strings.HasPrefix(tg, w+"/") {
				tag = tg
				return true
			}
		}
		return false
	})
	first, _, _ := rg.tg.span(tag)
	return tag, first
}

// checkRateRecovered: in the two seconds after the takeover settled, the
// target sees the planned 300 req/s again (±10%).
func (rg *clusterRig) checkRateRecovered(t *testing.T, from time.Time) {
	t.Helper()
	from = from.Add(500 * time.Millisecond)
	to := from.Add(2 * time.Second)
	waitFor(t, "two seconds of load after the takeover", 10*time.Second, func() bool { return time.Now().After(to.Add(200 * time.Millisecond)) })
	if n := rg.tg.inWindow(from, to); n < 540 || n > 660 {
		t.Errorf("after the takeover the target saw %d requests in 2 s, want 600 ± 10%% (the planned 300 req/s)", n)
	}
}

// TestE2EClusterKillWorker: kill -9 of a worker mid-run. Its segment moves
// to a survivor within 7 s, the total rate returns to plan, no segment is
// ever driven by two workers at once, and the job succeeds with the loss
// in its log.
func TestE2EClusterKillWorker(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, nil)
	id := rg.job(lossJob)
	seg := rg.startedLoad(t, "w2", 600)
	killed := time.Now()
	if err := rg.d["w2"].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	tag, first := rg.takeover(t, seg, "w2", 9*time.Second)
	if d := first.Sub(killed); d > 7*time.Second {
		t.Errorf("segment %d resumed by %s %s after kill -9, want within 7s", seg, tag, d)
	} else {
		t.Logf("segment %d resumed by %s %s after kill -9", seg, tag, d.Round(time.Millisecond))
	}
	rg.checkRateRecovered(t, first)
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job result %v, want success after reassignment:\n%s", v.Result, log)
	}
	for _, want := range []string{"worker w2 lost (lease expired)", fmt.Sprintf("segment %d reassigned w2 →", seg), "lost: lease expired", "1 reassignments"} {
		if !strings.Contains(log, want) {
			t.Errorf("step log lacks %q:\n%s", want, log)
		}
	}
	rg.tg.checkNoDoubleDrive(t, 3)

	// The coordinator's daemon counted the move in its metrics.
	m := regexp.MustCompile(`serving metrics on (http://[0-9.:]+)/metrics`).FindStringSubmatch(rg.d["w1"].out.String())
	if m == nil {
		t.Fatalf("w1 did not log its metrics address:\n%s", rg.d["w1"].out.String())
	}
	resp, err := http.Get(m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"forgeload_cluster_segment_reassignments_total 1\n", "forgeload_cluster_workers 0\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("w1 /metrics lacks %q", want)
		}
	}
}

// TestE2EClusterSIGTERMWorker: SIGTERM makes a worker abandon its segment,
// which another worker resumes in under a second, without a TTL wait.
func TestE2EClusterSIGTERMWorker(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, nil)
	id := rg.job(lossJob)
	seg := rg.startedLoad(t, "w3", 600)
	termed := time.Now()
	rg.d["w3"].signal(t, syscall.SIGTERM)
	tag, first := rg.takeover(t, seg, "w3", 5*time.Second)
	if d := first.Sub(termed); d >= time.Second {
		t.Errorf("segment %d resumed by %s %s after SIGTERM, want under 1s (abandon, no lease wait)", seg, tag, d)
	} else {
		t.Logf("segment %d resumed by %s %s after SIGTERM", seg, tag, d.Round(time.Millisecond))
	}
	if code := rg.d["w3"].wait(t, 10*time.Second); code != 0 {
		t.Errorf("w3 exited %d after SIGTERM, want 0", code)
	}
	rg.checkRateRecovered(t, first)
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "worker w3 lost (abandoned") {
		t.Fatalf("job result %v, want success with w3 abandoned in the log:\n%s", v.Result, log)
	}
	rg.tg.checkNoDoubleDrive(t, 3)
}

// TestE2EClusterPartitionedWorkerFences: w3 reaches Redis through a proxy
// the test cuts. w3 stops its own load within 3.5 s, its segment moves on
// only after that, and the job succeeds.
func TestE2EClusterPartitionedWorkerFences(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, true, nil)
	id := rg.job(lossJob)
	seg := rg.startedLoad(t, "w3", 600)
	cut := time.Now()
	rg.proxy.Cut()
	own := "w3/" + strconv.Itoa(seg)
	// w3 is fenced once nothing more arrives from it; wait past the bound.
	waitFor(t, "the fence bound to pass", 10*time.Second, func() bool { return time.Since(cut) > 4*time.Second })
	_, last, _ := rg.tg.span(own)
	// 3.5 s without a renewal, plus 100 ms for a request already in flight
	// to reach the target.
	if d := last.Sub(cut); d > 3600*time.Millisecond {
		t.Errorf("partitioned w3 sent its last request %s after the cut, want ≤ 3.5s", d)
	} else {
		t.Logf("partitioned w3 stopped %s after the cut", d.Round(time.Millisecond))
	}
	tag, first := rg.takeover(t, seg, "w3", 9*time.Second)
	if first.Before(last) {
		t.Errorf("%s resumed segment %d at %s, before fenced w3 stopped at %s", tag, seg, first.Format("15:04:05.000"), last.Format("15:04:05.000"))
	}
	v := rg.waitDone(t, id)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job result %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	rg.tg.checkNoDoubleDrive(t, 3)
}

// TestE2EClusterRedisRestartAborts: Redis restarted without persistence
// loses the run's state; every worker stops its load, the daemons keep
// running, and the job fails with the reason in its log.
func TestE2EClusterRedisRestartAborts(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, nil)
	id := rg.job(lossJob)
	rg.startedLoad(t, "w2", 600)
	restarted := time.Now()
	rg.redis.Restart()
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "coordination state lost") {
		t.Fatalf("job result %v, want failure naming the lost coordination state:\n%s\n%s", v.Result, log, rg.logs())
	}
	waitFor(t, "load to stop everywhere (no request for 1.5 s)", 10*time.Second, func() bool {
		return time.Since(rg.tg.latest()) > 1500*time.Millisecond
	})
	for w, d := range rg.d {
		select {
		case <-d.done:
			t.Errorf("daemon %s exited (code %d) after the Redis restart; it must keep running:\n%s", w, d.code, d.out.String())
		default:
		}
	}
	if d := rg.tg.latest().Sub(restarted); d > 5*time.Second {
		t.Errorf("load went on %s after the Redis restart, want it stopped within 5s", d)
	} else {
		t.Logf("all load stopped %s after the Redis restart", d.Round(time.Millisecond))
	}
}

// TestE2EClusterWorkerPolicy: every worker checks the targets against its
// OWN policy before it sends anything. w3 allows only 10.0.0.0/8, so it
// refuses its share of a test against 127.0.0.1 and the job fails with
// w3's reason; w3 sends nothing.
func TestE2EClusterWorkerPolicy(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, map[string]string{"w3": "  allow_targets: [\"10.0.0.0/8\"]\n"})
	v := rg.waitDone(t, rg.job("          rate: 60\n          duration: 3s\n          distributed: '{workers: 3, join_timeout: 10s}'\n"))
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "worker w3 could not run segment") {
		t.Fatalf("job result %v, want failure naming w3's refusal:\n%s\n%s", v.Result, log, rg.logs())
	}
	if _, ok := rg.tg.segOfWorker("w3"); ok {
		t.Errorf("w3 sent requests to a target its policy denies: %v", rg.tg.counts())
	}
}

// TestClusterConfigErrors: the cluster status command and the daemon's
// Redis client fail with the key, the address and the fix, and never show
// the password of cluster.redis_url.
func TestClusterConfigErrors(t *testing.T) {
	t.Parallel()
	n := newNode(t, "")
	if code, out := n.forgeload("cluster", "status"); code == 0 || !strings.Contains(out, "cluster.redis_url is not set") {
		t.Errorf("cluster status without redis_url: exit %d:\n%s", code, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	n = newNode(t, "cluster:\n  redis_url: redis://forgeload:s3cret-pw@"+addr+"/0\n")
	code, out := n.forgeload("cluster", "status")
	if code == 0 || !strings.Contains(out, "cannot reach redis") || !strings.Contains(out, addr) || strings.Contains(out, "s3cret-pw") {
		t.Errorf("cluster status against a closed port: exit %d, want an error naming %s without the password:\n%s", code, addr, out)
	}
}

// TestE2EClusterCancel: cancel in the forge UI stops the load on every
// worker within about 2 s, and the job ends CANCELLED.
func TestE2EClusterCancel(t *testing.T) {
	t.Parallel()
	rg := newClusterRig(t, false, nil)
	id := rg.job("          rate: 300\n          duration: 30s\n          distributed: '{workers: 3, join_timeout: 10s}'\n")
	rg.startedLoad(t, "w3", 300)
	cancelAt := time.Now()
	rg.f.Cancel(id)
	v := rg.waitDone(t, id)
	if v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("job result %v, want cancelled:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	waitFor(t, "load to stop everywhere (no request for 1.5 s)", 10*time.Second, func() bool {
		return time.Since(rg.tg.latest()) > 1500*time.Millisecond
	})
	// About 2 s: the 1 s report interval notices the cancel, then the abort
	// reaches every worker; 3 s leaves room for a busy 2-core box.
	if lag := rg.tg.latest().Sub(cancelAt); lag > 3*time.Second {
		t.Errorf("load went on %s after cancel, want about 2 s at most", lag)
	} else {
		t.Logf("all workers stopped %s after cancel", lag.Round(time.Millisecond))
	}
}
