package hashfiles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// MaxEntries bounds the directory entries one Hash visits.
const MaxEntries = 1_000_000

// Pattern is one compiled glob of a hashFiles() argument.
type Pattern struct {
	negate bool
	segs   []string // nil: matches nothing (outside the workspace)
}

// Compile parses the patterns of hashFiles()'s arguments, each of which may
// hold several patterns, one a line. ws is the workspace, for absolute
// patterns. An invalid glob is an error naming it.
func Compile(ws string, args []string) ([]Pattern, error) {
	var out []Pattern
	for _, a := range args {
		for _, line := range strings.Split(a, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			p, err := compile(ws, line)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func compile(ws, line string) (Pattern, error) {
	var p Pattern
	src := line
	for strings.HasPrefix(line, "!") {
		p.negate = !p.negate
		line = line[1:]
	}
	if filepath.IsAbs(line) {
		rel, err := filepath.Rel(filepath.Clean(ws), filepath.Clean(line))
		if err != nil {
			return p, nil // outside: matches nothing
		}
		line = rel
	}
	line = path.Clean(line)
	if line == ".." || strings.HasPrefix(line, "../") {
		return p, nil
	}
	if line == "." {
		p.segs = []string{}
		return p, nil
	}
	p.segs = strings.Split(line, "/")
	for _, s := range p.segs {
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return Pattern{}, fmt.Errorf("hashFiles: pattern %q: %v in %q; escape [ ] * ? with [] (e.g. [[]) or fix the class", src, err, s)
		}
	}
	return p, nil
}

// matchPrefixes reports whether p matches the path given by its segments,
// or any of its ancestors (a matched directory matches all below it).
func (p Pattern) matchPrefixes(segs []string) bool {
	if p.segs == nil {
		return false
	}
	// cur[k]: the first k pattern segments match the path segments so far.
	n := len(p.segs)
	cur := make([]bool, n+1)
	cur[0] = true
	closeStars(p.segs, cur)
	if cur[n] && len(segs) == 0 {
		return true
	}
	next := make([]bool, n+1)
	for _, s := range segs {
		clear(next)
		for k := 0; k < n; k++ {
			if !cur[k] {
				continue
			}
			if p.segs[k] == "**" {
				next[k] = true // ** takes this segment and may take more
				continue
			}
			if ok, _ := path.Match(p.segs[k], s); ok {
				next[k+1] = true
			}
		}
		closeStars(p.segs, next)
		cur, next = next, cur
		if cur[n] {
			return true
		}
	}
	return false
}

// closeStars lets every ** match zero segments.
func closeStars(segs []string, st []bool) {
	for k, s := range segs {
		if st[k] && s == "**" {
			st[k+1] = true
		}
	}
}

// Matches reports whether the file at rel (slash-separated, relative to
// the workspace) is selected by the patterns: the last that matches it
// decides.
func Matches(pats []Pattern, rel string) bool {
	segs := strings.Split(rel, "/")
	in := false
	for _, p := range pats {
		if p.matchPrefixes(segs) {
			in = !p.negate
		}
	}
	return in
}

// Hash returns hashFiles()'s value for pats over the workspace root: the
// hex SHA-256 of the matched files' SHA-256 digests, "" when none matched.
func Hash(ctx context.Context, root *os.Root, pats []Pattern) (string, error) {
	files, err := walk(ctx, root, pats)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", nil
	}
	sort.Strings(files)
	all := sha256.New()
	n := 0
	for _, rel := range files {
		sum, ok, err := hashFile(ctx, root, rel)
		if err != nil {
			return "", err
		}
		if ok {
			all.Write(sum)
			n++
		}
	}
	if n == 0 {
		return "", nil
	}
	return hex.EncodeToString(all.Sum(nil)), nil
}

// walk lists the regular files (and symlinks to files inside root) that
// pats select, slash-separated relative to root.
func walk(ctx context.Context, root *os.Root, pats []Pattern) ([]string, error) {
	var files []string
	seen := 0
	var visit func(dir string) error
	visit = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("hashFiles: gave up walking the workspace at %s: %w; hash fewer files (narrow the patterns)", orDot(dir), context.Cause(ctx))
		}
		f, err := root.Open(orDot(dir))
		if err != nil {
			return nil // removed meanwhile, or not readable: as GitHub, skip
		}
		ents, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			return nil
		}
		for _, e := range ents {
			if seen++; seen > MaxEntries {
				return fmt.Errorf("hashFiles: the workspace has more than %d entries; narrow the patterns or clean the workspace", MaxEntries)
			}
			rel := path.Join(dir, e.Name())
			switch {
			case e.Type().IsDir():
				if err := visit(rel); err != nil {
					return err
				}
			case e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0:
				if Matches(pats, rel) {
					files = append(files, rel)
				}
			}
		}
		return nil
	}
	err := visit("")
	return files, err
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// hashFile hashes the file at rel; ok is false when it is not a regular
// file inside root (a symlink that leads out, to a directory or a device,
// say), which is skipped.
func hashFile(ctx context.Context, root *os.Root, rel string) (sum []byte, ok bool, err error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		if errors.Is(err, context.Cause(ctx)) || ctx.Err() != nil {
			return nil, false, fmt.Errorf("hashFiles: gave up hashing %s: %w; hash fewer or smaller files", rel, context.Cause(ctx))
		}
		return nil, false, fmt.Errorf("hashFiles: read %s: %w", rel, err)
	}
	return h.Sum(nil), true, nil
}

// ctxReader stops a read at the end of ctx.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
