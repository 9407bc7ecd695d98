package workflow

import (
	"strings"
	"testing"
)

func TestParseActionComposite(t *testing.T) {
	t.Parallel()
	a, err := ParseAction(".gitea/actions/build/action.yml", []byte(`
name: build
description: builds it
inputs:
  target:
    description: what to build
    required: true
  level:
    default: ${{ github.ref_name }}
outputs:
  digest:
    description: the digest
    value: ${{ steps.b.outputs.digest }}
runs:
  using: Composite
  steps:
    - id: b
      run: echo "digest=x" >> "$GITHUB_OUTPUT"
      shell: bash
      env:
        T: ${{ inputs.target }}
    - uses: ./other
      if: failure()
      with:
        n: 1
branding:
  icon: box
`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "build" || a.Runs.Using != "composite" || len(a.Runs.Steps) != 2 || a.Runs.Steps[1].Uses != "./other" || a.Runs.Steps[1].With["n"] != "1" {
		t.Fatalf("parsed %+v", a)
	}
	if in := a.Inputs["level"]; !in.HasDefault || in.Default != "${{ github.ref_name }}" || a.Inputs["target"].HasDefault || a.Inputs["target"].Required != "true" {
		t.Fatalf("inputs %+v", a.Inputs)
	}
	if strings.Join(a.InputIDs, ",") != "target,level" || a.Outputs["digest"].Value != "${{ steps.b.outputs.digest }}" {
		t.Fatalf("ids %v outputs %+v", a.InputIDs, a.Outputs)
	}
}

// TestParseActionErrors: bad metadata is an error naming the file, the
// line and the field, and saying how to fix it.
func TestParseActionErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, doc, want string }{
		{"empty", "", "act/action.yml: action metadata is empty"},
		{"no runs", "name: x\n", "act/action.yml:1: runs: missing; an action needs runs: with using:"},
		{"no using", "runs:\n  steps: []\n", "act/action.yml:2: runs.using: missing"},
		{"bad using", "runs:\n  using: node8\n", `act/action.yml:2: runs.using: "node8" is not one of composite, docker, node12, node16, node20, node24`},
		{"no steps", "runs:\n  using: composite\n", "act/action.yml:2: runs.steps: missing; a composite action needs steps:"},
		{"empty steps", "runs:\n  using: composite\n  steps: []\n", "runs.steps: a composite action needs at least one step"},
		{"no shell", "runs:\n  using: composite\n  steps:\n    - run: echo\n", "act/action.yml:4: runs.steps[0].shell: missing; a run: step of a composite action needs shell:"},
		{"bad step key", "runs:\n  using: composite\n  steps:\n    - run: echo\n      shel: bash\n", `act/action.yml:5: runs.steps[0]: unknown key "shel"; did you mean "shell"?`},
		{"typo key", "runz:\n  using: composite\n", `act/action.yml:1: unknown key "runz"; did you mean "runs"?`},
		{"bad input", "inputs:\n  x:\n    defaults: 1\nruns:\n  using: node20\n  main: i.js\n", `act/action.yml:3: inputs.x: unknown key "defaults"; did you mean "default"?`},
		{"input kind", "inputs:\n  x: [1]\nruns:\n  using: node20\n  main: i.js\n", "act/action.yml:2: inputs.x"},
		{"output kind", "outputs:\n  o:\n    value: [1]\nruns:\n  using: node20\n  main: i.js\n", "act/action.yml:3: outputs.o.value"},
		{"steps on node", "runs:\n  using: node20\n  steps: [{run: x, shell: sh}]\n", "runs.steps: only applies to using: composite"},
		{"not a mapping", "- a\n", "act/action.yml:1: want a mapping with runs:"},
		{"docker without image", "runs:\n  using: docker\n  args: [a]\n", "act/action.yml:2: runs.image: missing; a Docker action names its image"},
		{"docker blank image", "runs:\n  using: docker\n  image: ' '\n", "act/action.yml:2: runs.image: missing"},
		{"node without main", "runs:\n  using: node20\n  post: p.js\n", "act/action.yml:2: runs.main: missing; a JavaScript action needs main:"},
		{"args not a list", "runs:\n  using: docker\n  image: Dockerfile\n  args: -c echo\n", "act/action.yml:4: runs.args"},
		{"env not a mapping", "runs:\n  using: docker\n  image: Dockerfile\n  env: [A]\n", "act/action.yml:4: runs.env"},
		{"using not a scalar", "runs:\n  using: [docker]\n", "act/action.yml:2: runs.using"},
		{"runs not a mapping", "runs: docker\n", "act/action.yml:1: runs"},
		{"inputs not a mapping", "inputs: [a]\nruns:\n  using: node20\n  main: i.js\n", "act/action.yml:1: inputs"},
		{"outputs not a mapping", "outputs: x\nruns:\n  using: node20\n  main: i.js\n", "act/action.yml:1: outputs"},
		{"unknown runs key", "runs:\n  using: docker\n  image: Dockerfile\n  entrypoin: /x\n", `act/action.yml:4: runs: unknown key "entrypoin"; did you mean "entrypoint"?`},
		{"main not a scalar", "runs:\n  using: node20\n  main: {a: b}\n", "act/action.yml:3: runs.main"},
		{"syntax", "runs: [\n", "act/action.yml:"},
	} {
		_, err := ParseAction("act/action.yml", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// FuzzParseAction: any bytes parse or fail with an error naming the file;
// never a panic.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		"runs:\n  using: composite\n  steps:\n    - run: echo\n      shell: bash\n",
		"inputs:\n  a: {default: x}\noutputs:\n  o: {value: y}\nruns: {using: node20, main: i.js, post: p.js, post-if: always()}\n",
		"runs: {using: docker, image: Dockerfile, args: [a, b], env: {A: b}}\n",
		"a: &a [*a]\n", "runs:\n  using: composite\n  steps:\n    - uses: ./x\n      with: {a: 1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAction("f/action.yml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "f/action.yml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if a.Runs.Using == "composite" && len(a.Runs.Steps) == 0 {
			t.Fatal("a composite action without steps parsed")
		}
	})
}
