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

// uploadV4 uploads one artifact with the protocol of
// actions/upload-artifact@v4 (the toolkit's @actions/artifact 2.x): the
// run and job ids from the runtime token's scope, CreateArtifact and
// FinalizeArtifact at ACTIONS_RESULTS_URL's origin, the data as a block
// and a block list at the signed URL.
const uploadV4 = `const http = require('http');
const crypto = require('crypto');
const {ACTIONS_RESULTS_URL: results, ACTIONS_RUNTIME_TOKEN: token} = process.env;
function call(method, url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(url), {method, headers}, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => res.statusCode < 300 ? resolve(text) : reject(new Error(method + ' ' + url + ': ' + res.statusCode + ' ' + text)));
    });
    req.on('error', reject);
    req.end(body);
  });
}
(async () => {
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  const [, run, job] = claims.scp.split(' ').find((s) => s.startsWith('Actions.Results:')).split(':');
  const rpc = (m, body) => call('POST', new URL(results).origin + '/twirp/github.actions.results.api.v1.ArtifactService/' + m,
    JSON.stringify(body), {'Content-Type': 'application/json', Authorization: 'Bearer ' + token}).then(JSON.parse);
  const ids = {workflow_run_backend_id: run, workflow_job_run_backend_id: job, name: 'report4'};
  const created = await rpc('CreateArtifact', {...ids, version: 4});
  const signed = created.signed_upload_url || created.signedUploadUrl;
  const data = Buffer.from('hello from upload-artifact v4');
  const block = Buffer.from('block-000001').toString('base64');
  await call('PUT', signed + '&comp=block&blockid=' + encodeURIComponent(block), data, {'x-ms-blob-type': 'BlockBlob'});
  await call('PUT', signed + '&comp=blocklist', '<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>' + block + '</Latest></BlockList>', {});
  const hash = crypto.createHash('sha256').update(data).digest('hex');
  await rpc('FinalizeArtifact', {...ids, size: String(data.length), hash: 'sha256:' + hash});
  console.log('UPLOADED-V4');
})().catch((e) => { console.error(e.message); process.exit(1); });
`

// TestToolkitArtifactV4: ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are
// what Gitea's artifact protocol of upload-artifact@v4 takes: a Node
// script speaking it uploads an artifact the forge confirms.
func TestToolkitArtifactV4(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("needs node")
	}
	h := newHarness(t)
	payload := "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: |\n          cat > up.js <<'JS'\n" +
		indent(uploadV4, "          ") + "          JS\n          " + node + " up.js\n"
	v := h.run(payload, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "log", logText(v), "UPLOADED-V4")
	arts := h.forge.Artifacts()
	if len(arts) != 1 || arts[0].Name != "report4" || !arts[0].Confirmed || string(arts[0].Data) != "hello from upload-artifact v4" {
		t.Fatalf("artifacts = %+v, want report4 confirmed", arts)
	}
}
