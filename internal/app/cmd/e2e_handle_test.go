package cmd

// `forgeload daemon --handle`: Forgejo 15's one-job flow against the fake
// forge's Forgejo flavor.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// waitingHandles reads the repository's waiting jobs as an autoscaler does
// (Forgejo's runner jobs list) and returns their handles in queue order.
func waitingHandles(t *testing.T, f *forgetest.Forge) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.URL()+"/api/v1/repos/forgeload/demo/actions/runners/jobs?labels=forgeload", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+f.AdminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var jobs []struct {
		Handle string `json:"handle"`
		Status string `json:"status"`
	}
	if err := json.NewDecoder(res.Body).Decode(&jobs); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("runner jobs list: HTTP %d, %v", res.StatusCode, err)
	}
	var hs []string
	for _, j := range jobs {
		if j.Status == "waiting" {
			hs = append(hs, j.Handle)
		}
	}
	return hs
}

// TestE2EDaemonHandle: with two waiting jobs, an ephemeral runner made for
// the second one's handle (as an autoscaler makes it) takes the second, not
// the oldest, runs it and exits 0; the fetch carries a request key.
func TestE2EDaemonHandle(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithForgejo())
	payload := []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo handled\n")
	first := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	second := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	hs := waitingHandles(t, f)
	if len(hs) != 2 || hs[1] != f.Task(second).Handle {
		t.Fatalf("waiting handles %v, want two, the second %s", hs, f.Task(second).Handle)
	}

	uuid, token := f.AddRunner("one-job", []string{"forgeload"})
	n := newNode(t, "")
	if code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--uuid", uuid, "--secret", token, "--ephemeral", "--connect", "--name", "one-job", "--wait", "20s"); code != 0 {
		t.Fatalf("register --uuid: exit %d\n%s", code, out)
	}
	d := n.startDaemon("--handle", hs[1])
	v := waitDone(t, f, second, d)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("daemon --handle exit %d after its job, want 0\n%s", code, d.out.String())
	}
	if v.Result != runnerv1.Result_RESULT_SUCCESS || v.Runner != uuid || !strings.Contains(strings.Join(v.Log, "\n"), "handled") {
		t.Fatalf("second job: %v by %s, log %q", v.Result, v.Runner, v.Log)
	}
	if f.Task(first).Picked {
		t.Fatalf("the first job was taken too\n%s", d.out.String())
	}
	if f.Calls("FetchTask") != 0 || f.LastHeader("FetchSingleTask").Get("x-runner-request-key") == "" {
		t.Fatalf("FetchTask calls %d (want 0), FetchSingleTask request key %q", f.Calls("FetchTask"), f.LastHeader("FetchSingleTask").Get("x-runner-request-key"))
	}
}

// TestE2EDaemonHandleRefused: an unknown handle fails at once with a
// message that says why and where the handles are, and takes no job; a
// forge without FetchSingleTask (Gitea) and an empty handle are exit 2.
func TestE2EDaemonHandleRefused(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithForgejo())
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo\n")})
	uuid, token := f.AddRunner("one-job", []string{"forgeload"})
	n := newNode(t, "")
	if code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--uuid", uuid, "--secret", token, "--connect", "--name", "one-job", "--wait", "20s"); code != 0 {
		t.Fatalf("register --uuid: exit %d\n%s", code, out)
	}
	d := n.startDaemon("--handle", "00000000-0000-4000-8000-000000000000")
	code := d.wait(t, 30*time.Second)
	out := d.out.String()
	if code != ExitFailure || !strings.Contains(out, "no job with this handle") || !strings.Contains(out, "actions/runners/jobs") {
		t.Fatalf("unknown handle: exit %d, want an error naming the handle list\n%s", code, out)
	}
	if f.Task(id).Picked {
		t.Fatal("an unknown handle took a job")
	}

	// The container's entrypoint passes FORGELOAD_HANDLE as --handle, and
	// keeps it out of the daemon's environment.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ep := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "deploy", "container", "entrypoint.sh"))
	ep.Env = []string{
		"PATH=" + filepath.Dir(binPath) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + n.dir, "FORGELOAD_DATA_DIR=" + n.dir, "FORGELOAD_CONFIG=" + n.cfg,
		"FORGELOAD_HANDLE=00000000-0000-4000-8000-000000000001",
	}
	epOut, err := ep.CombinedOutput()
	if err == nil || !strings.Contains(string(epOut), "daemon --handle 00000000-0000-4000-8000-000000000001") || strings.Contains(string(epOut), "ignoring environment variable") {
		t.Fatalf("entrypoint with FORGELOAD_HANDLE: %v\n%s", err, epOut)
	}

	if code, out := n.forgeload("daemon", "--handle", " "); code != ExitBadInput || !strings.Contains(out, "--handle is empty") {
		t.Fatalf("empty handle: exit %d\n%s", code, out)
	}

	g := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	ng := newNode(t, "")
	registered(t, g, ng, "gitea")
	if code, out := ng.forgeload("daemon", "--handle", "h"); code != ExitBadInput || !strings.Contains(out, "Forgejo 15") {
		t.Fatalf("--handle on Gitea: exit %d, want %d and a message naming Forgejo 15\n%s", code, ExitBadInput, out)
	}
}
