package run

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// parseEnvFile reads a GITHUB_ENV or GITHUB_OUTPUT file: lines of NAME=value,
// or multi-line values written as NAME<<DELIMITER, the lines, then
// DELIMITER alone on a line. A missing file is empty.
func parseEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parseEnvData(path, data)
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
func readPathFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
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
// runner.env_file; a missing file is empty.
func ReadEnvFile(path string) (map[string]string, error) {
	return parseEnvFile(path)
}
