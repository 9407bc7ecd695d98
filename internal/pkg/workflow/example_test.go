package workflow_test

import (
	"fmt"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

func ExampleParse() {
	w, err := workflow.Parse([]byte(`on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
      - id: api
        uses: forgeload/load@v1
        with:
          rate: 500
          duration: 1m
      - run: echo "p99 was ${{ steps.api.outputs.p99_ms }} ms"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range w.Job.Steps {
		action, ref := workflow.UsesRef(s.Uses)
		fmt.Printf("%d %q action=%q ref=%q with=%v\n", s.Index, s.DisplayName(), action, ref, s.With)
	}
	// Output:
	// 0 "Run actions/checkout@v4" action="actions/checkout" ref="v4" with=map[]
	// 1 "Run forgeload/load@v1" action="forgeload/load" ref="v1" with=map[duration:1m rate:500]
	// 2 "Run echo \"p99 was ${{ steps.api.outputs.p99_ms }} ms\"" action="" ref="" with=map[]
}

func ExampleParse_error() {
	_, err := workflow.Parse([]byte(`jobs:
  perf:
    runs-on: forgeload
    steps:
      - name: nothing to do
`))
	fmt.Println(err)
	// Output:
	// workflow line 5: steps[0]: a step needs either run: or uses: (with a value)
}

func ExampleContext_Interpolate() {
	c := &workflow.Context{
		Steps: map[string]workflow.StepResult{"api": {Outputs: map[string]string{"p99_ms": "12.5"}}},
	}
	s, err := c.Interpolate("p99 was ${{ steps.api.outputs.p99_ms }} ms (${{ steps.api.outputs.p99_ms < 300 && 'ok' || 'slow' }})")
	fmt.Println(s, err)
	// Output:
	// p99 was 12.5 ms (ok) <nil>
}

func ExampleContext_EvalIf() {
	c := &workflow.Context{Status: workflow.StatusFailure}
	for _, cond := range []string{"", "github.ref != ''", "${{ always() }}", "failure()"} {
		run, err := c.EvalIf(cond)
		fmt.Printf("%q: %v %v\n", cond, run, err)
	}
	// Output:
	// "": false <nil>
	// "github.ref != ''": false <nil>
	// "${{ always() }}": true <nil>
	// "failure()": true <nil>
}

func ExampleContext_Eval() {
	c := &workflow.Context{}
	_, err := c.Eval("contain(github.ref, 'main')")
	fmt.Println(err)
	// Output:
	// unknown function "contain" in ${{ contain(github.ref, 'main') }}; did you mean "contains"? known: contains, startsWith, endsWith, format, join, toJSON, fromJSON, success, failure, always, cancelled, hashFiles
}
