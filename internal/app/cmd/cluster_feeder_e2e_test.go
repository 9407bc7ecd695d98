package cmd

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
)

// rowTarget records, per feeder row id (the request path), how often it
// arrived and which workers sent it.
type rowTarget struct {
	*httptest.Server
	mu   sync.Mutex
	rows map[string]int
	by   map[string]int // worker → rows sent
}

func newRowTarget(t *testing.T) *rowTarget {
	t.Helper()
	tg := &rowTarget{rows: map[string]int{}, by: map[string]int{}}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		worker, _, _ := strings.Cut(r.Header.Get(loadrun.SegmentHeader), "/")
		tg.mu.Lock()
		tg.rows[strings.TrimPrefix(r.URL.Path, "/row/")]++
		tg.by[worker]++
		tg.mu.Unlock()
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(tg.Close)
	return tg
}

// snapshot returns the counts per row and per worker, and resets them.
func (tg *rowTarget) take() (rows, by map[string]int) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	rows, by = tg.rows, tg.by
	tg.rows, tg.by = map[string]int{}, map[string]int{}
	return rows, by
}

// feederJob is a distributed load job whose feeder, written by a run:
// step into the workspace, has ids 0..n-1.
func feederJob(rg *clusterRig, tg *rowTarget, n int, with string) int64 {
	payload := fmt.Sprintf(`on: push
jobs:
  perf:
    runs-on: coord
    steps:
      - run: i=0; echo id > ids.csv; while [ $i -lt %d ]; do echo $i >> ids.csv; i=$((i+1)); done
      - id: api
        uses: forgeload/load@v1
        with:
          target: %s/row/{{id}}
          feeder: '{path: ids.csv, type: csv, recycle: false}'
          concurrency: 20
          validity: warn
          distributed: '{workers: 3, join_timeout: 10s}'
%s`, n, tg.URL, with)
	return rg.f.QueueJob(forgetest.Job{RunsOn: []string{"coord"}, Payload: []byte(payload)})
}

// TestE2EClusterFeederRowsOnce: a feeder split across three daemons sends
// each row exactly once, every daemon sending some; a run that needs more
// rows than the file has fails naming the file, and still sends no row
// twice.
func TestE2EClusterFeederRowsOnce(t *testing.T) {
	parallel(t)
	rg := newClusterRig(t, "", nil)
	tg := newRowTarget(t)

	// Closed model, total = rows: each host sends exactly its share, so no
	// arrival is dropped on a loaded machine, and together they use every
	// row once. The run ends once the total is sent; 8 s is far more
	// than 300 loopback requests need.
	v := rg.waitDone(t, feederJob(rg, tg, 300, "          total: 300\n          duration: 8s\n"))
	log := strings.Join(v.Log, "\n")
	rows, by := tg.take()
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("feeder job: result %v:\n%s\n%s", v.Result, log, rg.logs())
	}
	for i := range 300 {
		if n := rows[fmt.Sprint(i)]; n != 1 {
			t.Errorf("row %d sent %d times, want exactly once", i, n)
		}
	}
	if len(rows) != 300 {
		t.Errorf("target saw %d distinct paths, want the 300 rows: %v", len(rows), rows)
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		if by[w] == 0 {
			t.Errorf("worker %s sent no row (rows per worker %v): the rows should be split across the hosts", w, by)
		}
	}

	// 60 rows for 200 requests: the run fails with Crankfire's exhaustion,
	// and no row went out twice.
	v = rg.waitDone(t, feederJob(rg, tg, 60, "          total: 200\n          duration: 30s\n"))
	log = strings.Join(v.Log, "\n")
	rows, _ = tg.take()
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "ids.csv has 60 rows and the hosts of this run used them all") {
		t.Errorf("exhausted feeder job: result %v, want a failure naming the file and its 60 rows:\n%s", v.Result, log)
	}
	for id, n := range rows {
		if n != 1 {
			t.Errorf("exhausted run: row %s sent %d times, want at most once", id, n)
		}
	}
	if len(rows) == 0 || len(rows) > 60 {
		t.Errorf("exhausted run sent %d distinct rows, want between 1 and 60", len(rows))
	}
}

// TestE2EClusterFeederDrainGivesRowsBack: a worker drained by SIGTERM
// mid-run gives back the rows it claimed and did not send, and the others
// send them: no row goes out twice, and no row is skipped except among the
// last claims of the run (what each host still held at the end) and the
// few requests w3 had in flight.
func TestE2EClusterFeederDrainGivesRowsBack(t *testing.T) {
	parallelLong(t, 13)
	rg := newClusterRig(t, "", nil)
	tg := newRowTarget(t)
	const rows = 3000
	id := feederJob(rg, tg, rows, "          rate: 150\n          duration: 8s\n")
	waitFor(t, "300 rows sent, some by w3", 60*time.Second, func() bool {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		return tg.by["w3"] > 0 && len(tg.rows) >= 300
	})
	rg.d["w3"].signal(t, syscall.SIGTERM)
	if code := rg.d["w3"].wait(t, 20*time.Second); code != 0 {
		t.Errorf("w3 exited %d after SIGTERM, want 0", code)
	}
	v := rg.waitDone(t, id)
	sent, by := tg.take()
	maxRow := -1
	for id, n := range sent {
		if n != 1 {
			t.Errorf("row %s sent %d times, want at most once", id, n)
		}
		if i, err := strconv.Atoi(id); err == nil && i > maxRow {
			maxRow = i
		}
	}
	// At the end each of the three hosts may hold up to two batches of 64
	// it never needed; below that, every row must have been sent.
	var skipped []int
	for i := range max(maxRow-3*2*64, 0) {
		if sent[strconv.Itoa(i)] == 0 {
			skipped = append(skipped, i)
		}
	}
	// A request in flight when w3 drained may have taken its row and not
	// reached the target; rows w3 held and did not give back would be 33
	// or more (the rest of its batch, or a whole prefetched one).
	if len(skipped) > 5 {
		t.Errorf("rows %v were never sent (of %d up to row %d): w3's unsent rows were not given back and reused", skipped, len(sent), maxRow)
	}
	if by["w3"] == 0 || len(sent) < 600 {
		t.Errorf("rows per worker %v, %d rows sent: want w3 to have taken part before its drain and the run to go on", by, len(sent))
	}
	// w3 abandons at once (TestE2EClusterSIGTERMWorker holds it to that);
	// on a loaded machine its lease may run out first, and the coordinator
	// then says so. Either way its rows came back, which is what this test
	// is about.
	if log := strings.Join(v.Log, "\n"); !strings.Contains(log, "worker w3 lost (abandoned") && !strings.Contains(log, "worker w3 lost (lease expired)") {
		t.Errorf("job result %v, the log does not show w3 leaving:\n%s", v.Result, log)
	}
}
