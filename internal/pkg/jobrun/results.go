package jobrun

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// runInfo describes the load step for its reports: the run's repository,
// ref, commit, workflow, job and run, this runner and version, and the
// load config with credentials masked, then its keys and values (an
// endpoint's name is in its key) masked again with the job's secrets.
func (j *job) runInfo(st workflow.Step, cfg *spec.Config) *summary.RunInfo {
	info := &summary.RunInfo{
		Repository: j.ctxString("repository"), Ref: j.ctxString("ref"), Commit: j.ctxString("sha"),
		Workflow: j.ctxString("workflow"), Job: j.wf.JobID, RunID: j.ctxString("run_id"),
		Runner: j.deps.Name, Version: j.deps.Version, Step: cmp.Or(st.ID, st.DisplayName()),
		Protocol: loadrun.Protocol(cfg), Config: build.Describe(cfg), Phases: build.Phases(cfg),
	}
	for k := range info.Config {
		info.Config[k].Key = j.rep.Mask(info.Config[k].Key)
		info.Config[k].Value = j.rep.Mask(info.Config[k].Value)
	}
	return info
}

// uploadResults uploads the step's HTML report and JSON result, in one zip,
// as a run artifact, so that they can be downloaded from the run's page;
// a step that ran again to confirm a regression has each run's (see
// [runFiles]). The content is masked like every log row. A failed upload
// is an error line in the step log and nothing more: the measured result
// and the step's verdict do not depend on it.
func (j *stepJob) uploadResults(st workflow.Step, runs []*outcome.Outcome) {
	up := j.deps.Publisher
	if up == nil || j.runtimeToken() == "" {
		j.writeLocalResults(st, runs)
		return
	}
	name := j.artifactName(st, j.i)
	data, files, err := j.resultsZip(runs)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var id int64
		if id, err = up.UploadArtifact(ctx, j.runtimeToken(), name, data); err == nil {
			j.Logf("report and JSON result uploaded as run artifact %q (id %d, %d bytes): %s", name, id, len(data), strings.Join(files, ", "))
			return
		}
		if j.rep.Context().Err() != nil {
			j.refusedOnCancel(err)
			return
		}
	}
	j.Logf("::error::forgeload/load: the report was not uploaded as a run artifact (the step's result stands): %v", err)
}

// resultFile is one file of a step's results: its name and writer.
type resultFile struct {
	name  string
	o     *outcome.Outcome
	write outcome.Writer
}

// resultFiles are the report and the JSON result of each run, named by
// [runFiles].
func resultFiles(runs []*outcome.Outcome) []resultFile {
	var fs []resultFile
	for i, o := range runs {
		report, result := runFiles(i)
		fs = append(fs, resultFile{report, o, outcome.HTML}, resultFile{result, o, outcome.JSON})
	}
	return fs
}

// resultsZip zips each run's report and result, each masked, and returns
// the zip and the names of its files.
func (j *job) resultsZip(runs []*outcome.Outcome) ([]byte, []string, error) {
	var b bytes.Buffer
	var names []string
	zw := zip.NewWriter(&b)
	for _, f := range resultFiles(runs) {
		var content bytes.Buffer
		if err := f.write(f.o, &content); err != nil {
			return nil, nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: f.o.Result.Start})
		if err != nil {
			return nil, nil, fmt.Errorf("zip %s: %w", f.name, err)
		}
		if _, err := w.Write([]byte(j.rep.Mask(content.String()))); err != nil {
			return nil, nil, fmt.Errorf("zip %s: %w", f.name, err)
		}
		names = append(names, f.name)
	}
	if err := zw.Close(); err != nil {
		return nil, nil, fmt.Errorf("zip the results: %w", err)
	}
	return b.Bytes(), names, nil
}

// defaultBranch is the repository's default branch from the event
// payload, else "main".
func (j *job) defaultBranch() string {
	if ev, ok := j.github["event"].(map[string]any); ok {
		if repo, ok := ev["repository"].(map[string]any); ok {
			if b, ok := repo["default_branch"].(string); ok && b != "" {
				return b
			}
		}
	}
	return "main"
}

// baseline fetches the JSON results of the same step of the same job and
// workflow (its run artifacts) from the newest successful runs on the
// step's baseline: branch (true or an empty branch name means the
// repository's default branch), ask.runs of them at most, and returns
// them as one baseline: their median ([compare.History]). Without a
// baseline (none asked, none yet, or the forge cannot give one) it says
// so in the log and returns nil: the baseline thresholds are then skipped.
func (j *stepJob) baseline(st workflow.Step, ask baselineAsk, ths []threshold.Threshold) *compare.Result {
	skip := "the thresholds that use baseline are skipped"
	if _, asked := st.With["baseline"]; !asked {
		if threshold.HasBaseline(ths) {
			j.Logf("::notice::forgeload/load: no baseline: key on this step, so %s", skip)
		}
		return nil
	}
	branch := ask.branch
	if branch == "" || branch == "true" {
		branch = j.defaultBranch()
	}
	f := j.deps.Publisher
	token := j.task.GetContext().GetFields()["token"].GetStringValue()
	if f == nil || token == "" {
		j.Logf("::notice::forgeload/load: this runner cannot fetch a baseline from the forge here, so %s", skip)
		return nil
	}
	q := client.HistoryQuery{
		Repo: j.ctxString("repository"), Branch: branch, Workflow: j.ctxString("workflow"),
		Name: j.artifactName(st, j.i), N: ask.runs,
	}
	q.Exclude, _ = strconv.ParseInt(j.ctxString("run_id"), 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	arts, err := f.ArtifactHistory(ctx, token, q)
	if errors.Is(err, client.ErrNoArtifact) {
		j.Logf("::notice::forgeload/load: no baseline yet: no successful run of workflow %q on branch %q has the artifact %q; %s", q.Workflow, branch, q.Name, skip)
		return nil
	}
	if err != nil {
		j.Logf("::warning::forgeload/load: baseline not read: %v; %s", err, skip)
		return nil
	}
	runs, ids := j.readHistory(arts, branch)
	if len(runs) == 0 {
		j.Logf("::warning::forgeload/load: baseline not read: no result of %q could be read; %s", q.Name, skip)
		return nil
	}
	j.Logf("baseline: %s", describeHistory(q, ids))
	return compare.History(runs)
}

// resultFromZip reads result.json out of a results artifact.
func resultFromZip(b []byte, name string) (*compare.Result, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("baseline artifact of %s is not a zip: %w", name, err)
	}
	for _, f := range zr.File {
		if f.Name != "result.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("baseline artifact of %s: %w", name, err)
		}
		defer rc.Close()
		return compare.Read(rc, name)
	}
	return nil, fmt.Errorf("baseline artifact of %s has no result.json", name)
}

// writeBaseline logs the comparison with the baseline and returns it as
// Markdown for the job summary.
func (j *stepJob) writeBaseline(o *outcome.Outcome) []byte {
	ds := o.Deltas()
	if err := compare.WriteText(j.Writer(), o.Baseline.Path, "this run", ds); err != nil {
		j.Logf("::warning::comparison not written: %v", err)
	}
	var md bytes.Buffer
	_ = compare.WriteMarkdown(&md, o.Baseline.Path, "this run", ds)
	return md.Bytes()
}
