package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds the main package pkg (an import path) with the extra
// environment env (such as CGO_ENABLED=0) and go build flags, and returns
// the binary's path. The binary is built from the checkout the calling test
// runs in: the directory is keyed by the working directory (a package's
// tests run in its source directory), so two checkouts never share one.
func Build(pkg string, env []string, flags ...string) (string, error) {
	bin, err := path(pkg, env, flags)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o700); err != nil {
		return "", err
	}
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s: %v\n%s", strings.Join(flags, " "), pkg, err, out)
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
