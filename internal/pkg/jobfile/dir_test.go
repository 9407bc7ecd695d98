package jobfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// taskDir is a task directory beside a directory standing for the host,
// holding the file victim.
func taskDir(t *testing.T) (d *Dir, dir, host, victim string) {
	t.Helper()
	base := t.TempDir()
	dir, host = filepath.Join(base, "task"), filepath.Join(base, "host")
	for _, p := range []string{dir, host, filepath.Join(dir, "files"), filepath.Join(dir, "temp")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim = filepath.Join(host, "victim")
	if err := os.WriteFile(victim, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, dir, host, victim
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func wantHost(t *testing.T, host, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "host\n" {
		t.Fatalf("host file after the write: %q, %v; want it untouched", b, err)
	}
	if ents, _ := os.ReadDir(host); len(ents) != 1 {
		t.Fatalf("host directory after the write: %v; want only the victim", ents)
	}
}

// CreateNew makes a new file, and never writes, truncates or creates
// anything through a symlink: whatever is at the path already is an error
// naming it.
func TestDirCreateNew(t *testing.T) {
	t.Parallel()
	d, dir, host, victim := taskDir(t)
	inside := filepath.Join(dir, "temp", "inside")
	if err := os.WriteFile(inside, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "inside", filepath.Join(dir, "temp", "s1"))
	symlink(t, victim, filepath.Join(dir, "temp", "s2"))
	symlink(t, "../../host/victim", filepath.Join(dir, "temp", "s3"))
	symlink(t, filepath.Join(host, "new"), filepath.Join(dir, "temp", "s4"))
	for _, name := range []string{"s1", "s2", "s3", "s4", "inside"} {
		err := d.CreateNew(filepath.Join(dir, "temp", name), []byte("script\n"), 0o700)
		if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "temp/"+name+" in the task directory") {
			t.Errorf("CreateNew(temp/%s) = %v; want fs.ErrExist naming the path", name, err)
		}
	}
	p := filepath.Join(dir, "temp", "plain")
	if err := d.CreateNew(p, []byte("script\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("CreateNew(temp/plain) left %v, %v; want an executable regular file", fi, err)
	}
	if b, _ := os.ReadFile(inside); string(b) != "keep\n" {
		t.Fatalf("a file inside changed: %q", b)
	}
	wantHost(t, host, victim)

	// A directory on the way that leads out is refused, naming the path.
	symlink(t, host, filepath.Join(dir, "out"))
	err := d.CreateNew(filepath.Join(dir, "out", "new"), []byte("x"), 0o644)
	if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "out/new") {
		t.Fatalf("CreateNew through a link out = %v; want ErrOutside naming out/new", err)
	}
	if err := d.CreateNew(filepath.Join(host, "new"), []byte("x"), 0o644); !errors.Is(err, ErrOutside) {
		t.Fatalf("CreateNew of a path outside = %v; want ErrOutside", err)
	}
	wantHost(t, host, victim)
}

// MkdirNew refuses a link at the path, or on the way out; RemoveAll
// removes links, not what they point at.
func TestDirMkdirNew(t *testing.T) {
	t.Parallel()
	d, dir, host, victim := taskDir(t)
	if err := d.MkdirNew(filepath.Join(dir, "files", "step-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, host, filepath.Join(dir, "files", "step-1"))
	if err := d.MkdirNew(filepath.Join(dir, "files", "step-1"), 0o755); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "files/step-1 in the task directory") || !strings.Contains(err.Error(), "a symlink is there") {
		t.Fatalf("MkdirNew at a link = %v; want fs.ErrExist naming files/step-1", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "files")); err != nil {
		t.Fatal(err)
	}
	symlink(t, host, filepath.Join(dir, "files"))
	if err := d.MkdirNew(filepath.Join(dir, "files", "step-2"), 0o755); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "files/step-2") {
		t.Fatalf("MkdirNew under a link out = %v; want ErrOutside naming files/step-2", err)
	}
	if err := d.RemoveAll(filepath.Join(dir, "files")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "files")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("files after RemoveAll: %v", err)
	}
	wantHost(t, host, victim)
}

// ReadNoFollow reads the regular file the runner made, and refuses links,
// files that lead out, and files that are not regular.
func TestDirReadNoFollow(t *testing.T) {
	t.Parallel()
	d, dir, host, _ := taskDir(t)
	files := filepath.Join(dir, "files")
	write := func(name string, data []byte) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("out", []byte("a=1\n"))
	big := write("big", make([]byte, 2048))
	symlink(t, "out", filepath.Join(files, "in-link"))
	symlink(t, "/dev/zero", filepath.Join(files, "zero"))
	symlink(t, host, filepath.Join(dir, "hostdir"))
	fifo := filepath.Join(files, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := d.ReadNoFollow(ok, "GITHUB_OUTPUT", 1024); err != nil || string(got) != "a=1\n" {
		t.Fatalf("regular file: got %q, %v", got, err)
	}
	for _, tt := range []struct {
		path string
		want error
		msg  string
	}{
		{big, ErrTooLarge, "GITHUB_OUTPUT is 2 KiB, more than the 1 KiB limit"},
		{filepath.Join(files, "in-link"), ErrNotRegular, "files/in-link in the task directory) is a symlink"},
		{filepath.Join(files, "zero"), ErrOutside, "files/zero in the task directory"},
		{filepath.Join(dir, "hostdir", "victim"), ErrOutside, "hostdir/victim in the task directory"},
		{filepath.Join(host, "victim"), ErrOutside, "outside"},
		{fifo, ErrNotRegular, "GITHUB_OUTPUT is a named pipe"}, // and it does not block
		{files, ErrNotRegular, "GITHUB_OUTPUT is a directory"},
	} {
		got, err := d.ReadNoFollow(tt.path, "GITHUB_OUTPUT", 1024)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ReadNoFollow(%s) = %q, %v; want %v with %q", tt.path, got, err, tt.want, tt.msg)
		}
	}
	if _, err := d.ReadNoFollow(filepath.Join(files, "missing"), "x", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// OpenRealDir opens only a real directory reached through no link.
func TestDirOpenRealDir(t *testing.T) {
	t.Parallel()
	d, dir, host, _ := taskDir(t)
	ws := filepath.Join(dir, "workspace")
	if err := d.MkdirAll(filepath.Join(ws, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, path, err := d.OpenRealDir(filepath.Join(ws, "a", "b"))
	if err != nil || path != filepath.Join(ws, "a", "b") {
		t.Fatalf("OpenRealDir(workspace/a/b) = %q, %v", path, err)
	}
	_ = f.Close()
	symlink(t, host, filepath.Join(ws, "out"))
	symlink(t, "a", filepath.Join(ws, "in"))
	symlink(t, "../temp", filepath.Join(ws, "up"))
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, msg string
		want      error
	}{
		{"workspace/out", "workspace/out in the task directory is a symlink", ErrNotDir},
		{"workspace/in/b", "workspace/in in the task directory is a symlink", ErrNotDir},
		{"workspace/up", "workspace/up in the task directory is a symlink", ErrNotDir},
		{"workspace/file", "workspace/file in the task directory is a file", ErrNotDir},
		{"../host", "outside", ErrOutside},
		{host, "outside", ErrOutside},
	} {
		f, _, err := d.OpenRealDir(tt.path)
		if err == nil {
			_ = f.Close()
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("OpenRealDir(%s) = %v; want %v with %q", tt.path, err, tt.want, tt.msg)
		}
	}
	if err := d.MkdirAll(filepath.Join(ws, "out", "x"), 0o755); !errors.Is(err, ErrOutside) {
		t.Fatalf("MkdirAll through a link out = %v; want ErrOutside", err)
	}
	if ents, _ := os.ReadDir(host); len(ents) != 1 {
		t.Fatalf("host directory: %v; want only the victim", ents)
	}
}

// OpenRoot opens a directory inside, and refuses one behind a link out.
func TestDirOpenRoot(t *testing.T) {
	t.Parallel()
	d, dir, host, _ := taskDir(t)
	r, err := d.OpenRoot(filepath.Join(dir, "temp"))
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
	symlink(t, host, filepath.Join(dir, "workspace"))
	if r, err := d.OpenRoot(filepath.Join(dir, "workspace")); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "open workspace in the task directory") {
		if r != nil {
			_ = r.Close()
		}
		t.Fatalf("OpenRoot of a link out = %v; want ErrOutside naming workspace", err)
	}
}

// Whatever path a job makes the runner use, the runner creates, reads and
// removes nothing outside the task directory; the links on the way lead
// out absolutely, relatively, and back in.
func FuzzDirStaysInside(f *testing.F) {
	for _, s := range []string{"temp/x", "out/victim", "up/victim", "in/x", "../host/victim", "/etc/passwd", "temp/../out/y", "loop/x", ".", "temp/", "a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		d, dir, host, victim := taskDir(t)
		symlink(t, host, filepath.Join(dir, "out"))
		symlink(t, "../host", filepath.Join(dir, "up"))
		symlink(t, "temp", filepath.Join(dir, "in"))
		symlink(t, "loop", filepath.Join(dir, "loop"))
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_ = d.CreateNew(p, []byte("x"), 0o644)
		_, _ = d.ReadNoFollow(p, "GITHUB_ENV", 10)
		_ = d.MkdirAll(p, 0o755)
		_ = d.MkdirNew(p, 0o755)
		if f, _, err := d.OpenRealDir(p); err == nil {
			_ = f.Close()
		}
		_ = d.RemoveAll(p)
		wantHost(t, host, victim)
	})
}

// MoveIn moves a directory the daemon made outside into the task
// directory, and neither follows nor replaces what a job put at the
// destination or on the way to it.
func TestDirMoveIn(t *testing.T) {
	t.Parallel()
	d, dir, host, victim := taskDir(t)
	src := filepath.Join(filepath.Dir(dir), "private")
	if err := os.MkdirAll(filepath.Join(src, "objects"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "HEAD"), []byte("ref\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, host, filepath.Join(dir, "out"))
	symlink(t, "ws", filepath.Join(dir, "in"))
	in := func(p string) string { return filepath.Join(ws, p) }
	// What a job put at the destination: each is refused, left as it was,
	// and the source stays where it is.
	for name, plant := range map[string]func(p string){
		"a link to a host directory": func(p string) { symlink(t, host, p) },
		"a link to a host file":      func(p string) { symlink(t, victim, p) },
		"a dangling link":            func(p string) { symlink(t, filepath.Join(host, "new"), p) },
		"a file":                     func(p string) { _ = os.WriteFile(p, []byte("x"), 0o644) },
		"a directory with a file": func(p string) {
			_ = os.Mkdir(p, 0o755)
			_ = os.WriteFile(filepath.Join(p, "config"), []byte("x"), 0o644)
		},
		"an empty directory": func(p string) { _ = os.Mkdir(p, 0o755) },
	} {
		plant(in(".git"))
		if err := d.MoveIn(src, in(".git")); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "ws/.git in the task directory") {
			t.Errorf("MoveIn onto %s = %v; want fs.ErrExist naming ws/.git", name, err)
		}
		if _, err := os.Stat(filepath.Join(src, "HEAD")); err != nil {
			t.Fatalf("the source after a refused move onto %s: %v", name, err)
		}
		wantHost(t, host, victim)
		if err := d.RemoveAll(in(".git")); err != nil {
			t.Fatal(err)
		}
	}
	// A parent that is a link, out or in, is refused.
	for _, to := range []string{filepath.Join(dir, "out", ".git"), filepath.Join(dir, "in", ".git")} {
		if err := d.MoveIn(src, to); !errors.Is(err, ErrNotDir) && !errors.Is(err, ErrOutside) {
			t.Errorf("MoveIn(%s) = %v; want ErrNotDir or ErrOutside", to, err)
		}
	}
	for _, to := range []string{dir, filepath.Join(host, "x")} {
		if err := d.MoveIn(src, to); err == nil {
			t.Errorf("MoveIn(%s) succeeded; want it refused", to)
		}
	}
	wantHost(t, host, victim)

	if err := d.MoveIn(src, in(".git")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(in(".git/HEAD")); err != nil || string(b) != "ref\n" {
		t.Fatalf("ws/.git/HEAD after the move: %q, %v", b, err)
	}
	if _, err := os.Lstat(src); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the source after the move: %v; want it gone", err)
	}
}

// MoveTreeIn merges a tree the daemon made outside into a directory of
// the task directory: what is in the way is removed, not followed; real
// directories merge; what is not in the way stays. Empty removes what is
// in a directory, following no link.
func TestDirMoveTreeIn(t *testing.T) {
	t.Parallel()
	d, dir, host, victim := taskDir(t)
	src := filepath.Join(filepath.Dir(dir), "private")
	for p, content := range map[string]string{"README": "tree\n", "a/b/file": "tree\n", "link-dir/x": "tree\n", "file-dir/y": "tree\n", "dir-file": "tree\n"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "README", filepath.Join(src, "tracked-link"))
	ws := filepath.Join(dir, "ws")
	for _, p := range []string{"a/b", "dir-file/sub"} {
		if err := os.MkdirAll(filepath.Join(ws, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{"a/keep": "job\n", "a/b/file": "job\n", "untracked": "job\n", "file-dir": "job\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, victim, filepath.Join(ws, "README"))
	symlink(t, host, filepath.Join(ws, "link-dir"))
	symlink(t, host, filepath.Join(ws, "out"))

	if err := d.MoveTreeIn(src, ws); err != nil {
		t.Fatal(err)
	}
	wantHost(t, host, victim)
	for p, want := range map[string]string{"README": "tree\n", "a/b/file": "tree\n", "link-dir/x": "tree\n", "file-dir/y": "tree\n", "dir-file": "tree\n", "a/keep": "job\n", "untracked": "job\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, p)); err != nil || string(b) != want {
			t.Errorf("ws/%s after the move: %q, %v; want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"README", "link-dir"} {
		if fi, err := os.Lstat(filepath.Join(ws, p)); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			t.Errorf("ws/%s after the move: %v, %v; want the tree's, not the job's link", p, fi, err)
		}
	}
	if l, err := os.Readlink(filepath.Join(ws, "tracked-link")); err != nil || l != "README" {
		t.Errorf("ws/tracked-link after the move: %q, %v; want the tree's link to README", l, err)
	}
	if ents, err := os.ReadDir(src); err != nil || len(ents) != 0 {
		t.Errorf("the source after the move: %v, %v; want it empty", ents, err)
	}

	// A destination that is a link is refused, and nothing moves.
	if err := os.WriteFile(filepath.Join(src, "new"), []byte("tree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.MoveTreeIn(src, filepath.Join(dir, "ws", "out")); !errors.Is(err, ErrNotDir) {
		t.Errorf("MoveTreeIn into a link out = %v; want ErrNotDir", err)
	}
	wantHost(t, host, victim)

	if err := d.Empty(filepath.Join(ws, "out")); !errors.Is(err, ErrNotDir) {
		t.Errorf("Empty(a link out) = %v; want ErrNotDir", err)
	}
	if err := d.Empty(ws); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(ws); err != nil || len(ents) != 0 {
		t.Errorf("ws after Empty: %v, %v; want it empty", ents, err)
	}
	wantHost(t, host, victim)
}
