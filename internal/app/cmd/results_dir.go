package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
)

// resultsDirDefault is where a run's HTML report and JSON result go when
// no flag or key names a file: a directory of its own per run under it,
// relative to the working directory. The package's tests point it at a
// temporary directory.
var resultsDirDefault = "forgeload-results"

// runResultsDir makes the directory of one run's results under dir:
// dir/<kind>-<UTC time>-<random>, so that runs never overwrite each other.
// An empty dir makes none ("" and nil).
func runResultsDir(dir, kind string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results directory: %w: check that %s can be made and is writable, or give --results-dir ''", err, dir)
	}
	run, err := os.MkdirTemp(dir, kind+"-"+time.Now().UTC().Format("20060102-150405")+"-")
	if err != nil {
		return "", fmt.Errorf("results directory: %w: check that %s is writable, or give --results-dir ''", err, dir)
	}
	return run, nil
}

// execResultsDir is where one `forgeload exec` has its load steps write
// their results: dir/exec-<UTC time>-<pid>, made by the first step that
// writes; "" for none.
func execResultsDir(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("exec-%s-%d", time.Now().UTC().Format("20060102-150405"), os.Getpid()))
}

// defaultOutputs are the report and the JSON result of `forgeload load`
// in its own results directory, for the files no flag or key names.
func defaultOutputs(f *loadFlags, htmlPath string) ([]*outputFile, error) {
	wantHTML := htmlPath == ""
	wantJSON := f.jsonOutput == "" || f.jsonOutput == jsonToStdout
	if !wantHTML && !wantJSON {
		return nil, nil
	}
	dir, err := runResultsDir(f.resultsDir, "load")
	if err != nil || dir == "" {
		return nil, err
	}
	var outs []*outputFile
	if wantHTML {
		outs = append(outs, &outputFile{what: "the report", path: filepath.Join(dir, "report.html"), write: outcome.HTML, announce: "report"})
	}
	if wantJSON {
		outs = append(outs, &outputFile{what: "the JSON result", path: filepath.Join(dir, "result.json"), write: outcome.JSON, announce: "result"})
	}
	return outs, nil
}
