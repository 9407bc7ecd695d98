package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadInConfines(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("root:*:19000:0:99999:7:::\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "perf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "perf", "api.yaml"), []byte("rate: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"perf/in": "api.yaml", "esc": secret, "zero": "/dev/zero", "perf/up": "../../" + filepath.Base(outside) + "/shadow"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"perf/api.yaml", filepath.Join(ws, "perf/api.yaml"), "perf/in", "./perf/../perf/api.yaml"} {
		if got, err := ReadIn(root, p, "config", 100); err != nil || string(got) != "rate: 1\n" {
			t.Errorf("ReadIn(%s) = %q, %v; want the config", p, got, err)
		}
	}
	for _, p := range []string{secret, "../" + filepath.Base(outside) + "/shadow", "esc", "zero", "perf/up", "/etc/shadow", "/dev/zero"} {
		got, err := ReadIn(root, p, "config: "+p, 1<<20)
		if !errors.Is(err, ErrOutside) {
			t.Errorf("ReadIn(%s) = %q, %v; want ErrOutside", p, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "root:") {
			t.Errorf("ReadIn(%s) error quotes the file: %v", p, err)
		}
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{17: "17 bytes", 1 << 20: "1 MiB", 64 << 10: "64 KiB", 2 << 30: "2 GiB", 22_000_000: "21.0 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
