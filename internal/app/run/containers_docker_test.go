package run

import (
	"context"
	"fmt"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
)

// dockerOptions are runner options for a job on this machine's Docker
// Engine, with the test image and under a fresh owner.
func dockerOptions(t *testing.T) (Options, *container.Engine, string) {
	t.Helper()
	eng := containertest.Engine(t)
	return Options{Config: jobrun.Config{Containers: eng, PullPolicy: container.PullNever}}, eng, containertest.Image(t)
}

// capDACReadSearch is CAP_DAC_READ_SEARCH's bit in /proc/<pid>/status.
const capDACReadSearch = 1 << 2

// capEff reads the CapEff line a step printed from /proc/self/status.
func capEff(t *testing.T, log string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`CapEff:\s*([0-9a-f]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the log has no CapEff line:\n%s", log)
	}
	n, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// --cap-add DAC_READ_SEARCH (with which a job read any file of the host)
// fails the job, naming the flag and the key, before anything starts;
// once the admin lists it, the capability is really in the container's
// effective set, and --cap-drop still takes one away.
func TestJobContainerCapabilityPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	o, _, img := dockerOptions(t)
	job := fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
      options: --cap-add DAC_READ_SEARCH --cap-drop CHOWN
    steps:
      - run: grep CapEff /proc/self/status
`, img)
	v := h.run(job, o)
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("unlisted --cap-add: %v, want failure\n%s", v.Result, log)
	}
	wantContains(t, "the job log", log, "container: options: --cap-add DAC_READ_SEARCH is not allowed on this runner: a capability widens what the container can do to the host; the runner's admin can allow it by adding DAC_READ_SEARCH to container.allowed_capabilities")
	if strings.Contains(log, "CapEff") {
		t.Fatalf("the step ran:\n%s", log)
	}

	o.OptionsPolicy = container.Policy{Capabilities: []string{"DAC_READ_SEARCH"}}
	v = h.run(job, o)
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("listed --cap-add: %v\n%s", v.Result, log)
	}
	const capChown = 1 << 0
	if c := capEff(t, log); c&capDACReadSearch == 0 || c&capChown != 0 {
		t.Fatalf("CapEff = %#x, want CAP_DAC_READ_SEARCH (%#x) set and CAP_CHOWN (%#x) dropped\n%s", c, capDACReadSearch, capChown, log)
	}
}

// Every container of a job, the job container and its services, runs with
// no-new-privileges: no setuid binary or file capability in an image gives
// its processes more than they started with. The service's health check
// passes only when its main process has NoNewPrivs: 1.
func TestContainersRunWithNoNewPrivileges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	o, _, img := dockerOptions(t)
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    services:
      api:
        image: %s
        options: >-
          --health-cmd "grep NoNewPrivs /proc/1/status; grep -q 'NoNewPrivs:.1' /proc/1/status"
          --health-interval 200ms --health-retries 3
    container:
      image: %s
    steps:
      - run: grep NoNewPrivs /proc/self/status /proc/1/status
`, img, img), o)
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job: %v, want success (the service is healthy only with NoNewPrivs: 1)\n%s", v.Result, log)
	}
	for _, want := range []string{"/proc/self/status:NoNewPrivs:\t1", "/proc/1/status:NoNewPrivs:\t1", "service api is ready"} {
		wantContains(t, "the job log", log, want)
	}
}

// A named volume outlives the job and may hold the runner's own .runner
// (the container deployment keeps it in forgeload-data): one the admin
// has not listed in container.valid_volumes fails the job, whether from
// volumes: or -v in options; a listed one is mounted.
func TestNamedVolumePolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	o, eng, img := dockerOptions(t)
	vol := "fl-test-" + eng.Owner()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := eng.CreateVolume(ctx, "outside-the-job", vol); err != nil {
		t.Fatal(err)
	}
	job := func(volumes, options string) string {
		return fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    services:
      db:
        image: %s
        volumes: [%s]
        options: %s
    container:
      image: %s
      volumes: [%s]
    steps:
      - run: echo written > /data/f && cat /data/f && grep -c ' /data ' /proc/self/mounts
`, img, volumes, options, img, volumes)
	}
	for _, tc := range []struct{ name, volumes, options, want string }{
		{"volumes:", vol + ":/data", "--cpus 1", `services.db: volumes[0]: "` + vol + `:/data": named volume ` + vol + ` is not allowed on this runner`},
		{"-v in options", "/data", "-v " + vol + ":/x:ro", `services.db: volumes[1]: "` + vol + `:/x:ro": named volume ` + vol + ` is not allowed on this runner`},
	} {
		v := h.run(job(tc.volumes, tc.options), o)
		log := logText(v)
		if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "written") {
			t.Fatalf("%s: %v, want failure before any step\n%s", tc.name, v.Result, log)
		}
		wantContains(t, tc.name+": the job log", log, tc.want)
		wantContains(t, tc.name+": the job log", log, "ask the runner's admin to add "+vol+" to container.valid_volumes")
	}

	o.ValidVolumes = []string{"fl-test-*"}
	v := h.run(job(vol+":/data", "--cpus 1"), o)
	if log := logText(v); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "written\n1") {
		t.Fatalf("listed volume: %v, want success with the volume mounted at /data\n%s", v.Result, log)
	}
	objs, err := eng.Objects(ctx, "outside-the-job")
	if err != nil || len(objs) != 1 || objs[0] != "volume "+vol {
		t.Fatalf("after the job, the listed volume made outside it: %v, %v; want it kept", objs, err)
	}
}
