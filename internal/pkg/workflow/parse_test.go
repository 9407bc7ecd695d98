package workflow

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The DESIGN.md section 4 example, as the forge sends it.
const designJob = `name: perf
on: push
run-name: perf for ${{ github.ref }}
env:
  GLOBAL: one
  N: 3
defaults:
  run:
    shell: bash
    working-directory: src
jobs:
  perf:
    runs-on: forgeload
    timeout-minutes: 30
    env:
      JOB: two
    outputs:
      p99: ${{ steps.api.outputs.p99_ms }}
    steps:
      - uses: actions/checkout@v4
      - id: api
        uses: forgeload/load@v1
        with:
          config: perf/api.yaml
          rate: 500
          duration: 1m
          thresholds: |
            http_req_duration:p99 < 300ms
            http_req_failed:rate < 1%
      - run: |
          echo "p99 was ${{ steps.api.outputs.p99_ms }} ms"
          echo done
        if: always()
        continue-on-error: true
        env:
          STEP: three
`

func TestParseDesignExample(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(designJob))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if w.Name != "perf" || w.RunName != "perf for ${{ github.ref }}" || w.JobID != "perf" {
		t.Errorf("Parse() = name %q run-name %q job %q", w.Name, w.RunName, w.JobID)
	}
	if want := map[string]string{"GLOBAL": "one", "N": "3"}; !reflect.DeepEqual(w.Env, want) {
		t.Errorf("Env = %v, want %v", w.Env, want)
	}
	if want := (Defaults{Shell: "bash", WorkingDirectory: "src"}); w.Defaults != want {
		t.Errorf("Defaults = %+v, want %+v", w.Defaults, want)
	}
	j := w.Job
	if !reflect.DeepEqual(j.RunsOn, []string{"forgeload"}) || j.TimeoutMinutes != "30" || j.Env["JOB"] != "two" {
		t.Errorf("Job = %+v", j)
	}
	if j.Outputs["p99"] != "${{ steps.api.outputs.p99_ms }}" {
		t.Errorf("Outputs = %v", j.Outputs)
	}
	if len(j.Steps) != 3 {
		t.Fatalf("len(Steps) = %d, want 3", len(j.Steps))
	}
	for i, s := range j.Steps {
		if s.Index != i {
			t.Errorf("Steps[%d].Index = %d", i, s.Index)
		}
	}
	load := j.Steps[1]
	wantWith := map[string]string{
		"config": "perf/api.yaml", "rate": "500", "duration": "1m",
		"thresholds": "http_req_duration:p99 < 300ms\nhttp_req_failed:rate < 1%\n",
	}
	if load.ID != "api" || load.Uses != "forgeload/load@v1" || !reflect.DeepEqual(load.With, wantWith) {
		t.Errorf("Steps[1] = %+v, want with %v", load, wantWith)
	}
	run := j.Steps[2]
	if run.If != "always()" || run.ContinueOnError != "true" || run.Env["STEP"] != "three" || !strings.HasPrefix(run.Run, "echo \"p99") {
		t.Errorf("Steps[2] = %+v", run)
	}
	if got := w.StepShell(run); got != "bash" {
		t.Errorf("StepShell = %q, want bash", got)
	}
	if got := w.StepWorkingDirectory(run); got != "src" {
		t.Errorf("StepWorkingDirectory = %q, want src", got)
	}
}

// job wraps steps (indented by 6) in a one-job workflow. Its first step
// is on line 5.
func job(steps string) string {
	return "on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n" + steps
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		want    string // the whole error text
	}{
		{"two jobs", "jobs:\n  perf:\n    runs-on: x\n    steps: [{run: a}]\n  build:\n    runs-on: x\n    steps: [{run: a}]\n",
			"workflow has 2 jobs (build, perf); a forge task must carry exactly one"},
		{"zero jobs", "on: push\njobs: {}\n", "workflow line 2: jobs: workflow has no jobs; a forge task must carry exactly one"},
		{"null jobs", "on: push\njobs:\n", "workflow line 2: jobs: workflow has no jobs; a forge task must carry exactly one"},
		{"no jobs key", "on: push\n", "workflow has no jobs: key; a forge task must carry exactly one job"},
		{"empty", "", "workflow is empty; a forge task must carry a workflow with one job"},
		{"not a mapping", "- a\n", `workflow line 1: want a mapping with a jobs: key, got a list`},
		{"neither run nor uses", job("      - name: x\n"), "workflow line 6: steps[0]: a step needs either run: or uses: (with a value)"},
		{"both run and uses", job("      - run: a\n      - run: b\n        uses: c@v1\n"), "workflow line 7: steps[1]: both run: and uses: are set; keep one"},
		{"unknown step key", job("      - run: a\n        shel: sh\n"),
			`workflow line 7: steps[0]: unknown key "shel"; did you mean "shell"? known keys: continue-on-error, env, id, if, name, run, shell, timeout-minutes, uses, with, working-directory`},
		{"unknown job key", "jobs:\n  perf:\n    runs_on: x\n    steps: [{run: a}]\n",
			`workflow line 3: jobs.perf: unknown key "runs_on"; did you mean "runs-on"? known keys: concurrency, container, continue-on-error, defaults, env, environment, if, name, needs, outputs, permissions, runs-on, secrets, services, snapshot, steps, strategy, timeout-minutes, uses, with`},
		{"unknown top key", "jobz: {}\n",
			`workflow line 1: unknown key "jobz"; did you mean "jobs"? known keys: concurrency, defaults, env, jobs, name, on, permissions, run-name`},
		{"service without image", "jobs:\n  perf:\n    runs-on: x\n    services:\n      api: {ports: [8080]}\n    steps: [{run: a}]\n",
			"workflow line 5: jobs.perf.services.api: needs image:, such as image: postgres:16"},
		{"service key misspelt", "jobs:\n  perf:\n    runs-on: x\n    services:\n      api: {image: a, port: [8080]}\n    steps: [{run: a}]\n",
			`workflow line 5: jobs.perf.services.api: unknown key "port"; did you mean "ports"? known keys: cmd, credentials, env, image, options, ports, volumes`},
		{"service port malformed", "jobs:\n  perf:\n    runs-on: x\n    services:\n      api: {image: a, ports: [http]}\n    steps: [{run: a}]\n",
			`workflow line 5: jobs.perf.services.api.ports[0]: "http" is not a port: write 8080, 9000:8080 or 127.0.0.1:9000:8080 (optionally /tcp or /udp)`},
		{"container as a list", "jobs:\n  perf:\n    runs-on: x\n    container: [a]\n    steps: [{run: a}]\n",
			"workflow line 4: jobs.perf.container: want an image name or a mapping with image:, got a list"},
		{"reusable workflow without ref", "jobs:\n  perf:\n    uses: o/r/.github/workflows/x.yml\n",
			`workflow line 3: jobs.perf.uses: "o/r/.github/workflows/x.yml" has no @ref; write ./.gitea/workflows/FILE.yml, owner/repo/.gitea/workflows/FILE.yml@ref or https://host/owner/repo/.gitea/workflows/FILE.yml@ref (.github/workflows works too)`},
		{"reusable workflow outside workflows", "jobs:\n  perf:\n    uses: ./ci/x.yml\n",
			`workflow line 3: jobs.perf.uses: "./ci/x.yml" is not a workflow file in .gitea/workflows or .github/workflows; write ./.gitea/workflows/FILE.yml, owner/repo/.gitea/workflows/FILE.yml@ref or https://host/owner/repo/.gitea/workflows/FILE.yml@ref (.github/workflows works too)`},
		{"reusable workflow climbing out", "jobs:\n  perf:\n    uses: o/../.gitea/workflows/x.yml@v1\n",
			`workflow line 3: jobs.perf.uses: "o/../.gitea/workflows/x.yml@v1": ".." is not a valid owner or repository name (letters, digits, _ . -)`},
		{"reusable workflow with steps", "jobs:\n  perf:\n    uses: ./.gitea/workflows/x.yml\n    steps: [{run: a}]\n",
			"workflow line 4: jobs.perf.steps: a job that calls a reusable workflow (uses:) has no steps: of its own; move them into a job of its own"},
		{"secrets not inherit", "jobs:\n  perf:\n    uses: ./.gitea/workflows/x.yml\n    secrets: all\n",
			`workflow line 4: jobs.perf.secrets: "all": want inherit, or a mapping of secret names to values`},
		{"with without uses", "jobs:\n  perf:\n    runs-on: x\n    with: {a: 1}\n    steps: [{run: a}]\n",
			"workflow line 3: jobs.perf: with: and secrets: only apply to a job that calls a reusable workflow with uses:; remove them, or add uses:"},
		{"no steps", "jobs:\n  perf:\n    runs-on: x\n", "workflow line 3: jobs.perf: a job needs steps: (or uses: to call a reusable workflow)"},
		{"empty steps", "jobs:\n  perf:\n    runs-on: x\n    steps: []\n", "workflow line 4: steps: a job needs at least one step"},
		{"step not mapping", job("      - echo hi\n"), `workflow line 6: steps[0]: want a mapping with run: or uses:, got "echo hi"`},
		{"with not scalar", job("      - uses: a@v1\n        with:\n          x: [1, 2]\n"), "workflow line 8: steps[0].with.x: want a string, number or boolean, got a list"},
		{"with on run step", job("      - run: a\n        with: {x: 1}\n"), "workflow line 7: steps[0].with: only applies to uses: steps; pass values to a run: step with env:"},
		{"shell on uses step", job("      - uses: a@v1\n        shell: bash\n"), "workflow line 7: steps[0].shell: only applies to run: steps; remove it from this uses: step"},
		{"bad step id", job("      - id: 1st\n        run: a\n"), `workflow line 6: steps[0].id: step id "1st" must start with a letter or _ and contain only letters, digits, - and _`},
		{"duplicate step id", job("      - id: a\n        run: a\n      - id: A\n        run: b\n"), `workflow line 8: steps[1].id: id "A" is already used by steps[0]; step ids must be unique`},
		{"duplicate key", job("      - run: a\n        run: b\n"), "workflow line 7: steps[0].run: set twice (first on line 6); keep one"},
		{"bad timeout", job("      - run: a\n        timeout-minutes: soon\n"), `workflow line 7: steps[0].timeout-minutes: "soon" is not a positive number of minutes or a ${{ }} expression`},
		{"first mistake in document order", job("      - run: a\n        timeout-minutes: soon\n        shel: sh\n"), `workflow line 7: steps[0].timeout-minutes: "soon" is not a positive number of minutes or a ${{ }} expression`},
		{"bad continue-on-error", job("      - run: a\n        continue-on-error: maybe\n"), `workflow line 7: steps[0].continue-on-error: "maybe" must be true, false or a ${{ }} expression`},
		{"env not mapping", job("      - run: a\n        env: [A]\n"), "workflow line 7: steps[0].env: want a mapping of names to values, got a list"},
		{"empty run", job("      - run: ''\n"), "workflow line 6: steps[0]: a step needs either run: or uses: (with a value)"},
		{"unknown defaults key", "defaults:\n  run:\n    shel: sh\njobs: {perf: {runs-on: x, steps: [{run: a}]}}\n",
			`workflow line 3: defaults.run: unknown key "shel"; did you mean "shell"? known keys: shell, working-directory`},
		{"bad job id", "jobs:\n  1perf: {runs-on: x, steps: [{run: a}]}\n", `workflow line 2: jobs: job id "1perf" must start with a letter or _ and contain only letters, digits, - and _`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := Parse([]byte(tt.payload))
			if err == nil {
				t.Fatalf("Parse() = %+v, want error %q", w, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse() error =\n  %s\nwant\n  %s", err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("Parse() error %T is not a *ParseError", err)
			}
		})
	}
}

func TestParseYAMLSyntaxError(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ doc, want string }{
		{"jobs:\n  perf:\n    steps: [\n", "workflow line 3: invalid YAML: did not find expected node content"},
		{"on: push\njobs:\n  perf:\n    runs-on: x\n  - y\n", "workflow line 5: invalid YAML: did not find expected key"},
		{"on: push\njobs:\n  perf:\n    runs-on: [a\n", "workflow line 4: invalid YAML: did not find expected ',' or ']'"},
	} {
		_, err := Parse([]byte(tt.doc))
		var pe *ParseError
		if err == nil || err.Error() != tt.want || !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.doc, err, tt.want)
		}
	}
}

func TestParseJobFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		jobYA string // the job's keys other than steps, indented by 4
		check func(t *testing.T, j *Job)
	}{
		{"runs-on string", "    runs-on: forgeload\n", func(t *testing.T, j *Job) {
			if !reflect.DeepEqual(j.RunsOn, []string{"forgeload"}) {
				t.Errorf("RunsOn = %q", j.RunsOn)
			}
		}},
		{"runs-on list", "    runs-on: [forgeload, linux]\n", func(t *testing.T, j *Job) {
			if !reflect.DeepEqual(j.RunsOn, []string{"forgeload", "linux"}) {
				t.Errorf("RunsOn = %q", j.RunsOn)
			}
		}},
		{"runs-on group", "    runs-on:\n      group: perf\n      labels: forgeload\n", func(t *testing.T, j *Job) {
			if !reflect.DeepEqual(j.RunsOn, []string{"forgeload"}) {
				t.Errorf("RunsOn = %q", j.RunsOn)
			}
		}},
		{"matrix expanded by the forge", "    runs-on: x\n    strategy:\n      fail-fast: false\n      matrix:\n        os: [linux]\n        n: [2]\n        cfg: [{a: 1}]\n        many: [1, 2]\n        include: [{os: mac}]\n", func(t *testing.T, j *Job) {
			want := map[string]any{"os": "linux", "n": 2, "cfg": map[string]any{"a": 1}, "many": []any{1, 2}}
			if !reflect.DeepEqual(j.Matrix, want) {
				t.Errorf("Matrix = %#v, want %#v", j.Matrix, want)
			}
		}},
		{"matrix expression", "    runs-on: x\n    strategy:\n      matrix: ${{ fromJSON(needs.a.outputs.m) }}\n", func(t *testing.T, j *Job) {
			if j.Matrix != nil {
				t.Errorf("Matrix = %v, want nil", j.Matrix)
			}
		}},
		{"expressions kept", "    runs-on: x\n    if: ${{ github.ref == 'main' }}\n    timeout-minutes: ${{ inputs.t }}\n    continue-on-error: ${{ matrix.x }}\n", func(t *testing.T, j *Job) {
			if j.If != "${{ github.ref == 'main' }}" || j.TimeoutMinutes != "${{ inputs.t }}" || j.ContinueOnError != "${{ matrix.x }}" {
				t.Errorf("Job = %+v", j)
			}
		}},
		{"empty unsupported keys, as a serialiser may write them", "    runs-on: x\n    container: null\n    services: {}\n    uses: ''\n    with: {}\n    secrets:\n", func(t *testing.T, j *Job) {
			if len(j.Steps) != 1 {
				t.Errorf("Steps = %+v", j.Steps)
			}
		}},
		{"schema keys accepted", "    runs-on: x\n    name: Perf\n    permissions: read-all\n    environment: prod\n    concurrency: perf\n    needs: build\n    snapshot: img\n    defaults: {run: {shell: sh}}\n", func(t *testing.T, j *Job) {
			if j.Name != "Perf" || !reflect.DeepEqual(j.Needs, []string{"build"}) || j.Defaults.Shell != "sh" {
				t.Errorf("Job = %+v", j)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := Parse([]byte("jobs:\n  perf:\n" + tt.jobYA + "    steps: [{run: a}]\n"))
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			tt.check(t, w.Job)
		})
	}
}

// with: scalars render as GitHub renders them.
func TestParseScalarRendering(t *testing.T) {
	t.Parallel()
	tests := []struct{ yaml, want string }{
		{"500", "500"},
		{"1.50", "1.5"},
		{"1.0", "1"},
		{"3.10", "3.1"},
		{"1e3", "1000"},
		{"0x1F", "31"},
		{"true", "true"},
		{"True", "true"},
		{"no", "no"}, // a string in YAML 1.2
		{"~", ""},
		{"null", ""},
		{"'007'", "007"},
		{"1m", "1m"},
		{"\"a: b\"", "a: b"},
		{"2024-01-02", "2024-01-02"},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			t.Parallel()
			w, err := Parse([]byte(job("      - uses: a@v1\n        with:\n          k: " + tt.yaml + "\n")))
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if got := w.Job.Steps[0].With["k"]; got != tt.want {
				t.Errorf("with k: %s = %q, want %q", tt.yaml, got, tt.want)
			}
		})
	}
}

func TestParseDefaultsPrecedence(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(`defaults: {run: {shell: sh, working-directory: top}}
jobs:
  perf:
    runs-on: x
    defaults: {run: {working-directory: job}}
    steps:
      - run: a
      - run: b
        shell: python
        working-directory: step
`))
	if err != nil {
		t.Fatal(err)
	}
	s0, s1 := w.Job.Steps[0], w.Job.Steps[1]
	if got := w.StepShell(s0); got != "sh" {
		t.Errorf("StepShell(steps[0]) = %q, want sh (workflow default)", got)
	}
	if got := w.StepWorkingDirectory(s0); got != "job" {
		t.Errorf("StepWorkingDirectory(steps[0]) = %q, want job (job default)", got)
	}
	if got := w.StepShell(s1); got != "python" {
		t.Errorf("StepShell(steps[1]) = %q, want python", got)
	}
	if got := w.StepWorkingDirectory(s1); got != "step" {
		t.Errorf("StepWorkingDirectory(steps[1]) = %q, want step", got)
	}
}

func TestParseAnchors(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(`env: &e {A: "1"}
jobs:
  perf:
    runs-on: x
    env: *e
    steps: [{run: a, env: *e}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if w.Job.Env["A"] != "1" || w.Job.Steps[0].Env["A"] != "1" {
		t.Errorf("aliases not resolved: job env %v, step env %v", w.Job.Env, w.Job.Steps[0].Env)
	}
}

// Nested aliases that would expand to billions of nodes are refused
// quickly instead of being walked.
func TestParseAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("x0: &a0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("jobs: {perf: {runs-on: x, steps: [{run: a}]}}\n")
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "YAML nodes (through aliases)") {
		t.Errorf("Parse(alias bomb) error = %v, want the alias expansion limit", err)
	}
}

func TestParseJobs(t *testing.T) {
	t.Parallel()
	ws, err := ParseJobs([]byte(`name: ci
jobs:
  build: {runs-on: x, steps: [{run: make}]}
  perf: {runs-on: x, needs: [build], steps: [{run: load}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].JobID != "build" || ws[1].JobID != "perf" || ws[1].Name != "ci" {
		t.Fatalf("ParseJobs() = %+v", ws)
	}
	if !reflect.DeepEqual(ws[1].Job.Needs, []string{"build"}) {
		t.Errorf("perf needs = %v", ws[1].Job.Needs)
	}
}

func TestStepDisplayName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		step Step
		want string
	}{
		{Step{Name: "Load", Uses: "forgeload/load@v1"}, "Load"},
		{Step{Run: "\n  echo hi\necho there"}, "Run echo hi"},
		{Step{Uses: "actions/checkout@v4"}, "Run actions/checkout@v4"},
	}
	for _, tt := range tests {
		if got := tt.step.DisplayName(); got != tt.want {
			t.Errorf("%+v.DisplayName() = %q, want %q", tt.step, got, tt.want)
		}
	}
}

func TestUsesRef(t *testing.T) {
	t.Parallel()
	tests := []struct{ uses, action, ref string }{
		{"actions/checkout@v4", "actions/checkout", "v4"},
		{"forgeload/load@main", "forgeload/load", "main"},
		{"https://gitea.com/actions/checkout@v4", "https://gitea.com/actions/checkout", "v4"},
		{"o/r/path@a@b", "o/r/path@a", "b"},
		{"./local", "./local", ""},
		{"docker://alpine@sha256:abc", "docker://alpine@sha256:abc", ""},
	}
	for _, tt := range tests {
		a, r := UsesRef(tt.uses)
		if a != tt.action || r != tt.ref {
			t.Errorf("UsesRef(%q) = %q, %q; want %q, %q", tt.uses, a, r, tt.action, tt.ref)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(designJob))
	f.Add([]byte(job("      - run: a\n")))
	f.Add([]byte("jobs:\n  a: &x {runs-on: *x, steps: [*x]}\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("jobs: {a: {runs-on: x, strategy: {matrix: {x: [[[1]]]}}, steps: [{uses: a, with: {b: !!binary aGk=}}]}}"))
	f.Add([]byte("jobs: {a: {runs-on: x, container: {image: b, ports: [1]}, services: {db: p:1, api: {image: i, ports: ['[::1]:1:2/udp'], credentials: {username: u}, cmd: [a, b]}}, steps: [{run: a}]}}"))
	f.Add([]byte("jobs: {a: {uses: o/r/.gitea/workflows/x.yml@v1, with: {a: 1}, secrets: inherit}}"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		w, err := Parse(payload)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if w.Job == nil || (len(w.Job.Steps) == 0) == (w.Job.Uses == "") {
			t.Fatalf("Parse() = %+v without a job, or not exactly one of steps and uses, and no error", w)
		}
		for i, s := range w.Job.Steps {
			if s.Index != i || (s.Run == "") == (s.Uses == "") {
				t.Fatalf("steps[%d] = %+v: bad index, or not exactly one of run/uses", i, s)
			}
		}
	})
}

// Empty values of step keys, as a serialiser may write them, are absent.
func TestParseEmptyStepKeys(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(job("      - uses: actions/checkout@v4\n        run: ''\n        shell: ''\n        working-directory:\n        id: ''\n      - run: echo\n        uses: ''\n        with: {}\n")))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if s := w.Job.Steps[0]; s.Uses != "actions/checkout@v4" || s.Run != "" {
		t.Errorf("steps[0] = %+v", s)
	}
	if s := w.Job.Steps[1]; s.Run != "echo" || s.Uses != "" {
		t.Errorf("steps[1] = %+v", s)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// The parsed model of every workflow in testdata/*.yml is pinned in a
// golden JSON file; run go test -update after an intended change.
func TestParseGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.yml: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			payload, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			if w, err := Parse(payload); err != nil {
				got = []byte("error: " + err.Error() + "\n")
			} else if got, err = json.MarshalIndent(w, "", "  "); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".yml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden file (run go test -update to create it): %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("Parse(%s) =\n%s\nwant (%s)\n%s", file, got, golden, want)
			}
		})
	}
}

// services: and container: parse with GitHub's keys; the values stay
// unevaluated for the runner.
func TestParseServicesAndContainer(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(`jobs:
  perf:
    runs-on: x
    container:
      image: busybox:1
      options: --cpus 1
    services:
      api:
        image: ghcr.io/acme/api:${{ github.sha }}
        env: {PORT: 8080}
        ports: ["8080", "127.0.0.1:9000:9000/tcp"]
        volumes: [data:/data]
        options: >-
          --health-cmd "curl -f localhost:8080" --health-interval 2s
        credentials: {username: u, password: "${{ secrets.PW }}"}
      db: postgres:16
    steps: [{run: a}]
`))
	if err != nil {
		t.Fatal(err)
	}
	j := w.Job
	if got := j.ServiceIDs(); strings.Join(got, ",") != "api,db" {
		t.Fatalf("ServiceIDs() = %v, want [api db]", got)
	}
	api := j.Services["api"]
	if api.Image != "ghcr.io/acme/api:${{ github.sha }}" || api.Env["PORT"] != "8080" || len(api.Ports) != 2 ||
		api.Volumes[0] != "data:/data" || !strings.HasPrefix(api.Options, "--health-cmd") ||
		api.Credentials == nil || api.Credentials.Password != "${{ secrets.PW }}" || api.Line != 9 {
		t.Fatalf("services.api = %+v", api)
	}
	if j.Services["db"].Image != "postgres:16" {
		t.Fatalf("services.db = %+v, want image postgres:16", j.Services["db"])
	}
	if j.Container == nil || j.Container.Image != "busybox:1" || j.Container.Options != "--cpus 1" {
		t.Fatalf("container = %+v", j.Container)
	}
}

func TestParseErrorFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		e    ParseError
		want string
	}{
		{ParseError{Line: 3, Path: "steps[0]", Msg: "m"}, "workflow line 3: steps[0]: m"},
		{ParseError{File: "ci.yml", Line: 3, Path: "steps[0]", Msg: "m"}, "ci.yml:3: steps[0]: m"},
		{ParseError{File: "ci.yml", Msg: "m"}, "ci.yml: m"},
		{ParseError{Msg: "m"}, "m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}
