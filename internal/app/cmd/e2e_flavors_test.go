package cmd

// The core daemon tests, run against the fake forge in both its flavors:
// Gitea 1.27 and Forgejo (forgetest.WithForgejo). Each subtest registers a
// runner as that forge's admins do (a registration token on Gitea, the
// offline secret on Forgejo) and runs the real binary.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

var flavors = []forgetest.Flavor{forgetest.Gitea, forgetest.Forgejo}

// offlineSecret is a Forgejo runner secret: 40 hexadecimal characters.
const offlineSecret = "0123456789abcdef0123456789abcdef01234567"

// offlineUUID is the uuid Forgejo derives from offlineSecret: its first 16
// characters' ASCII codes as the uuid's bytes ("0" is 0x30, "a" 0x61).
const offlineUUID = "30313233-3435-3637-3839-616263646566"

// flavorForge starts a fake forge of flavor fl with the registration token
// reg-token, and registers node n with it as that forge's admins do: with
// the token on Gitea, with the offline secret on Forgejo (the forge side
// as `forgejo forgejo-cli actions register --secret`, then
// `forgeload register --secret --connect`).
func flavorForge(t *testing.T, fl forgetest.Flavor, n *node, name string, opts ...forgetest.Option) *forgetest.Forge {
	t.Helper()
	f := forgetest.New(t, append([]forgetest.Option{forgetest.WithFlavor(fl), forgetest.WithRegistrationToken("reg-token")}, opts...)...)
	if fl == forgetest.Gitea {
		registered(t, f, n, name)
		return f
	}
	// A secret of its own: the uuid (and so the task directories' folder
	// in the shared work dir) follows from it, and two daemons of one
	// uuid would each take the other's live task directories for a killed
	// predecessor's and remove them.
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	secret := hex.EncodeToString(b)
	if _, err := f.RegisterSecret(secret, name, []string{"forgeload"}); err != nil {
		t.Fatal(err)
	}
	code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--secret", secret, "--connect", "--name", name, "--wait", "20s")
	if code != 0 {
		t.Fatalf("register --secret exit %d:\n%s", code, out)
	}
	return f
}

// TestE2EFlavorsRegister: a registration token works on both forges
// (from --token and from GITEA_RUNNER_REGISTRATION_TOKEN), and on Forgejo
// the offline secret gives the runner the uuid Forgejo derives and the
// secret as its token.
func TestE2EFlavorsRegister(t *testing.T) {
	parallel(t)
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			parallelSub(t)
			f := forgetest.New(t, forgetest.WithFlavor(fl), forgetest.WithRegistrationToken("reg-token"))
			n := newNode(t, "")
			registered(t, f, n, "reg-"+fl.String())
			if rs := f.Runners(); len(rs) != 1 || rs[0].Name != "reg-"+fl.String() {
				t.Fatalf("forge runners after register --token: %+v", rs)
			}

			n2 := newNode(t, "")
			code, out := n2.forgeloadEnv([]string{"GITEA_RUNNER_REGISTRATION_TOKEN=reg-token"}, "register", "--no-interactive", "--instance", f.URL(), "--name", "env-token", "--wait", "20s")
			if code != 0 || len(f.Runners()) != 2 {
				t.Fatalf("register with GITEA_RUNNER_REGISTRATION_TOKEN: exit %d, runners %+v\n%s", code, f.Runners(), out)
			}
		})
	}
	t.Run("forgejo-secret", func(t *testing.T) {
		parallelSub(t)
		f := forgetest.New(t, forgetest.WithForgejo())
		n := newNode(t, "")
		// Before the admin registered the secret, --connect refuses.
		code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--secret", offlineSecret, "--connect", "--wait", "20s")
		if code != ExitBadInput || !strings.Contains(out, "forgejo-cli actions register") || strings.Contains(out, offlineSecret) {
			t.Fatalf("register --secret --connect before the forge knows it: exit %d\n%s", code, out)
		}
		if _, err := os.Stat(n.file); !os.IsNotExist(err) {
			t.Fatalf("a refused register --connect wrote %s (stat: %v)", n.file, err)
		}
		uuid, err := f.RegisterSecret(offlineSecret, "offline", []string{"forgeload"})
		if err != nil || uuid != offlineUUID {
			t.Fatalf("forge side: uuid %q (%v), want %s", uuid, err, offlineUUID)
		}
		code, out = n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--secret", offlineSecret, "--connect", "--name", "offline", "--wait", "20s")
		if code != 0 {
			t.Fatalf("register --secret: exit %d\n%s", code, out)
		}
		var reg struct{ UUID, Token string }
		data, _ := os.ReadFile(n.file)
		if err := json.Unmarshal(data, &reg); err != nil || reg.UUID != offlineUUID || reg.Token != offlineSecret {
			t.Fatalf(".runner = %s (%v), want uuid %s and the secret as token", data, err, offlineUUID)
		}
		if f.Calls("Register") != 0 {
			t.Errorf("offline registration called Register %d times", f.Calls("Register"))
		}
		// A runner the forge made itself (Forgejo 15's autoscaler flow:
		// POST .../actions/runners answers uuid and token): --uuid takes
		// it as it is, ephemeral, and the daemon runs one job and exits.
		madeUUID, madeToken := f.AddRunner("made", []string{"forgeload"})
		n4 := newNode(t, "")
		code, out = n4.forgeload("register", "--no-interactive", "--instance", f.URL(), "--uuid", madeUUID, "--secret", madeToken, "--ephemeral", "--connect", "--name", "made", "--wait", "20s")
		if code != 0 {
			t.Fatalf("register --uuid: exit %d\n%s", code, out)
		}
		d := n4.startDaemon()
		id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo one-job\n")})
		if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS || v.Runner != madeUUID {
			t.Fatalf("one job: %v by %s, want success by %s", v.Result, v.Runner, madeUUID)
		}
		if code := d.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("daemon of an ephemeral registration exit %d after its job, want 0\n%s", code, d.out.String())
		}
		for _, bad := range [][]string{
			{"--secret", "0123"},
			{"--secret", strings.Repeat("z", 40)},
			{"--secret", offlineSecret, "--token", "reg-token"},
			{"--secret", offlineSecret, "--ephemeral"},
			{"--uuid", offlineUUID},
		} {
			n3 := newNode(t, "")
			code, out := n3.forgeload(append([]string{"register", "--no-interactive", "--instance", f.URL()}, bad...)...)
			if code != ExitBadInput || strings.Contains(out, offlineSecret) && !strings.Contains(strings.Join(bad, " "), "--token") {
				t.Errorf("register %v: exit %d, want %d without echoing the secret\n%s", bad, code, ExitBadInput, out)
			}
		}
	})
}

// TestE2EFlavorsRunJob: a job runs to success with its log rows
// acknowledged and archived, its step states and its outputs stored, and a
// cancelled job ends CANCELLED with its log archived, on both forges.
func TestE2EFlavorsRunJob(t *testing.T) {
	parallel(t)
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			parallelSub(t)
			tg := newTarget(t)
			n := newNode(t, "")
			f := flavorForge(t, fl, n, "run-"+fl.String())
			d := n.startDaemon()
			payload := "on: push\njobs:\n  perf:\n    runs-on: forgeload\n    outputs:\n      p99: ${{ steps.api.outputs.p99_ms }}\n    steps:\n" +
				"      - run: for i in $(seq 1 150); do echo \"row-$i\"; done\n" +
				"      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 20\n"
			id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)})
			v := waitDone(t, f, id, d)
			log := strings.Join(v.Log, "\n")
			if v.Result != runnerv1.Result_RESULT_SUCCESS || !v.Archived {
				t.Fatalf("job: %v, archived %v\n%s\ndaemon:\n%s", v.Result, v.Archived, log, d.out.String())
			}
			if !strings.Contains(log, "row-1\n") || !strings.Contains(log, "row-150") {
				t.Errorf("the forge's log lacks the step's rows:\n%s", log)
			}
			for i, s := range v.Steps {
				if s.Result != runnerv1.Result_RESULT_SUCCESS || s.LogLength == 0 {
					t.Errorf("step %d: %+v", i, s)
				}
			}
			if v.Outputs["p99"] == "" {
				t.Errorf("job outputs %v, want p99", v.Outputs)
			}

			id = f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo started; sleep 60\n      - if: always()\n        run: echo cleanup-ran\n")})
			waitFor(t, "the job to start", 30*time.Second, func() bool { return strings.Contains(strings.Join(f.Task(id).Log, "\n"), "started") })
			cancelAt := time.Now()
			f.Cancel(id)
			v = waitDone(t, f, id, d)
			if v.Result != runnerv1.Result_RESULT_CANCELLED || !v.Archived {
				t.Fatalf("cancelled job: %v, archived %v\n%s", v.Result, v.Archived, strings.Join(v.Log, "\n"))
			}
			if took := time.Since(cancelAt); took > 20*time.Second {
				t.Errorf("the cancelled job took %s to end", took)
			}
		})
	}
}

// TestE2EFlavorsBaseline: baseline: reads the previous run's result
// through each forge's REST API (Forgejo's lists runs of every branch and
// artifacts as a bare array), and a Forgejo without the artifact API fails
// the step's baseline with a message naming the endpoint it lacks.
func TestE2EFlavorsBaseline(t *testing.T) {
	parallel(t)
	var slow atomic.Int64
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Duration(slow.Load()))
	}))
	t.Cleanup(tg.Close)
	payload := []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 40\n          concurrency: 4\n          baseline: main\n          thresholds: |\n            http_req_duration:p99 < baseline * 100\n")
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			parallelSub(t)
			n := newNode(t, "")
			f := flavorForge(t, fl, n, "base-"+fl.String())
			d := n.startDaemon()
			first := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
				Context: map[string]any{"run_id": "1", "ref": "refs/heads/main"}}), d)
			// A newer successful run on another branch: Forgejo lists it
			// too, and it must not be taken as main's baseline.
			other := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
				Context: map[string]any{"run_id": "2", "ref": "refs/heads/other"}}), d)
			if first.Result != runnerv1.Result_RESULT_SUCCESS || other.Result != runnerv1.Result_RESULT_SUCCESS {
				t.Fatalf("runs without a baseline: %v, %v\n%s", first.Result, other.Result, strings.Join(other.Log, "\n"))
			}
			third := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
				Context: map[string]any{"run_id": "3", "ref": "refs/heads/feature"}}), d)
			log := strings.Join(third.Log, "\n")
			if third.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, `baseline: the forgeload-perf-api result of run 1 (workflow "load.yaml", branch "main")`) {
				t.Fatalf("run against main's baseline: %v\n%s", third.Result, log)
			}
		})
	}
	t.Run("forgejo-without-artifact-api", func(t *testing.T) {
		parallelSub(t)
		n := newNode(t, "")
		f := flavorForge(t, forgetest.Forgejo, n, "base-noapi", forgetest.WithoutArtifactAPI())
		d := n.startDaemon()
		first := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
			Context: map[string]any{"run_id": "1", "ref": "refs/heads/main"}}), d)
		if first.Result != runnerv1.Result_RESULT_SUCCESS {
			// The second run finds main's run only if this one succeeded.
			t.Fatalf("main's run without a baseline: %v\n%s", first.Result, strings.Join(first.Log, "\n"))
		}
		v := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
			Context: map[string]any{"run_id": "2", "ref": "refs/heads/feature"}}), d)
		log := strings.Join(v.Log, "\n")
		if !strings.Contains(log, "this forge does not serve GET /api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts") {
			t.Fatalf("baseline on a Forgejo without the artifact API: %v, log lacks the missing endpoint:\n%s", v.Result, log)
		}
	})
}
