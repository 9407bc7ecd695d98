package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EOfflineImage builds the image of deploy/container/Dockerfile.offline
// with its script and the local Docker Engine, which has no registry to
// pull from (the documented Dockerfile needs golang and debian images),
// and runs it: the static forgeload answers, sh and the CA bundle are
// there, and it runs as uid 1000 with no network at all.
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
}
