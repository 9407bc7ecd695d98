package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// cacheWorkflow saves an entry with curl in one job, speaking the cache
// API as actions/cache does, and restores it in a later job by a restore
// key; the first job's URL is left in $SHARE for the second to try.
const cacheWorkflow = `on: push
jobs:
  save:
    runs-on: x
    steps:
      - run: |
          set -eu
          api="${ACTIONS_CACHE_URL}_apis/artifactcache"
          id=$(curl -sSf -X POST -H 'Content-Type: application/json' -d '{"key":"deps-abc","version":"v1","cacheSize":11}' "$api/caches" | sed 's/.*"cacheId":\([0-9]*\).*/\1/')
          printf 'hello cache' | curl -sSf -X PATCH -H 'Content-Type: application/octet-stream' -H 'Content-Range: bytes 0-10/*' --data-binary @- "$api/caches/$id"
          curl -sSf -X POST -H 'Content-Type: application/json' -d '{"size":11}' "$api/caches/$id"
          printf '%s' "$ACTIONS_CACHE_URL" > "$SHARE/url"
          echo "the cache is at $ACTIONS_CACHE_URL"
  restore:
    needs: save
    runs-on: x
    steps:
      - run: |
          set -eu
          api="${ACTIONS_CACHE_URL}_apis/artifactcache"
          loc=$(curl -sSf "$api/cache?keys=deps-xyz,deps-&version=v1" | sed 's/.*"archiveLocation":"\([^"]*\)".*/\1/')
          test "$(curl -sSf "$loc")" = "hello cache" && echo RESTORED-OK
          echo "miss=$(curl -s -o /dev/null -w '%{http_code}' "$api/cache?keys=nothing&version=v1")"
          echo "other version=$(curl -s -o /dev/null -w '%{http_code}' "$api/cache?keys=deps-abc&version=v2")"
          echo "ended job's URL=$(curl -s -o /dev/null -w '%{http_code}' "$(cat "$SHARE/url")_apis/artifactcache/cache?keys=deps-abc&version=v1")"
`

// TestE2EExecCache: with cache.enabled, forgeload exec serves the
// actions/cache API to its jobs: a job saves an entry, a later job
// restores it by a restore key, a key or version not saved misses, the
// URL (a secret) is masked in the log and dies with its job. Before, jobs
// had no ACTIONS_CACHE_URL.
func TestE2EExecCache(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	dir, share := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	conf := "runner:\n  envs:\n    SHARE: " + share + "\ncache:\n  enabled: true\n  host: 127.0.0.1\n  dir: " + filepath.Join(dir, "cache") + "\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte(cacheWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "-c", cfg, "exec", wf)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("forgeload exec: %v\n%s", err, out)
	}
	for _, want := range []string{"RESTORED-OK", "miss=204", "other version=204", "ended job's URL=403", "the cache is at http://127.0.0.1:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	url, err := os.ReadFile(filepath.Join(share, "url"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSuffix(string(url)[strings.LastIndex(strings.TrimSuffix(string(url), "/"), "/")+1:], "/")
	if len(token) < 32 || strings.Contains(string(out), token) {
		t.Errorf("the URL's token %q is shown in the log:\n%s", token, out)
	}
}

// TestE2EDaemonCache: with cache.enabled, the daemon starts the cache
// server, and a job it runs saves and restores through ACTIONS_CACHE_URL.
// Before, the daemon had no cache.
func TestE2EDaemonCache(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "cache:\n  enabled: true\n  host: 127.0.0.1\n  dir: "+filepath.Join(t.TempDir(), "cache")+"\n")
	registered(t, f, n, "e2e-cache")
	payload := []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: |
          set -eu
          api="${ACTIONS_CACHE_URL}_apis/artifactcache"
          id=$(curl -sSf -X POST -d '{"key":"k-1","version":"v"}' "$api/caches" | sed 's/.*"cacheId":\([0-9]*\).*/\1/')
          printf 'cached' | curl -sSf -X PATCH -H 'Content-Range: bytes 0-5/*' --data-binary @- "$api/caches/$id"
          curl -sSf -X POST -d '{"size":6}' "$api/caches/$id"
          loc=$(curl -sSf "$api/cache?keys=k-&version=v" | sed 's/.*"archiveLocation":"\([^"]*\)".*/\1/')
          echo "restored=$(curl -sSf "$loc")"
`)
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	d := n.startDaemon("--once")
	if code := d.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("daemon --once exit %d:\n%s", code, d.out.String())
	}
	v := f.Task(id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "restored=cached") {
		t.Fatalf("task result %v; log:\n%s\ndaemon:\n%s", v.Result, log, d.out.String())
	}
}
