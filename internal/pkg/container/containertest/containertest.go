// Package containertest gives tests a real Docker Engine and the images
// they need, built on this machine with no registry: a FROM-scratch image
// holding Debian's static busybox (as /bin/sh and its applets) and the
// small HTTP service in ./sut, built as a static Go binary. The image is
// built once per test binary and tagged by its content, so packages that
// run at the same time share it.
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/forgeload/forgeload/internal/pkg/container"
)

// Busybox is the static busybox the images are made from (Debian's
// busybox-static package).
const Busybox = "/usr/bin/busybox"

// applets are linked to busybox in the image.
var applets = []string{"sh", "cat", "ls", "echo", "sleep", "wget", "env", "pwd", "test", "true", "false", "id", "mkdir", "touch", "grep", "head", "yes"}

// Engine connects to the local Docker Engine with a fresh owner, so a
// test's Reap touches only its own objects; see [EngineFor].
func Engine(t testing.TB) *container.Engine {
	t.Helper()
	return EngineFor(t, Owner(t))
}

// EngineFor connects to the local Docker Engine as owner (a daemon's
// runner uuid, to see what it created); it fails the test (never skips)
// when no Engine answers. At the test's end everything of that owner is
// removed.
func EngineFor(t testing.TB, owner string) *container.Engine {
	t.Helper()
	e, err := container.New(context.Background(), container.Options{Owner: owner})
	if err != nil {
		t.Fatalf("these tests need a Docker Engine: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.Reap(ctx, "")
		_ = e.Close()
	})
	return e
}

// Owner returns a unique owner label value for one test.
func Owner(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// Image returns the reference of the test image, building it on the first
// call of the test binary (or reusing the one an earlier run built). The
// image's default command serves HTTP on :8080; /sut check is its health
// probe, and /bin/sh a busybox shell.
func Image(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() { imageRef, imageErr = buildImage() })
	if imageErr != nil {
		t.Fatalf("build the test image: %v", imageErr)
	}
	return imageRef
}

func buildImage() (string, error) {
	dir, err := os.MkdirTemp("", "forgeload-sut-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "sut")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/forgeload/forgeload/internal/pkg/container/containertest/sut")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build sut: %v\n%s", err, out)
	}
	sut, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		return "", fmt.Errorf("read %s: %w (install Debian's busybox-static)", Busybox, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, data []byte) {
		h.ModTime = time.Unix(0, 0)
		_ = tw.WriteHeader(h)
		if data != nil {
			_, _ = tw.Write(data)
		}
	}
	for _, d := range []string{"bin/", "tmp/", "etc/", "work/"} {
		add(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777}, nil)
	}
	add(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))}, bb)
	for _, a := range applets {
		add(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
	}
	add(&tar.Header{Name: "sut", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(sut))}, sut)
	passwd := []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
	add(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(passwd))}, passwd)
	if err := tw.Close(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	ref := "forgeload-test-sut:" + hex.EncodeToString(sum[:6])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: []string{`CMD ["/sut"]`, "ENV PATH=/bin", "EXPOSE 8080"},
	})
	if err != nil {
		return "", fmt.Errorf("import image: %w", err)
	}
	defer res.Close()
	if _, err := bytes.NewBuffer(nil).ReadFrom(res); err != nil {
		return "", err
	}
	return ref, nil
}
