package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// inProcessNode registers a runner with f in-process (runRegister) and
// returns the path of its config.
func inProcessNode(t *testing.T, f *forgetest.Forge, name string) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("runner:\n  file: %s\n  fetch_interval: 100ms\n  fetch_interval_max: 200ms\n  env_file: \"\"\n", filepath.Join(dir, ".runner"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rf := &registerFlags{instance: f.URL() + "/", token: "reg-token", name: name, noInteractive: true, pingTimeout: 20 * time.Second}
	var out strings.Builder
	if err := runRegister(context.Background(), &globalFlags{config: cfgPath}, rf, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatalf("register: %v", err)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("Registered runner %q", name)) || !strings.Contains(out.String(), "with "+f.URL()+";") {
		t.Fatalf("register printed:\n%s", out.String())
	}
	return cfgPath
}

// startDaemonInProcess makes a Daemon from cfgPath and runs it on a
// goroutine; stop cancels Run's context and returns what Run returned.
func startDaemonInProcess(t *testing.T, cfgPath string, log io.Writer) (d *Daemon, stop func() error) {
	t.Helper()
	d, err := newDaemon(cfgPath, false, log)
	if err != nil {
		t.Fatalf("newDaemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return d, func() error {
		cancel()
		select {
		case err := <-done:
			done <- err // for the cleanup
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s of its context's end")
			return nil
		}
	}
}

// TestDaemonRunShutdown drives the Daemon type in-process: Run polls and
// runs a job; once Run's context ends, Shutdown lets the running job finish
// (drain), or, when its own context ends first, cancels the job, which
// still reports CANCELLED with its always() step. The registration lock is
// held from newDaemon until Shutdown returns.
func TestDaemonRunShutdown(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	cfgPath := inProcessNode(t, f, "in-process")
	gate := filepath.Join(t.TempDir(), "go")
	payload := []byte(fmt.Sprintf("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo begin; while [ ! -e %s ]; do sleep 0.05; done; echo end\n      - if: always()\n        run: echo always\n", gate))
	started := func(id int64) func() bool {
		return func() bool { return strings.Contains(strings.Join(f.Task(id).Log, "\n"), "begin") }
	}
	wait := func(id int64) forgetest.TaskView {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done && v.Archived })
		if err != nil {
			t.Fatalf("task %d not done and archived: %v (%+v)", id, err, v)
		}
		return v
	}

	// Drain: the job ends within Shutdown's context and succeeds.
	log := &syncBuffer{}
	d, stop := startDaemonInProcess(t, cfgPath, log)
	if _, err := newDaemon(cfgPath, false, io.Discard); err == nil || !strings.Contains(err.Error(), "another forgeload daemon") {
		t.Fatalf("a second daemon on the same registration: err = %v, want the lock's refusal", err)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	waitFor(t, "the first job's start", 20*time.Second, started(id))
	if err := stop(); err != nil {
		t.Fatalf("Run after its context ended = %v, want nil", err)
	}
	fetches := f.Calls("FetchTask")
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shut <- d.Shutdown(ctx)
	}()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while the job was still running", err)
	default:
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown of a job that ended in time = %v, want nil", err)
	}
	if v := wait(id); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(strings.Join(v.Log, "\n"), "\nend\n") {
		t.Fatalf("drained job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	if got := f.Calls("FetchTask"); got != fetches {
		t.Errorf("FetchTask calls during Shutdown: %d, want none (polling stopped with Run)", got-fetches)
	}
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}

	// Cancel: Shutdown's context is already over, so the job is cancelled
	// at once. Shutdown released the lock, so a new Daemon can start.
	d, stop = startDaemonInProcess(t, cfgPath, log)
	id = f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	waitFor(t, "the second job's start", 20*time.Second, started(id))
	if err := stop(); err != nil {
		t.Fatalf("Run after its context ended = %v, want nil", err)
	}
	over, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Shutdown(over); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with its context over = %v, want context.Canceled (jobs cancelled)", err)
	}
	v := wait(id)
	log2 := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_CANCELLED || strings.Contains(log2, "\nend\n") || !strings.Contains(log2, "always") {
		t.Fatalf("cancelled job: %v\n%s", v.Result, log2)
	}
	d, err := newDaemon(cfgPath, false, io.Discard)
	if err != nil {
		t.Fatalf("newDaemon after Shutdown: %v (the lock was not released)", err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of a daemon that never ran = %v, want nil", err)
	}
}

// TestDaemonRunUnregistered: Run returns the forge's "unregistered" answer
// as an error that says to register again, and Shutdown still cleans up.
func TestDaemonRunUnregistered(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	cfgPath := inProcessNode(t, f, "in-process-gone")
	f.DeleteRunner(f.Runners()[0].UUID)
	d, err := newDaemon(cfgPath, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = d.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "register again") || ctx.Err() != nil {
		t.Fatalf("Run of a deleted runner = %v, want the unregistered error before the deadline", err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}

// TestRegistrationCheck: what register refuses before it asks the forge,
// each with exit 2 and the flag to fix.
func TestRegistrationCheck(t *testing.T) {
	parallel(t)
	tests := []struct {
		r    registration
		want string
	}{
		{registration{}, "register needs --instance and --token (or --token-file, FORGELOAD_REGISTRATION_TOKEN or GITEA_RUNNER_REGISTRATION_TOKEN; or Forgejo's --secret)"},
		{registration{instance: "https://x"}, "register needs --token"},
		{registration{instance: "gitea.example.com", token: "t"}, `--instance "gitea.example.com" is not the forge's URL`},
		{registration{instance: "ftp://x", token: "t"}, "is not the forge's URL"},
		{registration{instance: "https://x", token: "t", labels: []string{"has space"}}, "--labels: parse label \"has space\": it contains a space"},
	}
	for _, tt := range tests {
		err := tt.r.check(context.Background(), nil)
		var ee *exitError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &ee) || ee.code != ExitBadInput {
			t.Errorf("check(%+v) = %v, want exit 2 with %q", tt.r, err, tt.want)
		}
	}
	r := registration{instance: "https://gitea.example.com/", token: "t", labels: []string{"perf"}}
	if err := r.check(context.Background(), nil); err != nil || r.instance != "https://gitea.example.com" {
		t.Fatalf("check of a good registration: %v, instance %q (want no trailing slash)", err, r.instance)
	}
}

// TestNewLocalRun: exec's job selection and order, before anything runs.
func TestNewLocalRun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  b:\n    needs: a\n    runs-on: x\n    steps:\n      - run: echo b\n  a:\n    runs-on: x\n    steps:\n      - run: echo a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := func(l *localRun) string {
		var s []string
		for _, j := range l.jobs {
			s = append(s, j.id+"<"+strings.Join(j.needs, ",")+">")
		}
		return strings.Join(s, " ")
	}
	l, err := newLocalRun("", &execFlags{}, []string{wf}, io.Discard)
	if err != nil || ids(l) != "a<> b<a>" {
		t.Fatalf("all jobs: %v, order %q, want a before b", err, ids(l))
	}
	l, err = newLocalRun("", &execFlags{job: "b"}, []string{wf}, io.Discard)
	if err != nil || ids(l) != "b<>" {
		t.Fatalf("-j b: %v, jobs %q, want b alone without its needs", err, ids(l))
	}
	_, err = newLocalRun("", &execFlags{job: "nope"}, []string{wf}, io.Discard)
	var ee *exitError
	if err == nil || !strings.Contains(err.Error(), "-j nope: no such job; the workflows have: b, a") || !errors.As(err, &ee) || ee.code != ExitBadInput {
		t.Fatalf("-j nope: %v", err)
	}
	_, err = newLocalRun("", &execFlags{secrets: []string{"=hunter2-value"}}, []string{wf}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--secret with no name`) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a bad --secret: %v", err)
	}
}
