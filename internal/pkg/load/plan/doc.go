// Package plan turns a validated load config (package spec) into a runnable
// load test: engine options (package load), the HTTP driver (package
// httpload) and the parsed thresholds, checked against the runner's limits;
// and after the run it evaluates the thresholds on the merged result and
// turns them into the summary's checks. The `forgeload load` command and the
// `forgeload/load@v1` step both build their runs here, so the two behave
// the same.
package plan
