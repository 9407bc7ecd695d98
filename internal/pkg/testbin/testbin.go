package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
)

// goBuilds counts the go build commands Build ran, for its tests.
var goBuilds atomic.Int64

// Build builds the main package pkg (an import path) with the extra
// environment env (such as CGO_ENABLED=0) and go build flags, and returns
// the binary's path. The binary is built from the checkout the calling test
// runs in: the directory is keyed by the working directory (a package's
// tests run in its source directory), so two checkouts never share one.
//
// When the binary's inputs are the same as at its last build (see
// inputsKey), it is returned without running go at all: even an up-to-date
// go build loads and hashes every package of the build, some 0.5 to 1 s
// of CPU.
func Build(pkg string, env []string, flags ...string) (string, error) {
	bin, err := path(pkg, env, flags)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o700); err != nil {
		return "", err
	}
	stamp := bin + ".inputs"
	key, keyErr := inputsKey(pkg, env, flags)
	if keyErr == nil {
		if b, err := os.ReadFile(stamp); err == nil && string(b) == key {
			if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
				return bin, nil
			}
		}
	}
	goBuilds.Add(1)
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s: %v\n%s", strings.Join(flags, " "), pkg, err, out)
	}
	if keyErr == nil {
		// The key was taken before the build read the sources: a file
		// changed meanwhile makes the next run's key differ, and rebuild.
		tmp := fmt.Sprintf("%s.%d", stamp, os.Getpid())
		if err := os.WriteFile(tmp, []byte(key), 0o600); err == nil {
			_ = os.Rename(tmp, stamp)
		}
	}
	return bin, nil
}

// path is where Build puts the binary of pkg built with env and flags.
func path(pkg string, env, flags []string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	key := sha256.Sum256([]byte(strings.Join(append(append([]string{wd, pkg}, env...), flags...), "\x00")))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("a directory for the test binaries: %w (set HOME or XDG_CACHE_HOME)", err)
	}
	return filepath.Join(cache, "forgeload-test-bin", hex.EncodeToString(key[:8]), filepath.Base(pkg)), nil
}

// inputsKey hashes what a build of pkg depends on: the toolchain (the
// version that built this test, and the path, size and time of the go on
// PATH, which Build runs), the build environment (every GO* and CGO_*
// variable, the C toolchain's, and env), the flags, and the name, size and
// content of every file of the module but its .git. The module's
// dependencies are pinned by go.sum, which is hashed, and the module cache
// never changes a version's files. With a go.work in effect the key is
// refused, and Build asks go.
func inputsKey(pkg string, env, flags []string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", errors.New("no go.mod above " + wd)
		}
		root = parent
	}
	if w := os.Getenv("GOWORK"); w != "off" {
		if w != "" {
			return "", errors.New("GOWORK is set")
		}
		for dir := root; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				return "", errors.New("a go.work is in effect")
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	h := sha256.New()
	var vars []string
	for _, kv := range os.Environ() { // env is hashed whole below
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GO") || strings.HasPrefix(name, "CGO_") || slices.Contains([]string{"CC", "CXX", "AR", "PKG_CONFIG"}, name) {
			vars = append(vars, kv)
		}
	}
	goTool := "(none)"
	if p, err := exec.LookPath("go"); err == nil {
		if fi, err := os.Stat(p); err == nil {
			goTool = fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%q\x00%q\x00%q\x00", runtime.Version(), goTool, pkg, env, flags, vars)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			// A symlink could point anywhere: let go decide.
			return fmt.Errorf("%s is not a regular file", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, info.Size())
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
