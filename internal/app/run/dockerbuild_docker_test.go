package run

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// removeBuiltImages removes, at the test's end, the action images the log
// says were built, and the images of their steps (those of a stage the
// final image does not build on stay behind as dangling images
// otherwise), but never the base image (id base), so that the next run
// builds them again and the Engine keeps nothing of the test.
func removeBuiltImages(t *testing.T, log, base string) {
	t.Helper()
	var refs []string
	for _, m := range regexp.MustCompile(`building (forgeload-[a-z-]+:[0-9a-f]+)`).FindAllStringSubmatch(log, -1) {
		refs = append(refs, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^ ---> ([0-9a-f]{12})$`).FindAllStringSubmatch(log, -1) {
		if !strings.HasPrefix(strings.TrimPrefix(base, "sha256:"), m[1]) {
			refs = append(refs, m[1])
		}
	}
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			t.Errorf("remove built images: %v", err)
			return
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i, ref := range refs {
			_, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true})
			// A build that failed tagged nothing; step images go with
			// the image built on them.
			if err != nil && i == 0 && !cerrdefs.IsNotFound(err) {
				t.Errorf("remove %s: %v", ref, err)
			}
		}
	})
}

func imageID(t *testing.T, ref string) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.ImageInspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// onBuildImage builds, FROM base, an image with an ONBUILD trigger that
// would fetch a URL from the runner's host, and removes it at the test's
// end.
func onBuildImage(t *testing.T, eng *container.Engine, base string) string {
	t.Helper()
	df := []byte("FROM " + base + "\nONBUILD ADD http://169.254.169.254/latest /x\n")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	_, _ = tw.Write(df)
	_ = tw.Close()
	tag := "forgeload-test-onbuild:" + nonce(t)
	var out bytes.Buffer
	if err := eng.Build(context.Background(), container.Build{Context: &buf, Dockerfile: "Dockerfile", Tag: tag}, &out); err != nil {
		t.Fatalf("build %s: %v\n%s", tag, err, out.String())
	}
	removeBuiltImages(t, "building "+tag+"\n", "")
	return tag
}

func nonce(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestDockerfileAction: a Docker action from the forge whose runs.image is
// its Dockerfile is built on the Engine from its directory: a multi-stage
// build whose FROM lines name, through an ARG default, an image the
// Engine has (the pull policy is never), its RUN instructions without a
// network (only lo), its output in the step's log and masked. The image
// runs with runs.args, runs.env and the inputs, and writes an output; the
// second use of the action reuses the image. Before, such an action was
// refused.
func TestDockerfileAction(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	files := map[string]string{
		"action.yml": `inputs:
  who:
    default: nobody
outputs:
  greeting:
    description: what it said
runs:
  using: docker
  image: build/Dockerfile
  args:
    - ${{ inputs.who }}
  env:
    GREETING: hi-${{ inputs.who }}
`,
		"build/Dockerfile": "ARG BASE=" + img + "\n" +
			"FROM ${BASE} AS build\n" +
			"COPY nonce /\n" + // a fresh file: the build's cache has nothing for what follows
			"RUN echo \"build network: $(ls /sys/class/net)\" && echo \"the build knows build-secret-value\" && \\\n" +
			"    echo made-in-build > /made\n" +
			"FROM $BASE\n" +
			"COPY --from=build /made /made\n" +
			"COPY entry.sh /\n" +
			"ENTRYPOINT [\"/bin/sh\", \"/entry.sh\"]\n",
		"entry.sh": "echo \"entry for $1 input=$INPUT_WHO greeting=$GREETING made=$(cat /made)\"\n" +
			"echo \"greeting=hello-$1\" >> \"$GITHUB_OUTPUT\"\n",
		"nonce": nonce(t),
	}
	if _, err := h.forge.AddActionRepo("acts/built", forgetest.Commit{Tags: []string{"v1"}, Files: files}); err != nil {
		t.Fatal(err)
	}
	opts.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	v := h.run(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - id: first
        uses: acts/built@v1
        with:
          who: you
      - run: echo "out=${{ steps.first.outputs.greeting }}"
      - uses: acts/built@v1
        with:
          who: again
`, opts, selfActions(h), func(j *forgetest.Job) { j.Secrets = map[string]string{"S": "build-secret-value"} })
	log := logText(v)
	removeBuiltImages(t, log, imageID(t, img))
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{
		"build network: lo\n", // only the loopback interface: no network
		"the build knows ***",
		"entry for you input=you greeting=hi-you made=made-in-build",
		"out=hello-you",
		"reusing image forgeload-action:",
		"entry for again input=again greeting=hi-again made=made-in-build",
	} {
		wantContains(t, "log", log+"\n", want)
	}
	if strings.Contains(log, "build-secret-value") {
		t.Errorf("the build's output is not masked:\n%s", log)
	}
	if n := strings.Count(log+"\n", "\nbuild network: lo\n"); n != 1 {
		t.Errorf("the image was built %d times, want once:\n%s", n, log)
	}
}

// TestDockerfileActionRefused: a runs.image that leads out of the
// action or names no file, a Dockerfile whose FROM this runner cannot
// check (an ARG without a default), or one that ADDs a URL, fails the job
// when it starts, naming the action file, the field, the Dockerfile's
// line and why; one whose FROM names an image that the pull policy does
// not let the runner have fails its step, the same way, and nothing is
// built.
func TestDockerfileActionRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, eng, img := dockerOptions(t)
	opts.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	onbuild := onBuildImage(t, eng, img)
	for _, tt := range []struct{ name, dockerfile, want string }{
		{"onbuild", "FROM " + onbuild + "\n", "action.yml: runs.image: Dockerfile:1: FROM " + onbuild + ": its ONBUILD ADD http://169.254.169.254/latest /x cannot run in a build here"},
		{"outside", "", `action.yml: runs.image: "../Dockerfile" is not a file inside the action`},
		{"missing", "", "action.yml: runs.image: Dockerfile: no such file in the action's directory"},
		{"arg", "ARG BASE\nFROM $BASE\n", "action.yml: runs.image: Dockerfile:2: FROM $BASE: ARG BASE has no default, and this runner passes no --build-arg"},
		{"add-url", "FROM scratch\nADD http://169.254.169.254/latest /x\n", "action.yml: runs.image: Dockerfile:2: ADD http://169.254.169.254/latest: a URL would be fetched by the Docker Engine itself"},
		{"absent", "FROM scratch AS a\nFROM forgeload-test-absent:" + nonce(t) + "\n", "action.yml: runs.image: Dockerfile:2: FROM forgeload-test-absent:"},
	} {
		files := map[string]string{"action.yml": "runs:\n  using: docker\n  image: Dockerfile\n", "Dockerfile": tt.dockerfile}
		switch tt.name {
		case "outside":
			files["action.yml"] = "runs:\n  using: docker\n  image: ../Dockerfile\n"
		case "missing":
			delete(files, "Dockerfile")
		}
		if _, err := h.forge.AddActionRepo("acts/"+tt.name, forgetest.Commit{Tags: []string{"v1"}, Files: files}); err != nil {
			t.Fatal(err)
		}
		v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo first-step-ran\n      - uses: acts/"+tt.name+"@v1\n", opts, selfActions(h))
		log := logText(v)
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, tt.want) {
			t.Errorf("%s: result %v, want FAILURE with %q; log:\n%s", tt.name, v.Result, tt.want, log)
		}
		// A base that is not there, or has an ONBUILD, fails when the
		// step builds; the others before any step runs.
		if ran := strings.Contains(log, "first-step-ran"); ran != (tt.name == "absent" || tt.name == "onbuild") {
			t.Errorf("%s: the first step ran: %v; log:\n%s", tt.name, ran, log)
		}
		if tt.name == "absent" {
			wantContains(t, "log", log, "image not found on the Docker Engine, and the runner's pull policy is never")
		}
		if strings.Contains(log, "building forgeload-action:") {
			t.Errorf("%s: a build started:\n%s", tt.name, log)
		}
	}
}

// TestDockerfileActionLocalWithNetwork: a local Docker action (uses:
// ./act, written to the workspace by an earlier step) is built from the
// workspace when its step starts, and where the admin allows the build
// network (container.allow_build_network) its RUN instructions have one
// (an interface besides lo). The image then runs its own CMD.
func TestDockerfileActionLocalWithNetwork(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	opts.BuildNetwork = true
	v := h.run(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: |
          mkdir -p act
          printf 'runs:\n  using: docker\n  image: Dockerfile\n' > act/action.yml
          printf 'FROM `+img+`\nCOPY nonce /\nRUN echo "build network:" $(ls /sys/class/net)\nCMD ["/bin/sh", "-c", "echo local-action-ran"]\n' > act/Dockerfile
          echo `+nonce(t)+` > act/nonce
      - uses: ./act
`, opts)
	log := logText(v)
	removeBuiltImages(t, log, imageID(t, img))
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "network: the Engine's default")
	wantContains(t, "log", log, "local-action-ran")
	if m := regexp.MustCompile(`(?m)^build network: (.*)$`).FindStringSubmatch(log); m == nil || !strings.Contains(m[1], "eth0") {
		t.Fatalf("the build had no network interface besides lo: %q; log:\n%s", m, log)
	}
}

// TestDockerfileActionContextConfined: the build context is the action's
// directory as it is: a symlink in it that leads to a file of the host is
// sent as a symlink, so the host file's content never reaches the image
// (the build fails to COPY it), and a FIFO in it fails the step, naming
// it, before anything is built.
func TestDockerfileActionContextConfined(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	secret := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(secret, []byte("host-secret-"+nonce(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := `      - run: |
          mkdir -p act
          printf 'runs:\n  using: docker\n  image: Dockerfile\n' > act/action.yml
          printf 'FROM ` + img + `\nCOPY leak /leak\nCMD ["/bin/cat", "/leak"]\n' > act/Dockerfile
`
	for _, tt := range []struct{ name, setup, want string }{
		{"symlink", "          ln -s " + secret + " act/leak\n", "Dockerfile: build image forgeload-action:"},
		{"fifo", "          mkfifo act/leak\n", "action.yml: the build context: leak is not a regular file, directory or symlink"},
	} {
		v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n"+write+tt.setup+"      - uses: ./act\n", opts)
		log := logText(v)
		removeBuiltImages(t, log, imageID(t, img))
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, tt.want) {
			t.Errorf("%s: result %v, want FAILURE with %q; log:\n%s", tt.name, v.Result, tt.want, log)
		}
		if strings.Contains(log, "host-secret-") {
			t.Errorf("%s: the host file reached the build:\n%s", tt.name, log)
		}
	}
}

// TestDockerfileActionBounds: a build that runs past
// container.build_timeout is stopped and fails its step saying so, and an
// action's directory of more than 64 MiB is refused before anything is
// sent to the Engine.
func TestDockerfileActionBounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	opts.BuildTimeout = 2 * time.Second
	write := `      - run: |
          mkdir -p act
          printf 'runs:\n  using: docker\n  image: Dockerfile\n' > act/action.yml
          printf 'FROM ` + img + `\nCOPY nonce /\nRUN echo build-started && sleep 120\n' > act/Dockerfile
          echo ` + nonce(t) + ` > act/nonce
`
	for _, tt := range []struct{ name, setup, want string }{
		{"timeout", "", "act/action.yml: runs.image: Dockerfile: build image forgeload-action:"},
		{"size", "          head -c 67108865 /dev/zero > act/big\n", "act/action.yml: the build context: the action's directory holds more than 64 MiB"},
	} {
		start := time.Now()
		v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n"+write+tt.setup+"      - uses: ./act\n", opts)
		log := logText(v)
		removeBuiltImages(t, log, imageID(t, img))
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, tt.want) {
			t.Errorf("%s: result %v, want FAILURE with %q; log:\n%s", tt.name, v.Result, tt.want, log)
		}
		if tt.name == "timeout" {
			if !strings.Contains(log, "build-started") || !strings.Contains(log, "the build took more than 2s (container.build_timeout)") {
				t.Errorf("timeout: the log does not say the build started and was stopped by container.build_timeout:\n%s", log)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("timeout: the job took %v; the build was not stopped", d)
			}
		}
		if tt.name == "size" && strings.Contains(log, "building forgeload-action:") {
			t.Errorf("size: a build started:\n%s", log)
		}
	}
}
