package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2EOfflineImage builds the image of deploy/container/Dockerfile.offline
// with its script and the local Docker Engine, which has no registry to
// pull from (the documented Dockerfile needs golang and debian images),
// and runs it: the static forgeload answers, sh and the CA bundle are
// there, and it runs as uid 1000 with no network at all; then, on the
// host's network, it registers with the fake forge and runs a load job
// against a server on 127.0.0.1, as the docs' two docker run lines do.
func TestE2EOfflineImage(t *testing.T) {
	parallelLong(t, 8)
	bin, err := clusterBin() // static, as the script would build it
	if err != nil {
		t.Fatal(err)
	}
	image := "forgeload-test-offline:" + randHex()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "deploy", "container", "build-offline.sh"))
	cmd.Env = append(os.Environ(), "IMAGE="+image, "FORGELOAD_BIN="+bin, "DOCKER_BUILD_ARGS=--pull=false --label "+dockerLabel)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build-offline.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = dockerErr("rmi", "-f", image) })
	if v := docker(t, "run", "--rm", "--network", "none", image, "version"); !strings.Contains(v, "forgeload") {
		t.Errorf("docker run %s version = %q, want forgeload's version", image, v)
	}
	got := docker(t, "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image, "-c",
		"id -u; test -s /etc/ssl/certs/ca-certificates.crt && echo certs; test -w /data && echo data")
	if got != "1000\ncerts\ndata" {
		t.Errorf("in the image: %q, want uid 1000, the CA bundle and a writable /data", got)
	}
	offlineImageRunsAJob(t, image)
}

// offlineImageRunsAJob registers the image's forgeload with a fake forge
// and runs one load job with daemon --once, /data a host directory.
func offlineImageRunsAJob(t *testing.T, image string) {
	t.Helper()
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	srv, hits := loadTarget(t)
	data := t.TempDir()
	if err := os.Chmod(data, 0o777); err != nil { // the image's user is uid 1000
		t.Fatal(err)
	}
	run := []string{"run", "--rm", "--network", "host", "--init", "-v", data + ":/data", image}
	docker(t, append(run, "register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--name", "offline")...)
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + srv.URL + "/\n          total: 5\n          thresholds: 'http_req_failed:rate < 1%'\n")})
	out := docker(t, append(run, "daemon", "--once")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done })
	if err != nil || v.Result != runnerv1.Result_RESULT_SUCCESS || hits.Load() != 5 {
		t.Errorf("the image's daemon --once: job %v (%v), target saw %d requests, want success and 5:\n%s\n%s", v.Result, err, hits.Load(), out, strings.Join(v.Log, "\n"))
	}
}
