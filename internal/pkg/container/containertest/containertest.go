// Package containertest gives tests a real Docker Engine and the images
// they need, built on this machine with no registry: a FROM-scratch image
// holding Debian's static busybox (as /bin/sh and its applets) and the
// small HTTP service in ./sut, built as a static Go binary, and the same
// with the host's Node.js added (NodeImage). An image is built once per
// test binary and tagged by its content, so packages that run at the same
// time share it.
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/testbin"
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
	imageOnce.Do(func() { imageRef, imageErr = buildImage(sutImage) })
	if imageErr != nil {
		t.Fatalf("build the test image: %v", imageErr)
	}
	return imageRef
}

// SutBinary builds the sut (see ./sut), static, once per test binary, and
// returns its path: the image's, and the cluster tests' load target when it
// runs as a process of this host.
var SutBinary = sync.OnceValues(func() (string, error) {
	return testbin.Build("github.com/forgeload/forgeload/internal/pkg/container/containertest/sut", []string{"CGO_ENABLED=0"}, "-trimpath", "-ldflags=-s -w")
})

// imageVersion names the layout imageTar writes (its directories, links and
// modes), which the tag cannot see: change it with the layout.
const imageVersion = "2"

var (
	passwd = []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
	// imageChanges configure the imported image.
	imageChanges = []string{`CMD ["/sut"]`, "ENV PATH=/bin", "EXPOSE 8080"}
)

// imageSpec is what goes into a test image beside the sut, busybox and
// /etc/passwd: the config changes and files of the host, copied in at
// the same paths.
type imageSpec struct {
	repo    string
	changes []string
	files   []string
}

var sutImage = imageSpec{repo: "forgeload-test-sut", changes: imageChanges}

// Node is the host's Node.js that NodeImage copies.
const Node = "/usr/bin/node"

var nodeImage = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("ldd", Node).Output()
	if err != nil {
		return "", fmt.Errorf("ldd %s: %w", Node, err)
	}
	files := []string{Node}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") {
			files = append(files, f)
		}
	}
	changes := append([]string{"ENV PATH=/bin:/usr/bin"}, imageChanges[:1]...)
	return buildImage(imageSpec{repo: "forgeload-test-node", changes: changes, files: files})
})

// NodeImage returns the reference of the test image with the host's
// Node.js (Node, and the shared libraries ldd lists for it, at the same
// paths) and PATH=/bin:/usr/bin, building it on the first call. It skips
// the test when the host has no Node.js.
func NodeImage(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(Node); err != nil {
		t.Skipf("no Node.js on the host to put in the image: %v", err)
	}
	ref, err := nodeImage()
	if err != nil {
		t.Fatalf("build the test image with Node.js: %v", err)
	}
	return ref
}

// buildImage tags the image by what goes into it (the sut binary, busybox,
// the applets, /etc/passwd, the config changes, the host's files and
// imageVersion) and imports it only when no image has that tag yet: the
// tar of some 10 MB is built only then (under -race, copying it costs a
// CPU second), and the sut build is reused while its sources are
// unchanged.
func buildImage(spec imageSpec) (string, error) {
	bin, err := SutBinary()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(imageVersion), []byte(strings.Join(applets, ",")), passwd, []byte(strings.Join(spec.changes, "\n"))} {
		h.Write(part)
		h.Write([]byte{0})
	}
	for _, f := range append([]string{bin, Busybox}, spec.files...) {
		if len(spec.files) > 0 {
			h.Write([]byte(f))
		}
		if err := HashFile(h, f); err != nil {
			if f == Busybox {
				return "", fmt.Errorf("%w (install Debian's busybox-static)", err)
			}
			return "", err
		}
	}
	ref := spec.repo + ":" + hex.EncodeToString(h.Sum(nil)[:6])

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
	buf, err := imageTar(bin, spec.files)
	if err != nil {
		return "", err
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: buf, SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: spec.changes,
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

// imageTar returns the image's file system as a tar: busybox as /bin/sh
// and its applets, the sut binary bin as /sut, /etc/passwd, writable
// /tmp and /work, and the host's files (links followed) at their paths.
func imageTar(bin string, files []string) (*bytes.Buffer, error) {
	sut, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (install Debian's busybox-static)", Busybox, err)
	}
	buf := &bytes.Buffer{}
	buf.Grow(len(sut) + len(bb) + 64<<10) // one allocation: growing it copies megabytes
	tw := tar.NewWriter(buf)
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
	add(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(passwd))}, passwd)
	dirs := map[string]bool{"bin": true, "tmp": true, "etc": true, "work": true}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(path.Clean(f), "/")
		var parents []string
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			add(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
		}
		add(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}, data)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf, nil
}

// HashFile adds the content of the file at path (following links) to h,
// for a tag that names an image by what goes into it.
func HashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}
