package workflow

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

const calledYAML = `name: build
on:
  workflow_call:
    inputs:
      target: {type: string, required: true}
      dry: {type: boolean, default: false}
      rate: {type: number, default: "${{ 2 + 3 }}"}
    outputs:
      version:
        description: built version
        value: ${{ jobs.build.outputs.v }}
    secrets:
      TOKEN: {required: true}
      OPTIONAL: {}
jobs:
  build:
    runs-on: x
    outputs: {v: "${{ steps.a.outputs.v }}"}
    steps: [{id: a, run: echo}]
  test:
    needs: build
    runs-on: x
    steps: [{run: echo}]
`

func TestParseCalled(t *testing.T) {
	t.Parallel()
	c, err := ParseCalled([]byte(calledYAML), "o/r/.gitea/workflows/b.yml@v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Jobs) != 2 || c.Jobs[0].JobID != "build" || c.Jobs[1].Job.Needs[0] != "build" {
		t.Errorf("jobs = %+v", c.Jobs)
	}
	if c.Outputs["version"] != "${{ jobs.build.outputs.v }}" || !c.Secrets["TOKEN"] || c.Secrets["OPTIONAL"] {
		t.Errorf("outputs %v secrets %v", c.Outputs, c.Secrets)
	}
	if in := c.Inputs["target"]; !in.Required || in.Type != "string" {
		t.Errorf("target = %+v", in)
	}
	got, err := c.CallInputs(map[string]string{"TARGET": "http://x", "dry": "true"}, func(s string) (string, error) { return "5", nil })
	if err != nil {
		t.Fatal(err)
	}
	if got["target"] != "http://x" || got["dry"] != true || got["rate"] != 5.0 {
		t.Errorf("CallInputs() = %v", got)
	}
}

func TestParseCalledExpandsMatrices(t *testing.T) {
	t.Parallel()
	c, err := ParseCalled([]byte("on: workflow_call\njobs:\n  a:\n    runs-on: x\n    strategy:\n      matrix: {go: ['1.22', '1.23'], os: [linux]}\n    steps: [{run: a}]\n  b:\n    needs: a\n    runs-on: x\n    steps: [{run: b}]\n"), "ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Jobs {
		got = append(got, fmt.Sprintf("%s %q %v", w.JobID, w.Job.Name, w.Job.Matrix))
	}
	want := []string{`a "a (1.22, linux)" map[go:1.22 os:linux]`, `a "a (1.23, linux)" map[go:1.23 os:linux]`, `b "" map[]`}
	if !slices.Equal(got, want) {
		t.Errorf("jobs = %q, want %q", got, want)
	}
}

func TestCallInputsErrors(t *testing.T) {
	t.Parallel()
	c, err := ParseCalled([]byte(calledYAML), "b.yml")
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) (string, error) { return s, nil }
	for _, tt := range []struct {
		with map[string]string
		want string
	}{
		{map[string]string{}, `input "target" is required by the called workflow (on.workflow_call.inputs.target.required); give it under the job's with`},
		{map[string]string{"target": "a", "nope": "1"}, `with.nope: the called workflow declares no input "nope" under on.workflow_call.inputs (it has: dry, rate, target); remove it or declare it`},
		{map[string]string{"target": "a", "dry": "yes"}, `input "dry": is declared type: boolean, and 3 bytes that are not true or false were given; give true or false`},
		{map[string]string{"target": "a", "rate": "fast"}, `input "rate": is declared type: number, and 4 bytes that are not a number were given; give a number`},
	} {
		_, err := c.CallInputs(tt.with, id)
		if err == nil || err.Error() != tt.want {
			t.Errorf("CallInputs(%v) error = %v, want %s", tt.with, err, tt.want)
		}
	}
}

func TestParseCalledErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, yaml, want string }{
		{"not reusable", "on: push\njobs: {a: {runs-on: x, steps: [{run: a}]}}\n",
			"ci.yml:1: on: the workflow is not reusable: its on: has no workflow_call; add on: workflow_call to it"},
		{"bad input type", "on:\n  workflow_call:\n    inputs:\n      a: {type: choice}\njobs: {a: {runs-on: x, steps: [{run: a}]}}\n",
			`ci.yml:4: on.workflow_call.inputs.a.type: type "choice" is not boolean, number or string`},
		{"unknown input key", "on:\n  workflow_call:\n    inputs:\n      a: {typ: string}\njobs: {a: {runs-on: x, steps: [{run: a}]}}\n",
			`ci.yml:4: on.workflow_call.inputs.a: unknown key "typ"; did you mean "type"? known keys: default, description, required, type`},
		{"output without value", "on:\n  workflow_call:\n    outputs:\n      v: {description: x}\njobs: {a: {runs-on: x, steps: [{run: a}]}}\n",
			"ci.yml:4: on.workflow_call.outputs.v: an output needs value: (such as ${{ jobs.build.outputs.version }})"},
		{"expression matrix", "on: workflow_call\njobs:\n  a:\n    runs-on: x\n    strategy:\n      matrix: ${{ fromJSON(inputs.m) }}\n    steps: [{run: a}]\n",
			"ci.yml:6: jobs.a.strategy.matrix: a matrix written as an expression cannot be expanded in a called workflow, which the runner expands; write its dimensions as lists"},
		{"bad job", "on: [workflow_call]\njobs: {a: {runs-on: x}}\n",
			"ci.yml:2: jobs.a: a job needs steps: (or uses: to call a reusable workflow)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCalled([]byte(tt.yaml), "ci.yml")
			var pe *ParseError
			if err == nil || err.Error() != tt.want || !errors.As(err, &pe) {
				t.Errorf("ParseCalled() error =\n  %v\nwant\n  %s", err, tt.want)
			}
		})
	}
}

func TestParseCallRef(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		uses string
		want CallRef
	}{
		{"./.gitea/workflows/b.yml", CallRef{Local: true, Path: ".gitea/workflows/b.yml"}},
		{"o/r/.github/workflows/b.yaml@v1", CallRef{Owner: "o", Repo: "r", Path: ".github/workflows/b.yaml", Ref: "v1"}},
		{"https://git.example:3000/o/r.git/.gitea/workflows/b.yml@main", CallRef{Server: "https://git.example:3000", Owner: "o", Repo: "r", Path: ".gitea/workflows/b.yml", Ref: "main"}},
	} {
		got, err := ParseCallRef(tt.uses)
		if err != nil || got != tt.want {
			t.Errorf("ParseCallRef(%q) = %+v, %v; want %+v", tt.uses, got, err, tt.want)
		}
	}
	for _, bad := range []string{"./.gitea/workflows/b.yml@v1", "o/r@v1", "o/r/.gitea/workflows/sub/b.yml@v1", "o/r/.gitea/workflows/b.yml@-x", "-o/r/.gitea/workflows/b.yml@v1", "https://u:p@h/o/r/.gitea/workflows/b.yml@v1"} {
		if _, err := ParseCallRef(bad); err == nil {
			t.Errorf("ParseCallRef(%q) = nil error", bad)
		}
	}
}

func FuzzParseCalled(f *testing.F) {
	f.Add([]byte(calledYAML))
	f.Add([]byte("on: workflow_call\njobs: {a: {uses: ./.gitea/workflows/x.yml}}"))
	f.Add([]byte("on: {workflow_call: {inputs: {a: {type: number, default: 1}}, secrets: {s: {required: true}}}}\njobs: {a: {runs-on: x, steps: [{run: a}]}}"))
	f.Add([]byte("on: workflow_call\njobs: {a: {runs-on: x, strategy: {matrix: {x: [1, 2], include: [{x: 3, y: a}], exclude: [{x: 1}]}}, steps: [{run: a}]}, b: {needs: a, uses: o/r/.github/workflows/b.yml@v1}}"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := ParseCalled(payload, "f.yml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(c.Jobs) == 0 {
			t.Fatal("no jobs and no error")
		}
		for name, in := range c.Inputs {
			if in.Type != "string" && in.Type != "boolean" && in.Type != "number" {
				t.Fatalf("input %s has type %q", name, in.Type)
			}
		}
	})
}
