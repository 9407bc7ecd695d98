package container_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A health-checked service on a job network: it becomes healthy, answers
// on its published port, streams stats, shows logs, runs an exec, and Reap
// leaves nothing of the job.
func TestServiceLifecycle(t *testing.T) {
	t.Parallel()
	e := containertest.Engine(t)
	img := containertest.Image(t)
	ctx := ctxFor(t, 2*time.Minute)
	const job = "job1"
	if err := e.EnsureImage(ctx, img, container.PullNever, nil); err != nil {
		t.Fatal(err)
	}
	netID, err := e.CreateNetwork(ctx, job, "fl-test-"+e.Owner())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateVolume(ctx, job, "fl-vol-"+e.Owner()); err != nil {
		t.Fatal(err)
	}
	id, err := e.Start(ctx, container.Spec{
		Job: job, Image: img, Network: netID, Aliases: []string{"api"},
		Ports:  []container.Port{{Container: "8080"}},
		Binds:  []string{"fl-vol-" + e.Owner() + ":/data"},
		Health: &container.Health{Test: []string{"CMD", "/sut", "check"}, Interval: 200 * time.Millisecond, Retries: 50},
		Memory: 64 << 20, NanoCPUs: 500_000_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitHealthy(ctx, id, 100*time.Millisecond); err != nil {
		t.Fatalf("WaitHealthy = %v, want nil", err)
	}
	st, err := e.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	port := st.Ports["8080/tcp"]
	if port == 0 || st.Health != "healthy" {
		t.Fatalf("Inspect = %+v, want a published 8080/tcp and healthy", st)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "hello" {
		t.Fatalf("GET / = %q, want hello", body)
	}

	sctx, stop := context.WithCancel(ctx)
	var samples []container.Sample
	err = e.Stats(sctx, id, func(s container.Sample) {
		samples = append(samples, s)
		if len(samples) == 2 {
			stop()
		}
	})
	if err != nil || len(samples) < 2 {
		t.Fatalf("Stats = %v with %d samples, want 2", err, len(samples))
	}
	s := samples[1]
	if s.CPULimitCores != 0.5 || s.MemLimitBytes != 64<<20 || s.MemBytes == 0 {
		t.Fatalf("sample = %+v, want CPU limit 0.5, memory limit 64MiB and some memory in use", s)
	}
	if s.Interval <= 0 || s.Interval != s.Time.Sub(samples[0].Time) {
		t.Fatalf("sample interval %s, want the time since the reading before (%s)", s.Interval, s.Time.Sub(samples[0].Time))
	}

	var out bytes.Buffer
	code, err := e.Exec(ctx, id, []string{"sh", "-c", "echo in-$X; exit 4"}, []string{"X=ctr"}, "/tmp", "", &out, &out)
	if err != nil || code != 4 || strings.TrimSpace(out.String()) != "in-ctr" {
		t.Fatalf("Exec = %d, %v, %q; want 4, nil, in-ctr", code, err, out.String())
	}
	var logs bytes.Buffer
	if err := e.Logs(ctx, id, 10, &logs); err != nil || !strings.Contains(logs.String(), "listening on :8080") {
		t.Fatalf("Logs = %v, %q; want the listening line", err, logs.String())
	}

	if objs, _ := e.Objects(ctx, job); len(objs) != 3 {
		t.Fatalf("Objects = %v, want a container, a network and a volume", objs)
	}
	if _, err := e.Reap(ctx, job); err != nil {
		t.Fatal(err)
	}
	if objs, err := e.Objects(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("after Reap: Objects = %v, %v; want none", objs, err)
	}
}

// A service whose health check never passes is reported with the check's
// output; one that exits is reported with its exit code.
func TestWaitHealthyFailures(t *testing.T) {
	t.Parallel()
	e := containertest.Engine(t)
	img := containertest.Image(t)
	ctx := ctxFor(t, 2*time.Minute)

	id, err := e.Start(ctx, container.Spec{Job: "j", Image: img,
		Health: &container.Health{Test: []string{"CMD-SHELL", "echo db not ready; exit 1"}, Interval: 100 * time.Millisecond, Retries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.WaitHealthy(ctx, id, 100*time.Millisecond)
	var ue *container.UnhealthyError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "unhealthy") || ue.HealthOutput != "db not ready" {
		t.Fatalf("WaitHealthy = %v, want unhealthy with the check's output", err)
	}

	id, err = e.Start(ctx, container.Spec{Job: "j", Image: img, Cmd: []string{"/sut", "fail"},
		Health: &container.Health{Test: []string{"CMD", "/sut", "check"}, Interval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.WaitHealthy(ctx, id, 100*time.Millisecond)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "exited with code 3") {
		t.Fatalf("WaitHealthy = %v, want exited with code 3", err)
	}
}

// With pull policy never, an image that is not on the Engine is a clear
// ErrImageNotFound, and nothing is pulled.
func TestEnsureImageNever(t *testing.T) {
	t.Parallel()
	e := containertest.Engine(t)
	ctx := ctxFor(t, time.Minute)
	err := e.EnsureImage(ctx, "forgeload-test-missing:none", container.PullNever, nil)
	if !errors.Is(err, container.ErrImageNotFound) || !strings.Contains(err.Error(), "pull policy is never") {
		t.Fatalf("EnsureImage = %v, want ErrImageNotFound naming the policy", err)
	}
	// A registry on loopback that refuses: the pull fails at once.
	err = e.EnsureImage(ctx, "127.0.0.1:1/nothing:latest", container.PullMissing, &container.Auth{Username: "u", Password: "p"})
	if !errors.Is(err, container.ErrImageNotFound) || strings.Contains(err.Error(), ":p@") {
		t.Fatalf("EnsureImage = %v, want ErrImageNotFound", err)
	}
}

// TestReapWhileAnotherRemoves: a container whose removal someone else has
// asked for (a daemon killed in the middle of its cleanup) is still
// attached to its network for a moment. Remove waits for it to go instead
// of failing with "removal already in progress", so that Reap can then
// remove the network too, and leaves nothing. (Before, about one full
// suite run in five left a job network behind this way.)
func TestReapWhileAnotherRemoves(t *testing.T) {
	t.Parallel()
	e := containertest.Engine(t)
	img := containertest.Image(t)
	ctx := ctxFor(t, 2*time.Minute)
	if err := e.EnsureImage(ctx, img, container.PullNever, nil); err != nil {
		t.Fatal(err)
	}
	const job = "race"
	netID, err := e.CreateNetwork(ctx, job, "fl-race-"+e.Owner())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		id, err := e.Start(ctx, container.Spec{Job: job, Image: img, Network: netID})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Every container is removed by two callers at once (seen to conflict
	// every time here); then the job is reaped, as a restarted daemon or
	// the test harness does.
	errs := make(chan error, 2*len(ids))
	for _, id := range ids {
		go func() { errs <- e.Remove(ctx, id) }()
		go func() { errs <- e.Remove(ctx, id) }()
	}
	for range 2 * len(ids) {
		if err := <-errs; err != nil {
			t.Errorf("Remove beside another Remove of the same container = %v, want nil", err)
		}
	}
	if _, err := e.Reap(ctx, job); err != nil {
		t.Errorf("Reap after the removals = %v, want nil", err)
	}
	if objs, err := e.Objects(ctx, job); err != nil || len(objs) != 0 {
		t.Fatalf("after Reap the job still has %v (%v), want nothing", objs, err)
	}
}
