package forgetest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// lfsGit runs git (and the git-lfs it starts) in dir with no system or
// global config, the LFS filter configured, and the token (when set) in
// an Authorization header for the forge's URLs, as the runner's checkout
// sends it.
func lfsGit(t *testing.T, f *forgetest.Forge, dir, token string, args ...string) (string, error) {
	t.Helper()
	cfg := [][2]string{
		{"filter.lfs.process", "git-lfs filter-process"},
		{"filter.lfs.required", "true"},
		{"filter.lfs.clean", "git-lfs clean -- %f"},
		{"filter.lfs.smudge", "git-lfs smudge -- %f"},
		{"lfs.locksverify", "true"},
		{"user.name", "t"}, {"user.email", "t@example.com"},
	}
	if token != "" {
		cfg = append(cfg, [2]string{"http." + f.URL() + "/.extraheader", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+token))})
	}
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+t.TempDir(),
		"GIT_TERMINAL_PROMPT=0", fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for n, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLFSWithGitLFS: the real git-lfs client downloads an object the
// forge holds when it clones (smudge), fails naming the object the forge
// does not have, uploads one with git lfs push through the batch API,
// and is refused without the task token. Before, the forge had no LFS
// server: every clone of an LFS file failed.
func TestLFSWithGitLFS(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Fatal("git-lfs is not installed: apt-get install git-lfs (.ci/run installs it)")
	}
	f := forgetest.New(t)
	content := []byte(strings.Repeat("big binary\n", 1000))
	pointer, err := f.AddLFSObject("o/r", content)
	if err != nil {
		t.Fatal(err)
	}
	missing, missingOID := forgetest.LFSPointer([]byte("never uploaded\n"))
	attrs := "*.bin filter=lfs diff=lfs merge=lfs -text\n"
	if _, err := f.AddRepo("o/r", map[string]string{".gitattributes": attrs, "data.bin": pointer}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddActionRepo("o/gone", forgetest.Commit{Files: map[string]string{".gitattributes": attrs, "data.bin": missing}}); err != nil {
		t.Fatal(err)
	}
	token := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Payload: []byte("jobs:\n  j:\n    runs-on: x\n    steps:\n      - run: echo\n")})).Token

	dir := t.TempDir()
	if out, err := lfsGit(t, f, dir, token, "clone", "-q", f.URL()+"/o/r.git", "r"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "r", "data.bin")); string(got) != string(content) {
		t.Fatalf("data.bin after clone = %.80q, want the object's content", got)
	}
	out, err := lfsGit(t, f, dir, token, "clone", "-q", f.URL()+"/o/gone.git", "gone")
	if err == nil || !strings.Contains(out, missingOID) || !strings.Contains(out, "[404] Not Found") {
		t.Fatalf("clone of a missing object: err %v, output:\n%s\nwant a failure naming the missing object", err, out)
	}
	if out, err := lfsGit(t, f, dir, "", "clone", "-q", f.URL()+"/o/r.git", "anon"); err == nil {
		t.Fatalf("clone without the token succeeded:\n%s", out)
	}

	// Upload: a new object committed locally goes up with git lfs push.
	up := []byte("uploaded object\n")
	repo := filepath.Join(dir, "r")
	if err := os.WriteFile(filepath.Join(repo, "new.bin"), up, 0o644); err != nil {
		t.Fatal(err)
	}
	_, oid := forgetest.LFSPointer(up)
	for _, args := range [][]string{{"add", "new.bin"}, {"commit", "-q", "-m", "new"}, {"lfs", "push", "--object-id", "origin", oid}} {
		if out, err := lfsGit(t, f, repo, token, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if got := batch(t, f, "o/r", token, "download", oid, len(up)); got.Objects[0].Error != nil || got.Objects[0].Actions["download"] == nil {
		t.Fatalf("after git lfs push, the batch answers %+v, want a download action", got.Objects[0])
	}
	if got := get(t, f, "/o/r.git/info/lfs/objects/"+oid, token, ""); got != string(up) {
		t.Fatalf("download after the push = %q, want %q", got, up)
	}
}

type batchAnswer struct {
	Objects []struct {
		Oid     string `json:"oid"`
		Size    int    `json:"size"`
		Actions map[string]*struct {
			Href   string            `json:"href"`
			Header map[string]string `json:"header"`
		} `json:"actions"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"objects"`
}

// lfsDo sends an LFS API request and returns its status, headers and body.
func lfsDo(t *testing.T, f *forgetest.Forge, method, path, token, accept, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
		req.Header.Set("Content-Type", accept)
	}
	if token != "" {
		req.SetBasicAuth("x-access-token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func batch(t *testing.T, f *forgetest.Forge, repo, token, op, oid string, size int) batchAnswer {
	t.Helper()
	code, h, body := lfsDo(t, f, "POST", "/"+repo+".git/info/lfs/objects/batch", token, forgetest.LFSMediaType,
		fmt.Sprintf(`{"operation":%q,"transfers":["basic"],"objects":[{"oid":%q,"size":%d}]}`, op, oid, size))
	if code != http.StatusOK || h.Get("Content-Type") != forgetest.LFSMediaType {
		t.Fatalf("batch %s %s: %d %s %s", op, oid, code, h.Get("Content-Type"), body)
	}
	var a batchAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Objects) != 1 {
		t.Fatalf("batch answer %s: %v", body, err)
	}
	return a
}

func get(t *testing.T, f *forgetest.Forge, path, token, rng string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", f.URL()+path, nil)
	req.SetBasicAuth("x", token)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestLFSAnswersAsGitea: the batch API's and transfer URLs' answers, as
// Gitea gives them: the LFS media type, a per-object 404 for an object
// the repository lacks and 422 for a malformed one, 415 without the
// Accept header, 401 with WWW-Authenticate without a running task's
// token (and for an upload with a read-only one), 404 for an unknown
// repository, upload and verify actions only for what is not stored yet,
// an upload whose content does not match its oid refused, and ranges.
func TestLFSAnswersAsGitea(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	content := []byte("0123456789")
	if _, err := f.AddLFSObject("o/r", content); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddRepo("o/r", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	_, oid := forgetest.LFSPointer(content)
	_, absent := forgetest.LFSPointer([]byte("absent"))
	payload := []byte("jobs:\n  j:\n    runs-on: x\n    steps:\n      - run: echo\n")
	token := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Payload: payload})).Token
	ro := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Payload: payload, ReadOnlyToken: true})).Token

	d := batch(t, f, "o/r", token, "download", oid, len(content)).Objects[0]
	if d.Error != nil || d.Actions["download"] == nil || d.Actions["download"].Href != f.URL()+"/o/r.git/info/lfs/objects/"+oid ||
		!strings.HasPrefix(d.Actions["download"].Header["Authorization"], "Basic ") {
		t.Errorf("download of a stored object: %+v", d)
	}
	if m := batch(t, f, "o/r", token, "download", absent, 6).Objects[0]; m.Error == nil || m.Error.Code != 404 || m.Actions != nil {
		t.Errorf("download of an absent object: %+v, want a per-object 404 error", m)
	}
	if m := batch(t, f, "o/r", token, "download", "xyz", 1).Objects[0]; m.Error == nil || m.Error.Code != 422 {
		t.Errorf("download of a malformed oid: %+v, want a per-object 422", m)
	}
	if m := batch(t, f, "o/r", token, "download", oid, 3).Objects[0]; m.Error == nil || m.Error.Code != 422 {
		t.Errorf("download with the wrong size: %+v, want a per-object 422", m)
	}
	if u := batch(t, f, "o/r", token, "upload", oid, len(content)).Objects[0]; u.Error != nil || len(u.Actions) != 0 {
		t.Errorf("upload of a stored object: %+v, want no action", u)
	}
	u := batch(t, f, "o/r", token, "upload", absent, 6).Objects[0]
	if u.Actions["upload"] == nil || u.Actions["verify"] == nil || u.Actions["upload"].Href != f.URL()+"/o/r.git/info/lfs/objects/"+absent+"/6" {
		t.Errorf("upload of a new object: %+v, want upload and verify actions", u)
	}

	body := `{"operation":"download","objects":[]}`
	for _, tc := range []struct {
		name, method, path, token, accept, body string
		code                                    int
	}{
		{"no Accept", "POST", "/o/r.git/info/lfs/objects/batch", token, "", body, 415},
		{"no token", "POST", "/o/r.git/info/lfs/objects/batch", "", forgetest.LFSMediaType, body, 401},
		{"wrong token", "POST", "/o/r.git/info/lfs/objects/batch", "nope", forgetest.LFSMediaType, body, 401},
		{"read-only upload", "POST", "/o/r.git/info/lfs/objects/batch", ro, forgetest.LFSMediaType, `{"operation":"upload","objects":[]}`, 401},
		{"read-only download", "POST", "/o/r/info/lfs/objects/batch", ro, forgetest.LFSMediaType, body, 200},
		{"unknown repository", "POST", "/o/none.git/info/lfs/objects/batch", token, forgetest.LFSMediaType, body, 404},
		{"bad operation", "POST", "/o/r.git/info/lfs/objects/batch", token, forgetest.LFSMediaType, `{"operation":"delete","objects":[]}`, 400},
		{"download without token", "GET", "/o/r.git/info/lfs/objects/" + oid, "", "", "", 401},
		{"download of an absent object", "GET", "/o/r.git/info/lfs/objects/" + absent, token, "", "", 404},
		{"upload of other content", "PUT", "/o/r.git/info/lfs/objects/" + absent + "/6", token, "", "abcdef", 422},
		{"verify before the upload", "POST", "/o/r.git/info/lfs/verify", token, forgetest.LFSMediaType, `{"oid":"` + absent + `","size":6}`, 404},
		{"upload", "PUT", "/o/r.git/info/lfs/objects/" + absent + "/6", token, "", "absent", 200},
		{"verify after the upload", "POST", "/o/r.git/info/lfs/verify", token, forgetest.LFSMediaType, `{"oid":"` + absent + `","size":6}`, 200},
		{"lock check", "POST", "/o/r.git/info/lfs/locks/verify", token, forgetest.LFSMediaType, `{}`, 200},
		{"unknown LFS route", "GET", "/o/r.git/info/lfs/nothing", token, "", "", 404},
	} {
		code, h, got := lfsDo(t, f, tc.method, tc.path, tc.token, tc.accept, tc.body)
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, got, tc.code)
		}
		if code == 401 && h.Get("WWW-Authenticate") != "Basic realm=gitea-lfs" {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, h.Get("WWW-Authenticate"))
		}
		if code >= 400 && tc.name != "unknown LFS route" && (h.Get("Content-Type") != forgetest.LFSMediaType || !strings.Contains(got, `"message"`)) {
			t.Errorf("%s: error answer %s %q, want Gitea's {\"message\"} in the LFS media type", tc.name, h.Get("Content-Type"), got)
		}
	}
	if got := get(t, f, "/o/r.git/info/lfs/objects/"+oid+"/name.bin", token, "bytes=2-4"); got != "234" {
		t.Errorf("ranged download = %q, want 234", got)
	}
	var authed int
	for _, r := range f.LFSRequests() {
		if r.Authed {
			authed++
		}
	}
	if authed == 0 || authed == len(f.LFSRequests()) {
		t.Errorf("LFSRequests: %d of %d carried a task token, want some and not all", authed, len(f.LFSRequests()))
	}
}
