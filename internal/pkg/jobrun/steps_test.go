package jobrun

import (
	"maps"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// TestResolveStep: each step kind is resolved once, before it runs, into
// its own type, with every ${{ }} evaluated and every value checked; a
// field that does not resolve is the step's error, naming the step and the
// field.
func TestResolveStep(t *testing.T) {
	t.Parallel()
	wf, err := workflow.Parse([]byte(`on: push
defaults:
  run:
    shell: sh
    working-directory: sub
jobs:
  a:
    runs-on: x
    steps:
      - name: plain
        run: echo ${{ env.WHO }}
        env:
          B: b-${{ env.WHO }}
          A: a
      - name: own
        run: echo own
        shell: ${{ env.SHELL }}
        working-directory: /abs/${{ env.WHO }}
      - uses: actions/checkout@v4
        with:
          ref: ${{ env.WHO }}
      - uses: forgeload/load@v1
        with:
          config: perf/${{ env.WHO }}.yaml
          baseline: main
          rate: "${{ env.WHO }}"
      - uses: docker/build-push-action@v5
      - name: bad shell
        run: echo
        shell: zsh
      - name: bad env
        run: echo
        env:
          X: ${{ nope( }}
      - name: bad dir
        run: echo
        working-directory: ${{ nope( }}
      - name: bad script
        run: echo ${{ nope( }}
      - uses: actions/checkout@v4
        with:
          sparse-checkout: src
      - uses: forgeload/load@v1
        with:
          rate: ${{ nope( }}
`))
	if err != nil {
		t.Fatal(err)
	}
	j := &job{wf: wf, ws: "/ws"}
	ec := &workflow.Context{Env: map[string]string{"WHO": "me", "SHELL": "bash"}}
	steps := wf.Job.Steps
	resolve := func(i int) (step, error) {
		return j.resolveStep(ec, steps[i], steps[i].DisplayName())
	}

	s, err := resolve(0)
	if err != nil {
		t.Fatal(err)
	}
	want := &shellStep{name: "plain", script: "echo me", shell: "sh", env: map[string]string{"A": "a", "B": "b-me"}, dir: "/ws/sub"}
	if got, ok := s.(*shellStep); !ok || got.name != want.name || got.script != want.script || got.shell != want.shell || !maps.Equal(got.env, want.env) || got.dir != want.dir {
		t.Errorf("run: step resolved to %+v, want %+v", s, want)
	}
	s, err = resolve(1)
	if got, ok := s.(*shellStep); err != nil || !ok || got.shell != "bash" || got.dir != "/abs/me" {
		t.Errorf("run: step with its own shell and absolute directory: %+v, %v", s, err)
	}
	s, err = resolve(2)
	if got, ok := s.(*checkoutStep); err != nil || !ok || got.ref != "me" {
		t.Errorf("checkout resolved to %+v, %v", s, err)
	}
	s, err = resolve(3)
	if got, ok := s.(*loadStep); err != nil || !ok || got.config != "perf/me.yaml" || got.baseline.branch != "main" || !maps.Equal(got.inline, map[string]string{"rate": "me"}) {
		t.Errorf("load step resolved to %+v, %v; want config, baseline and the inline keys apart", s, err)
	}
	if s, err = resolve(4); err != nil {
		t.Errorf("unsupported step: %v", err)
	} else if u, ok := s.(unsupportedStep); !ok || u.uses != "docker/build-push-action@v5" {
		t.Errorf("unsupported step resolved to %+v", s)
	}

	for i, want := range map[int]string{
		5:  `step "bad shell": shell "zsh" is not one of bash, sh, python and has no {0} placeholder`,
		6:  `step "bad env": env X: `,
		7:  `step "bad dir": working-directory: `,
		8:  `step "bad script": run: `,
		9:  `actions/checkout: with.sparse-checkout: src is not supported`,
		10: `forgeload/load: with: rate: `,
	} {
		if _, err := resolve(i); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("step %d: %v, want an error with %q", i, err, want)
		}
	}
}
