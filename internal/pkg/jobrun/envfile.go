package jobrun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
)

// MaxStepFileBytes bounds each of the files a step writes for the runner
// (GITHUB_ENV, GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), as
// GitHub bounds the step summary: a step that writes more fails (the
// summary is only not uploaded), and the daemon never reads more.
const MaxStepFileBytes = 1 << 20

// readStepFile reads a file a step wrote for the runner, inside the task
// directory td: it must be the regular file the runner created (not
// replaced by a symlink, device or pipe, nor reached through a directory
// that leads out of td) and at most MaxStepFileBytes long. A missing file
// is empty.
func readStepFile(td *jobfile.Dir, path, name string) ([]byte, error) {
	data, err := td.ReadNoFollow(path, name, MaxStepFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, jobfile.ErrTooLarge):
		return nil, fmt.Errorf("%w; put large data in a file in the workspace and pass its path instead", err)
	}
	return data, err
}

// parseEnvFile reads a GITHUB_ENV or GITHUB_OUTPUT file: lines of NAME=value,
// or multi-line values written as NAME<<DELIMITER, the lines, then
// DELIMITER alone on a line. A missing file is empty.
func parseEnvFile(td *jobfile.Dir, path, name string) (map[string]string, error) {
	data, err := readStepFile(td, path, name)
	if err != nil {
		return nil, err
	}
	return parseEnvData(name, data)
}

func parseEnvData(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text() // ScanLines already drops one trailing \r
		if strings.TrimSpace(text) == "" {
			continue
		}
		eq := strings.Index(text, "=")
		hd := strings.Index(text, "<<")
		if hd > 0 && (eq < 0 || hd < eq) {
			key, delim := text[:hd], text[hd+2:]
			if key == "" || delim == "" {
				return nil, fmt.Errorf("%s line %d: %q: want NAME<<DELIMITER", name, line, text)
			}
			var val []string
			closed := false
			for sc.Scan() {
				line++
				l := sc.Text()
				if l == delim {
					closed = true
					break
				}
				val = append(val, l)
			}
			if !closed {
				return nil, fmt.Errorf("%s: value of %s has no closing delimiter %q", name, key, delim)
			}
			out[key] = strings.Join(val, "\n")
			continue
		}
		if eq <= 0 {
			return nil, fmt.Errorf("%s line %d: %q: want NAME=value or NAME<<DELIMITER", name, line, text)
		}
		out[text[:eq]] = text[eq+1:]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// readPathFile reads GITHUB_PATH: one directory per line, later lines first
// in PATH as on GitHub.
func readPathFile(td *jobfile.Dir, path string) ([]string, error) {
	data, err := readStepFile(td, path, "GITHUB_PATH")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append(dirs, l)
		}
	}
	return dirs, nil
}

// ReadEnvFile reads a file of NAME=value lines (and NAME<<DELIM blocks), as
// runner.env_file; a missing file is empty. The file is the admin's, so it
// may be a symlink and is not size-bounded.
func ReadEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parseEnvData(path, data)
}
