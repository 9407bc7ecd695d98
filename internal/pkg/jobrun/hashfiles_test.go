package jobrun

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// TestHashFilesInSteps: hashFiles() in a step hashes the workspace's
// files as GitHub does (sha256 of the files' sha256s, "" when nothing
// matches), and a symlink an earlier step planted to a file outside the
// workspace is not hashed. Before, any hashFiles() failed its step.
func TestHashFilesInSteps(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "runner-secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, rep := runPayload(t, `
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          mkdir -p sub
          printf one > sub/a.lock
          printf two > b.lock
          ln -s `+outside+` leak.lock
      - run: echo "key=${{ hashFiles('**/*.lock') }} none=[${{ hashFiles('*.nope') }}]"
        env:
          K: ${{ hashFiles('b.lock') }}
`)
	if res != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; rows %v", res, rep.rows)
	}
	sum := func(parts ...string) string {
		all := sha256.New()
		for _, p := range parts {
			s := sha256.Sum256([]byte(p))
			all.Write(s[:])
		}
		return hex.EncodeToString(all.Sum(nil))
	}
	// b.lock sorts before sub/a.lock; leak.lock is not hashed.
	want := "key=" + sum("two", "one") + " none=[]"
	if got := strings.Join(rep.rows[1], "\n"); !strings.Contains(got, want) {
		t.Fatalf("step rows:\n%s\nwant %q", got, want)
	}
}
