package forgetest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// artifactClient speaks the artifact protocols with one task's runtime
// token, as the toolkit does.
type artifactClient struct {
	t     *testing.T
	f     *forgetest.Forge
	token string
	run   string
	job   string
}

func newArtifactClient(t *testing.T) *artifactClient {
	t.Helper()
	f := forgetest.New(t)
	c := register(t, f, []string{"forgeload"}, false)
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
	task := c.mustFetch(0).Task
	v := f.Task(id)
	return &artifactClient{t: t, f: f, token: task.Context.AsMap()["gitea_runtime_token"].(string), run: v.RunID, job: fmt.Sprint(v.JobID)}
}

// call sends body to url (relative to the forge when it starts with /)
// and returns the status, the Content-Encoding and the raw body.
func (c *artifactClient) call(method, url string, body []byte, hdr map[string]string) (int, string, []byte) {
	c.t.Helper()
	if strings.HasPrefix(url, "/") {
		url = c.f.URL() + url
	}
	r, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Encoding"), b
}

func (c *artifactClient) json(method, url string, body any, out any) int {
	c.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	code, _, got := c.call(method, url, b, map[string]string{"Content-Type": "application/json"})
	if code == http.StatusOK && out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, url, err, got)
		}
	}
	return code
}

// TestArtifactV3Download: the download half of the v3 protocol
// (download-artifact@v3) as Gitea serves it: no artifact is a 404; the
// list names each artifact with its download_url; that lists its files as
// <name>/<path>; each file comes as uploaded, a gzip one with
// Content-Encoding: gzip.
func TestArtifactV3Download(t *testing.T) {
	t.Parallel()
	c := newArtifactClient(t)
	route := strings.ReplaceAll(forgetest.ArtifactV3Route, "{run}", c.run)
	if code := c.json(http.MethodGet, route+"?api-version=6.0-preview", nil, nil); code != http.StatusNotFound {
		t.Fatalf("list with no artifact: %d, want 404", code)
	}
	var created struct{ FileContainerResourceURL string }
	if code := c.json(http.MethodPost, route, map[string]string{"Type": "actions_storage", "Name": "rep"}, &created); code != http.StatusOK {
		t.Fatalf("create: %d", code)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("zipped text"))
	_ = zw.Close()
	for _, f := range []struct {
		path, enc string
		data      []byte
	}{{"a.txt", "", []byte("plain")}, {"sub/b.txt", "gzip", gz.Bytes()}} {
		hdr := map[string]string{"Content-Range": fmt.Sprintf("bytes 0-%d/%d", len(f.data)-1, len(f.data)), "Content-Type": "application/octet-stream"}
		if f.enc != "" {
			hdr["Content-Encoding"] = f.enc
		}
		if code, _, b := c.call(http.MethodPut, created.FileContainerResourceURL+"?itemPath=rep/"+f.path, f.data, hdr); code != http.StatusOK {
			t.Fatalf("upload %s: %d %s", f.path, code, b)
		}
	}
	if code := c.json(http.MethodPatch, route+"?artifactName=rep", nil, nil); code != http.StatusOK {
		t.Fatalf("confirm: %d", code)
	}
	var list struct {
		Count int
		Value []struct{ Name, FileContainerResourceURL string }
	}
	if code := c.json(http.MethodGet, route+"?api-version=6.0-preview", nil, &list); code != http.StatusOK || list.Count != 1 || list.Value[0].Name != "rep" {
		t.Fatalf("list: %d %+v", code, list)
	}
	var items struct {
		Value []struct{ Path, ItemType, ContentLocation string }
	}
	if code := c.json(http.MethodGet, list.Value[0].FileContainerResourceURL+"?itemPath=rep", nil, &items); code != http.StatusOK || len(items.Value) != 2 {
		t.Fatalf("items: %d %+v", code, items)
	}
	want := map[string]string{"rep/a.txt": "plain", "rep/sub/b.txt": "zipped text"}
	for _, it := range items.Value {
		code, enc, b := c.call(http.MethodGet, it.ContentLocation, nil, nil)
		if enc == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(zr)
		}
		if code != http.StatusOK || it.ItemType != "file" || string(b) != want[it.Path] || (it.Path == "rep/sub/b.txt") != (enc == "gzip") {
			t.Errorf("%s (%s): %d, encoding %q, %q; want %q", it.Path, it.ItemType, code, enc, b, want[it.Path])
		}
	}
	if code := c.json(http.MethodGet, route+"/"+strings.Repeat("0", 32)+"/download_url?itemPath=rep", nil, nil); code != http.StatusBadRequest {
		t.Errorf("download_url with a hash of another name: %d, want 400", code)
	}
}

// TestArtifactV4Download: the download half of the v4 protocol
// (download-artifact@v4) as Gitea serves it: ListArtifacts lists the
// run's finalized artifacts (by name_filter too), GetSignedArtifactURL
// signs a DownloadArtifact URL that serves the zip, a tampered one is
// refused, and an artifact not finalized is not found.
func TestArtifactV4Download(t *testing.T) {
	t.Parallel()
	c := newArtifactClient(t)
	rpc := func(m string, body map[string]any, out any) int {
		body["workflow_run_backend_id"], body["workflow_job_run_backend_id"] = c.run, c.job
		return c.json(http.MethodPost, forgetest.ArtifactRoute+m, body, out)
	}
	data := []byte("PK zip bytes")
	for _, name := range []string{"done", "pending"} {
		var created struct{ SignedUploadURL string }
		if code := rpc("CreateArtifact", map[string]any{"name": name, "version": 4}, &created); code != http.StatusOK {
			t.Fatalf("create %s: %d", name, code)
		}
		if code, _, b := c.call(http.MethodPut, created.SignedUploadURL+"&comp=block", data, nil); code != http.StatusCreated {
			t.Fatalf("upload: %d %s", code, b)
		}
	}
	if code := rpc("FinalizeArtifact", map[string]any{"name": "done", "size": fmt.Sprint(len(data))}, nil); code != http.StatusOK {
		t.Fatalf("finalize: %d", code)
	}
	var list struct {
		Artifacts []struct{ Name, DatabaseID, Size, WorkflowRunBackendID string }
	}
	if code := rpc("ListArtifacts", map[string]any{}, &list); code != http.StatusOK || len(list.Artifacts) != 1 ||
		list.Artifacts[0].Name != "done" || list.Artifacts[0].Size != fmt.Sprint(len(data)) || list.Artifacts[0].WorkflowRunBackendID != c.run {
		t.Fatalf("list: %d %+v, want only the finalized artifact", code, list)
	}
	if code := rpc("ListArtifacts", map[string]any{"name_filter": "other"}, &list); code != http.StatusOK || len(list.Artifacts) != 0 {
		t.Fatalf("list by another name: %d %+v, want none", code, list)
	}
	var signed struct{ SignedURL string }
	if code := rpc("GetSignedArtifactURL", map[string]any{"name": "done"}, &signed); code != http.StatusOK || !strings.Contains(signed.SignedURL, "/DownloadArtifact?") {
		t.Fatalf("signed URL: %d %+v", code, signed)
	}
	if code, _, b := c.call(http.MethodGet, signed.SignedURL, nil, nil); code != http.StatusOK || !bytes.Equal(b, data) {
		t.Errorf("download: %d %q, want %q", code, b, data)
	}
	if code, _, _ := c.call(http.MethodGet, strings.Replace(signed.SignedURL, "artifactName=done", "artifactName=pending", 1), nil, nil); code != http.StatusUnauthorized {
		t.Errorf("download with the name changed: %d, want 401", code)
	}
	if code := rpc("GetSignedArtifactURL", map[string]any{"name": "pending"}, nil); code != http.StatusNotFound {
		t.Errorf("signed URL of an artifact not finalized: %d, want 404", code)
	}
}
