package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sameRowTests names, for each row of docs/load-config.md's "Every
// Crankfire key" table that says the key means the same as in Crankfire,
// the tests that run the key with that meaning against real servers.
var sameRowTests = map[string][]string{
	"`target`, `method`, `headers`, `body`, `body_file`": {"TestE2ECrankfireFlags", "TestE2ECrankfireCorpus"},
	"`concurrency`":                    {"TestE2ECrankfireFlags", "TestLoadCommandFileAndFlags"},
	"`rate`":                           {"TestLoadCommandProgressAndRate", "TestValidateOK"},
	"`duration`, `total`":              {"TestLoadCommandFileAndFlags", "TestLoadGracefulShutdownMeansCrankfires"},
	"`timeout`, `retries`":             {"TestE2ECrankfireFlags", "TestRetryCountsInResult"},
	"`graceful_shutdown`":              {"TestLoadGracefulShutdownMeansCrankfires"},
	"`arrival.model`, `arrival_model`": {"TestSchedulePoissonKS", "TestE2EClusterArrivalModels"},
	"`load_patterns` (`ramp`, `step`, `spike`, `constant`)":                                                 {"TestSchedulePatterns", "TestScheduleRampIsExact"},
	"`endpoints` (`name`, `weight`, `method`, `url`, `path`, `headers`, `body`, `body_file`, `extractors`)": {"TestRunWeightedEndpoints", "TestE2ECrankfireCorpus", "TestValidateErrors"},
	"`protocol`, `websocket`, `sse`, `grpc`":                                                                {"TestE2ECrankfireCorpus", "TestE2ECrankfireFlags"},
	"`feeder` (`path`, `type`)":                                                                             {"TestE2ECrankfireCorpus"},
	"`auth` (all types and keys)":                                                                           {"TestE2ECrankfireCorpus"},
	"`har_file`, `har_filter`":                                                                              {"TestE2ECrankfireCorpus"},
	"`thresholds`":                                                                                          {"TestValidateOK", "TestLoadCommandThresholdFailureExits1"},
	"`tracing` (`endpoint`, `protocol`, `service_name`, `sample_rate`, `insecure`, `propagate`)": {"TestE2ECrankfireFlags", "TestE2ECrankfireCorpus", "TestTracingQuietAndRefused"},
}

// TestCrankfireSameRowsHaveTests keeps the key table honest: every row
// that says "Same" is listed in sameRowTests, and every test named there
// exists. A row added or reworded without a test fails here.
func TestCrankfireSameRowsHaveTests(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "load-config.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Every Crankfire key")
	if !ok {
		t.Fatal(`docs/load-config.md has no "### Every Crankfire key" section`)
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 2 || !strings.HasPrefix(cells[1], "Same") {
			continue
		}
		rows++
		key := strings.TrimPrefix(cells[0], "| ")
		if _, ok := sameRowTests[key]; !ok {
			t.Errorf("the row %s says Same but names no test in sameRowTests", key)
		}
	}
	if rows != len(sameRowTests) {
		t.Errorf("the table has %d Same rows, sameRowTests %d: keep them in step", rows, len(sameRowTests))
	}
	tests := testFuncs(t, root)
	for key, names := range sameRowTests {
		for _, name := range names {
			if !tests[name] {
				t.Errorf("row %s: no test named %s", key, name)
			}
		}
	}
}

// testFuncs returns the names of the Test functions under root/internal.
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	out := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		for _, m := range re.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
