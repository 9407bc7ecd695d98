package jobrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestActionCacheBounded: the cache keeps within MaxBytes by removing the
// entries used least recently, never the one just added; a copy out is a
// copy (a job that changes it does not change the cache); what an
// interrupted addition left is removed.
func TestActionCacheBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp-left"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := &ActionCache{Dir: dir, MaxBytes: 250}
	tree := func(content string) string {
		src := t.TempDir()
		if err := os.WriteFile(filepath.Join(src, "action.yml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return src
	}
	old := time.Now().Add(-time.Hour)
	for i, k := range []string{"h/o/a/1", "h/o/b/2"} {
		if err := c.add(k, tree(strings.Repeat("x", 100))); err != nil {
			t.Fatal(err)
		}
		// a is the least recently used.
		when := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(c.entry(k), when, when); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tmp-left")); !os.IsNotExist(err) {
		t.Errorf("an interrupted addition's directory is still there: %v", err)
	}
	if err := c.add("h/o/c/3", tree(strings.Repeat("y", 100))); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"h/o/a/1": false, "h/o/b/2": true, "h/o/c/3": true} {
		if _, err := os.Stat(c.entry(k)); (err == nil) != want {
			t.Errorf("entry %s present=%v, want %v", k, err == nil, want)
		}
	}
	dst := t.TempDir()
	if hit, err := c.copyOut("h/o/c/3", dst); !hit || err != nil {
		t.Fatalf("copyOut: %v %v", hit, err)
	}
	if err := os.WriteFile(filepath.Join(dst, "action.yml"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.entry("h/o/c/3"), "action.yml")); string(b) != strings.Repeat("y", 100) {
		t.Errorf("a change to a job's copy reached the cache: %q", b)
	}
	if hit, _ := c.copyOut("h/o/a/1", t.TempDir()); hit {
		t.Error("an evicted entry was found")
	}
	if err := c.add("h/o/d/4", tree(strings.Repeat("z", 300))); err == nil || !strings.Contains(err.Error(), "runner.action_cache_max_mb") {
		t.Errorf("an action over the bound: %v", err)
	}
}

// TestParseRemoteUses: every part of a remote uses: is checked, so that
// none reaches git as an option or leaves the repository.
func TestParseRemoteUses(t *testing.T) {
	t.Parallel()
	r, err := parseRemoteUses("acts/greet/sub/dir@v1.2", "https://forge.example/")
	if err != nil || r.cloneURL() != "https://forge.example/acts/greet.git" || r.path != "sub/dir" || r.ref != "v1.2" || r.host != "forge.example" {
		t.Fatalf("parsed %+v, %v", r, err)
	}
	r, err = parseRemoteUses("https://other.example:8443/o/r@main", "")
	if err != nil || r.cloneURL() != "https://other.example:8443/o/r.git" || r.path != "" {
		t.Fatalf("parsed %+v, %v", r, err)
	}
	for uses, want := range map[string]string{
		"o/r@-upload-pack=x":          "is not a valid ref",
		"o/r@a..b":                    "is not a valid ref",
		"o/../r@v1":                   "is not a valid owner",
		"o/r/../../x@v1":              "is not a valid owner",
		"-o/r@v1":                     "is not a valid owner",
		"o@v1":                        "names no repository",
		"https://u:p@h.example/o/r@v": "is not a URL",
		"ftp://h/o/r@v1":              "is not a valid owner",
	} {
		if _, err := parseRemoteUses(uses, "https://forge.example"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", uses, err, want)
		}
	}
	if _, err := parseRemoteUses("o/r@v1", ""); err == nil || !strings.Contains(err.Error(), "no default actions URL") {
		t.Errorf("no default URL: %v", err)
	}
	if _, err := parseRemoteUses("o/r@v1", "file:///etc"); err == nil || !strings.Contains(err.Error(), "not an http:// or https://") {
		t.Errorf("file default URL: %v", err)
	}
}

// FuzzParseRemoteUses: whatever the uses: text, a parsed reference has no
// part git could read as an option, and no .. in its path.
func FuzzParseRemoteUses(f *testing.F) {
	for _, s := range []string{"o/r@v1", "https://h/o/r/p@main", "o/r/../x@v", "o/r@-x", "http://h:1/o/r.git@0123456789012345678901234567890123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uses string) {
		r, err := parseRemoteUses(uses, "https://forge.example")
		if err != nil {
			return
		}
		for _, p := range []string{r.owner, r.repo, r.ref} {
			if strings.HasPrefix(p, "-") || p == "" {
				t.Fatalf("%q parsed to a part %q", uses, p)
			}
		}
		if strings.Contains(r.path, "..") || strings.HasPrefix(r.path, "/") {
			t.Fatalf("%q parsed to the path %q", uses, r.path)
		}
	})
}
