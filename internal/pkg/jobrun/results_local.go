package jobrun

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// outputKeys takes a load step's Crankfire output keys: html_output is
// kept for writeHTMLOutput, and dashboard: true, which has no browser to
// serve in a job, is answered with where the report goes instead.
func (j *stepJob) outputKeys(cfg *spec.Config) {
	j.htmlOutput = cfg.HTMLOutput
	if cfg.Dashboard {
		j.Logf("::warning::forgeload/load: dashboard: true is not served in a job (no one can open a loopback page on the runner): the HTML report is the run's artifact, or under the results directory of forgeload exec; run forgeload load --dashboard on your machine for the live view")
	}
}

// writeHTMLOutput writes the step's HTML report, masked, to its
// html_output path inside the workspace, and says where; a path that
// cannot be written is an error line and nothing more, like an upload.
func (j *stepJob) writeHTMLOutput(o *outcome.Outcome) {
	if j.htmlOutput == "" {
		return
	}
	err := func() error {
		root, err := j.td.OpenRoot(j.ws)
		if err != nil {
			return err
		}
		defer root.Close()
		var b bytes.Buffer
		if err := outcome.HTML(o, &b); err != nil {
			return err
		}
		f, err := root.Create(filepath.Clean(j.htmlOutput))
		if err != nil {
			return err
		}
		if _, err := f.WriteString(j.rep.Mask(b.String())); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		j.Logf("::error::forgeload/load: html_output %s: the report was not written (the step's result stands): %v; give a path inside the workspace whose directory exists", j.htmlOutput, err)
		return
	}
	j.Logf("report: %s (html_output, in the workspace)", j.htmlOutput)
}

// writeLocalResults writes the step's report.html and result.json (and
// those of its confirming reruns, see [runFiles]), masked, into
// Config.ResultsDir (forgeload exec has no forge to upload them to) and
// says where. Without a ResultsDir it does nothing.
func (j *stepJob) writeLocalResults(st workflow.Step, runs []*outcome.Outcome) {
	if j.deps.ResultsDir == "" {
		return
	}
	dir := filepath.Join(j.deps.ResultsDir, j.artifactName(st, j.i))
	err := os.MkdirAll(dir, 0o755)
	for _, f := range resultFiles(runs) {
		if err != nil {
			break
		}
		var b bytes.Buffer
		if err = f.write(f.o, &b); err == nil {
			err = os.WriteFile(filepath.Join(dir, f.name), []byte(j.rep.Mask(b.String())), 0o644)
		}
	}
	if err != nil {
		j.Logf("::error::forgeload/load: the report was not written to %s (the step's result stands): %v", dir, err)
		return
	}
	for i := range runs {
		report, result := runFiles(i)
		j.Logf("report: %s", filepath.Join(dir, report))
		j.Logf("result: %s", filepath.Join(dir, result))
	}
}
