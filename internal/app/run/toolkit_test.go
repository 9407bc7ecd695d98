package run

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/actcache"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// uploadV3 uploads one file in two chunks with the protocol of
// actions/upload-artifact@v3 (the toolkit's @actions/artifact 1.x), using
// only the job's env and Node's built-in http, as that action would.
const uploadV3 = `const http = require('http');
const {ACTIONS_RUNTIME_URL: base, ACTIONS_RUNTIME_TOKEN: token, GITHUB_RUN_ID: run} = process.env;
function call(method, url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(url), {method, headers: {Authorization: 'Bearer ' + token, Accept: 'application/json;api-version=6.0-preview', ...headers}}, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => res.statusCode < 300 ? resolve(text) : reject(new Error(method + ' ' + url + ': ' + res.statusCode + ' ' + text)));
    });
    req.on('error', reject);
    req.end(body);
  });
}
(async () => {
  const api = base + '_apis/pipelines/workflows/' + run + '/artifacts?api-version=6.0-preview';
  const created = JSON.parse(await call('POST', api, JSON.stringify({Type: 'actions_storage', Name: 'report'}), {'Content-Type': 'application/json'}));
  const data = Buffer.from('hello from upload-artifact v3');
  const put = (s, e) => call('PUT', created.fileContainerResourceUrl + '?itemPath=' + encodeURIComponent('report/out/result.txt'), data.subarray(s, e + 1),
    {'Content-Type': 'application/octet-stream', 'Content-Range': 'bytes ' + s + '-' + e + '/' + data.length, 'x-tfs-filelength': String(data.length)});
  await put(0, 9);
  await put(10, data.length - 1);
  await call('PATCH', api + '&artifactName=report', '', {'Content-Type': 'application/json'});
  console.log('UPLOADED-V3');
})().catch((e) => { console.error(e.message); process.exit(1); });
`

// TestToolkitArtifactV3: the toolkit's runtime variables a job gets
// (ACTIONS_RUNTIME_URL, ACTIONS_RUNTIME_TOKEN, GITHUB_RUN_ID) are those
// Gitea's artifact protocol of upload-artifact@v3 takes: a Node script
// speaking it uploads an artifact the forge confirms.
func TestToolkitArtifactV3(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("needs node")
	}
	h := newHarness(t)
	payload := "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: |\n          cat > up.js <<'JS'\n" +
		indent(uploadV3, "          ") + "          JS\n          " + node + " up.js\n"
	v := h.run(payload, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "log", logText(v), "UPLOADED-V3")
	arts := h.forge.Artifacts()
	if len(arts) != 1 || arts[0].Name != "report" || !arts[0].Confirmed || string(arts[0].Files["out/result.txt"]) != "hello from upload-artifact v3" {
		t.Fatalf("artifacts = %+v, want report confirmed with out/result.txt", arts)
	}
}

func indent(s, by string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "")
}

// TestCacheInDaemonJobs: a job the forge hands over gets ACTIONS_CACHE_URL
// for its repository: what one job of the repository saves, the next
// restores, and a job of another repository does not find it.
func TestCacheInDaemonJobs(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	srv, err := actcache.Listen(actcache.Options{Dir: t.TempDir(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	h := newHarness(t)
	o := Options{}
	o.Cache = srv
	save := `on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          set -eu
          api="${ACTIONS_CACHE_URL}_apis/artifactcache"
          id=$(curl -sSf -X POST -d '{"key":"k-1","version":"v"}' "$api/caches" | sed 's/.*"cacheId":\([0-9]*\).*/\1/')
          printf 'cached' | curl -sSf -X PATCH -H 'Content-Range: bytes 0-5/*' --data-binary @- "$api/caches/$id"
          curl -sSf -X POST -d '{"size":6}' "$api/caches/$id"
`
	restore := `on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          api="${ACTIONS_CACHE_URL}_apis/artifactcache"
          echo "lookup=$(curl -s -o /dev/null -w '%{http_code}' "$api/cache?keys=k-&version=v")"
`
	repo := func(r string) func(*forgetest.Job) {
		return func(j *forgetest.Job) { j.Context = map[string]any{"repository": r} }
	}
	if v := h.run(save, o, repo("o/app")); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("save: %v\n%s", v.Result, logText(v))
	}
	wantContains(t, "same repository", logText(h.run(restore, o, repo("o/app"))), "lookup=200")
	wantContains(t, "other repository", logText(h.run(restore, o, repo("o/other"))), "lookup=204")
}
