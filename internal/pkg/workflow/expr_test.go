package workflow

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testContext() *Context {
	return &Context{
		Github: map[string]any{
			"ref":           "refs/heads/main",
			"event_name":    "push",
			"run_id":        "42",
			"repositoryUrl": "https://forge/o/r",
			"event": map[string]any{
				"commits": []any{
					map[string]any{"id": "a1", "author": map[string]any{"name": "ann"}},
					map[string]any{"id": "b2", "author": map[string]any{"name": "bob"}},
					"not an object",
				},
				"labels": map[string]any{"x": map[string]any{"name": "perf"}, "y": map[string]any{"name": "ci"}},
				"number": 7,
			},
		},
		Env:     map[string]string{"RATE": "500", "Empty": ""},
		Vars:    map[string]string{"TARGET": "http://127.0.0.1:8080"},
		Secrets: map[string]string{"TOKEN": "s3cret"},
		Steps: map[string]StepResult{
			"api": {Outputs: map[string]string{"p99_ms": "12.5"}, Outcome: "failure", Conclusion: "success"},
		},
		Needs:    map[string]NeedResult{"build": {Outputs: map[string]string{"version": "1.2"}, Result: "success"}},
		Runner:   map[string]any{"os": "Linux", "arch": "X64", "name": "r1", "temp": "/tmp/r"},
		Matrix:   map[string]any{"n": 3, "os": "linux"},
		Inputs:   map[string]any{"debug": true, "rate": 100.0},
		Strategy: map[string]any{"job-index": 0},
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want any
	}{
		// Literals.
		{"null", nil},
		{"true", true},
		{"false", false},
		{"42", 42.0},
		{"-1.5", -1.5},
		{"0xff", 255.0},
		{"1e3", 1000.0},
		{"'it''s'", "it's"},
		{"Infinity > 1e308", true},
		{"format('{0}', infinity)", "Infinity"},
		{"NaN == NaN", false},
		// Contexts, case-insensitive names and properties.
		{"github.ref", "refs/heads/main"},
		{"GITHUB.REF", "refs/heads/main"},
		{"gitea.event_name", "push"},
		{"forgejo.run_id", "42"},
		{"github.repositoryurl", "https://forge/o/r"},
		{"github['repositoryUrl']", "https://forge/o/r"},
		{"github.event.number", 7.0},
		{"github.nope", nil},
		{"github.nope.deeper", nil},
		{"env.RATE", "500"},
		{"env.rate", "500"},
		{"env['RATE']", "500"},
		{"vars.TARGET", "http://127.0.0.1:8080"},
		{"secrets.TOKEN", "s3cret"},
		{"steps.api.outputs.p99_ms", "12.5"},
		{"steps.API.outcome", "failure"},
		{"steps.api.conclusion", "success"},
		{"steps.missing.outputs.x", nil},
		{"needs.build.outputs.version", "1.2"},
		{"needs.build.result", "success"},
		{"job.status", "success"},
		{"runner.os", "Linux"},
		{"runner.arch", "X64"},
		{"runner.name", "r1"},
		{"runner.temp", "/tmp/r"},
		{"matrix.n", 3.0},
		{"matrix.os", "linux"},
		{"inputs.debug", true},
		{"strategy.job-index", 0.0},
		// Index access.
		{"github.event.commits[1].id", "b2"},
		{"github.event.commits['1'].id", "b2"},
		{"github.event.commits[5]", nil},
		{"github.event.commits[-1]", nil},
		{"github.event.commits[0.5]", nil},
		{"github['event']['commits'][0]['ID']", "a1"},
		{"env[1]", nil},
		{"null[0]", nil},
		// Object filters.
		{"github.event.commits.*.id", []any{"a1", "b2"}},
		{"github.event.commits.*.author.name", []any{"ann", "bob"}},
		{"github.event.labels.*.name", []any{"perf", "ci"}},
		{"github.event.commits.*.nope", []any{}},
		{"env.*", []any{"", "500"}},
		{"github.event.commits.*['id']", []any{"a1", "b2"}},
		// Operators and coercion.
		{"!true", false},
		{"!''", true},
		{"!!'x'", true},
		{"!0", true},
		{"1 == 1.0", true},
		{"'a' == 'A'", true},
		{"'abc' != 'ABC'", false},
		{"1 == '1'", true},
		{"1 == ' 1 '", true},
		{"0 == ''", true},
		{"null == 0", true},
		{"null == ''", true},
		{"null == false", true},
		{"null == null", true},
		{"true == 1", true},
		{"true == '1'", true},
		{"false == 'false'", false}, // 'false' is NaN as a number
		{"'abc' == 0", false},
		{"'0x10' == 16", true},
		{"'1e2' == 100", true},
		{"github.event == github.event", true},
		{"fromJSON('{}') == fromJSON('{}')", false},
		{"github.event == 1", false},
		{"'NaN' == 'NaN'", true}, // both strings: compared as text
		{"'x' == 1", false},
		{"1 < 2", true},
		{"2 <= 2", true},
		{"3 > 2", true},
		{"2 >= 3", false},
		{"'a' < 'B'", true},
		{"'B' > 'a'", true},
		{"'10' > 9", true},
		{"'x' < 1", false},
		{"'x' >= 1", false},
		{"null < 1", true},
		{"false < true", true},
		{"github.event > 1", false},
		// && and || return operand values and short-circuit.
		{"'a' && 'b'", "b"},
		{"'' && 'b'", ""},
		{"0 || 'x'", "x"},
		{"'x' || 'y'", "x"},
		{"null || false", false},
		{"github.nope || 'default'", "default"},
		{"env.RATE == '500' && 'fast' || 'slow'", "fast"},
		{"false && fromJSON('not json')", false},
		{"(1 == 1) && (2 > 1)", true},
		// Functions.
		{"contains('Hello World', 'WORLD')", true},
		{"contains('abc', 'd')", false},
		{"contains(github.event.commits.*.id, 'B2')", true},
		{"contains(fromJSON('[1, 2]'), '2')", true},
		{"contains(fromJSON('[1, 2]'), 3)", false},
		{"contains(123, 2)", true},
		{"startsWith(github.ref, 'REFS/heads')", true},
		{"startsWith('abc', 'b')", false},
		{"endsWith(github.ref, '/MAIN')", true},
		{"endsWith('abc', 'b')", false},
		{"format('{0} is {1}', 'p99', 12)", "p99 is 12"},
		{"format('{{0}} {0}{0}', 'x')", "{0} xx"},
		{"format('}}{{')", "}{"},
		{"format('{0}', null)", ""},
		{"format('{0}', true)", "true"},
		{"format('{0}', 0.5)", "0.5"},
		{"format('{1}{0}', 'a', 'b')", "ba"},
		{"join(github.event.commits.*.id)", "a1,b2"},
		{"join(github.event.commits.*.id, ' | ')", "a1 | b2"},
		{"join('single', '-')", "single"},
		{"join(fromJSON('[1, true, null]'), '')", "1true"},
		{"toJSON('a')", `"a"`},
		{"toJSON(null)", "null"},
		{"toJSON(1.5)", "1.5"},
		{"toJSON(fromJSON('{\"b\":[1,2],\"a\":\"<x>\"}'))", "{\n  \"a\": \"<x>\",\n  \"b\": [\n    1,\n    2\n  ]\n}"},
		{"toJSON(env)", "{\n  \"Empty\": \"\",\n  \"RATE\": \"500\"\n}"},
		{"fromJSON('{\"a\": {\"b\": [10, 20]}}').a.b[1]", 20.0},
		{"fromJSON('true')", true},
		{"fromJSON('null')", nil},
		{"fromJSON(' 3 ')", 3.0},
		{"fromJSON(env.RATE) > 100", true},
		{"success()", true},
		{"failure()", false},
		{"cancelled()", false},
		{"always()", true},
		{"SUCCESS()", true},
		{"toJson(1)", "1"},
	}
	c := testContext()
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, err := c.Eval(tt.expr)
			if err != nil {
				t.Fatalf("Eval(%q) error = %v", tt.expr, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval(%q) = %#v, want %#v", tt.expr, got, tt.want)
			}
		})
	}
}

// Comparisons with NaN are always false, including NaN != NaN being true.
func TestEvalNaN(t *testing.T) {
	t.Parallel()
	c := &Context{}
	for expr, want := range map[string]bool{
		"'abc' == 'x' || 1 < 'abc'": false,
		"'abc' > 0":                 false,
		"'abc' <= 0":                false,
		"'a' != 1":                  true,
		"fromJSON('[]') < 1":        false,
	} {
		got, err := c.Eval(expr)
		if err != nil || got != want {
			t.Errorf("Eval(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
}

func TestEvalStatusFunctions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status                              JobStatus
		success, failure, cancelled, always bool
		jobStatus                           string
	}{
		{"", true, false, false, true, "success"},
		{StatusSuccess, true, false, false, true, "success"},
		{StatusFailure, false, true, false, true, "failure"},
		{StatusCancelled, false, false, true, true, "cancelled"},
	}
	for _, tt := range tests {
		c := &Context{Status: tt.status}
		for fn, want := range map[string]any{
			"success()": tt.success, "failure()": tt.failure, "cancelled()": tt.cancelled,
			"always()": tt.always, "job.status": tt.jobStatus,
		} {
			got, err := c.Eval(fn)
			if err != nil || got != want {
				t.Errorf("status %q: Eval(%q) = %v, %v; want %v", tt.status, fn, got, err, want)
			}
		}
	}
}

func TestEvalIf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status JobStatus
		cond   string
		want   bool
	}{
		{"empty is success()", "", "", true},
		{"empty after failure", StatusFailure, "", false},
		{"plain true", "", "true", true},
		{"wrapped", "", "${{ github.ref == 'refs/heads/main' }}", true},
		{"wrapped with spaces", "", "  ${{ false }}  ", false},
		{"implicit success() after failure", StatusFailure, "true", false},
		{"implicit success() after cancel", StatusCancelled, "github.ref != ''", false},
		{"always() after failure", StatusFailure, "always()", true},
		{"failure() after failure", StatusFailure, "${{ failure() }}", true},
		{"failure() on success", "", "failure()", false},
		{"cancelled()", StatusCancelled, "cancelled()", true},
		{"status func nested", StatusFailure, "!cancelled() && env.RATE == '500'", true},
		{"steps outcome", "", "steps.api.outcome == 'failure'", true},
		{"truthy string", "", "env.RATE", true},
		{"falsy empty", "", "env.Empty", false},
		{"mixed template is a non-empty string", "", "${{ false }} text", true},
		{"expression with }} in a string", "", "${{ '}}' == '}}' }}", true},
	}
	base := testContext()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := *base
			c.Status = tt.status
			got, err := c.EvalIf(tt.cond)
			if err != nil {
				t.Fatalf("EvalIf(%q) error = %v", tt.cond, err)
			}
			if got != tt.want {
				t.Errorf("EvalIf(%q) with status %q = %v, want %v", tt.cond, tt.status, got, tt.want)
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"no expressions", "no expressions"},
		{"p99 was ${{ steps.api.outputs.p99_ms }} ms", "p99 was 12.5 ms"},
		{"${{ env.RATE }}/${{ matrix.n }}/${{inputs.debug}}", "500/3/true"},
		{"[${{ null }}]", "[]"},
		{"${{ 1.0 }} ${{ 0.5 }} ${{ 1e20 }} ${{ -0 }}", "1 0.5 1e+20 0"},
		{"${{ fromJSON('[1,2]') }}", "[\n  1,\n  2\n]"},
		{"${{ github.event.commits.*.id }}", "[\n  \"a1\",\n  \"b2\"\n]"},
		{"${{ '${{ not nested }}' }}", "${{ not nested }}"},
		{"a ${{ '}}' }} b", "a }} b"},
		{"$${{ 'x' }}$", "$x$"},
		{"multi\nline ${{ runner.os }}\n", "multi\nline Linux\n"},
	}
	c := testContext()
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := c.Interpolate(tt.in)
			if err != nil {
				t.Fatalf("Interpolate(%q) error = %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string // the whole error text
	}{
		{"contain(github.ref, 'main')",
			`unknown function "contain" in ${{ contain(github.ref, 'main') }}; did you mean "contains"? known: contains, startsWith, endsWith, format, join, toJSON, fromJSON, success, failure, always, cancelled, hashFiles`},
		{"frobnicate()",
			`unknown function "frobnicate" in ${{ frobnicate() }}; known: contains, startsWith, endsWith, format, join, toJSON, fromJSON, success, failure, always, cancelled, hashFiles`},
		{"secret.TOKEN",
			`unknown context "secret" in ${{ secret.TOKEN }}; did you mean "secrets"? known: github, gitea, forgejo, env, vars, secrets, steps, needs, job, runner, matrix, inputs, strategy, jobs`},
		// Unknown names are errors even where evaluation would not reach.
		{"false && nope.x",
			`unknown context "nope" in ${{ false && nope.x }}; known: github, gitea, forgejo, env, vars, secrets, steps, needs, job, runner, matrix, inputs, strategy, jobs`},
		{"contains('a')", "contains takes 2 argument(s), got 1 in ${{ contains('a') }}"},
		{"join()", "join takes 1 or 2 argument(s), got 0 in ${{ join() }}"},
		{"format()", "format takes at least 1 argument(s), got 0 in ${{ format() }}"},
		{"success(1)", "success takes 0 argument(s), got 1 in ${{ success(1) }}"},
		{"hashFiles('**/go.sum')", "hashFiles in ${{ hashFiles('**/go.sum') }}: there are no files to hash here; hashFiles() works in a step's fields (with:, env:, run:, if:) and in job outputs, once the job has a workspace"},
		{"format('{0} {1}', 'a')", "format in ${{ format('{0} {1}', 'a') }}: {1} refers to argument 1, but only 1 argument(s) follow the format string"},
		{"format('{x}', 'a')", "format in ${{ format('{x}', 'a') }}: the { at position 0 does not start a {N} placeholder; write {N} for argument N, or {{ for a literal brace"},
		{"format('{0', 'a')", "format in ${{ format('{0', 'a') }}: unclosed { at position 0; write {N} for argument N, or {{ for a literal brace"},
		{"format('a}b')", "format in ${{ format('a}b') }}: lone } at position 1; write }} for a literal brace"},
		{"fromJSON('{')", "fromJSON in ${{ fromJSON('{') }}: the argument is not valid JSON (syntax error at byte 1 of 1)"},
		{"fromJSON('{x')", "fromJSON in ${{ fromJSON('{x') }}: the argument is not valid JSON (syntax error at byte 2 of 2)"},
		// Neither the format string nor the JSON text (maybe a secret) is echoed.
		{"fromJSON(secrets.TOKEN)", "fromJSON in ${{ fromJSON(secrets.TOKEN) }}: the argument is not valid JSON (syntax error at byte 1 of 6)"},
		{"format(format('{0}{1}}}', '{', secrets.TOKEN))", "format in ${{ format(format('{0}{1}}}', '{', secrets.TOKEN)) }}: the { at position 0 does not start a {N} placeholder; write {N} for argument N, or {{ for a literal brace"},
		{"fromJSON('')", "fromJSON in ${{ fromJSON('') }}: the argument is empty, not JSON"},
		{"", "empty expression ${{ }}; write an expression between the braces"},
		{"a }} b", "invalid expression ${{ a }} b }}: unexpected }} at byte 2; an expression ends at the first }} outside a string"},
	}
	c := testContext()
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, err := c.Eval(tt.expr)
			if err == nil {
				t.Fatalf("Eval(%q) = %#v, want error %q", tt.expr, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Eval(%q) error =\n  %s\nwant\n  %s", tt.expr, err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Eval(%q) error %q shows a secret value", tt.expr, err)
			}
		})
	}
}

func TestEvalSyntaxErrors(t *testing.T) {
	t.Parallel()
	c := &Context{}
	for _, expr := range []string{"1 +", "(1", "github.", "'open", "a[", "1 2", "&&", "github.*.", strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), strings.Repeat("x", MaxExprBytes+1)} {
		if _, err := c.Eval(expr); err == nil || !strings.Contains(err.Error(), "expression") {
			t.Errorf("Eval(%.40q) error = %v, want an error naming the expression", expr, err)
		}
	}
	for _, s := range []string{"a ${{ env.X", "${{ '}} }}"} {
		if _, err := c.Interpolate(s); err == nil || !strings.Contains(err.Error(), "unterminated") {
			t.Errorf("Interpolate(%q) error = %v, want unterminated", s, err)
		}
	}
	if _, err := c.Interpolate("x ${{ nope }}"); err == nil || !strings.Contains(err.Error(), `unknown context "nope"`) {
		t.Errorf("Interpolate(unknown context) error = %v", err)
	}
	if _, err := c.EvalIf("${{ contain('a', 'b') }}"); err == nil || !strings.Contains(err.Error(), `unknown function "contain"`) {
		t.Errorf("EvalIf(unknown function) error = %v", err)
	}
}

func TestNumberRendering(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{
		0: "0", 1: "1", -3: "-3", 0.1 + 0.2: "0.3", 1.5e-7: "1.5e-07", 123456789012345: "123456789012345",
		1e15: "1e+15", math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity",
	} {
		if got := formatNumber(f); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", f, got, want)
		}
	}
	for s, want := range map[string]float64{"": 0, " 12 ": 12, "-1.5": -1.5, "1e3": 1000, "0x1A": 26, ".5": 0.5, "+2": 2, "Infinity": math.Inf(1)} {
		if got := parseNumber(s); got != want {
			t.Errorf("parseNumber(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"abc", "1_000", "inf", "NaN", "0x", "1e", "--1", "1.2.3"} {
		if got := parseNumber(s); !math.IsNaN(got) {
			t.Errorf("parseNumber(%q) = %v, want NaN", s, got)
		}
	}
}

// A Context is read-only during evaluation, so parallel use is safe.
func TestEvalConcurrent(t *testing.T) {
	t.Parallel()
	c := testContext()
	done := make(chan error)
	for range 8 {
		go func() {
			var err error
			for range 100 {
				var v any
				if v, err = c.Eval("toJSON(github.event.commits.*.id) != '' && steps.api.outputs.p99_ms"); err == nil && v != "12.5" {
					err = errTest
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

var errTest = errorString("unexpected value")

type errorString string

func (e errorString) Error() string { return string(e) }

func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"github.event.commits.*.id", "contains(env.RATE, '5') && format('{0}{{', 1) || toJSON(matrix)",
		"fromJSON('[[[[1]]]]')[0][0]", "!!!!!!!!!!!!!(1 < 'a')", "join(github.*.*.*, '')", "a }} b",
		"fromJSON(format('[{0}]', env.RATE))[0] >= 0x10", "steps.*.outputs['p99_ms']",
		strings.Repeat("(", 150) + "1" + strings.Repeat(")", 150),
		strings.Repeat("!", 500) + "1", strings.Repeat("a.", 2000) + "b", strings.Repeat("1 == ", 1000) + "1",
	} {
		f.Add(s)
	}
	c := testContext()
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := c.Eval(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if s, ok := v.(string); ok && len(s) > MaxResultBytes {
			t.Fatalf("Eval(%q) built a %d-byte string, over MaxResultBytes", expr, len(s))
		}
		_ = render(v)
		if _, err := c.EvalIf(expr); err != nil {
			t.Fatalf("Eval(%q) succeeded but EvalIf failed: %v", expr, err)
		}
	})
}

func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{
		"p99 ${{ steps.api.outputs.p99_ms }} ms", "${{", "${{ '}}", "}}${{}}", "${{ '' }}${{ null }}",
		"$${{${{ 1 }}}}", "${{ toJSON(github) }}", "${{ format('{0}', '${{') }}",
		"${{ format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', 'abcdefgh')))))) }}",
	} {
		f.Add(s)
	}
	c := testContext()
	f.Fuzz(func(t *testing.T, s string) {
		out, err := c.Interpolate(s)
		if err == nil && len(out) > len(s)+MaxResultBytes {
			t.Fatalf("Interpolate(%q) = %d bytes, more than the text plus MaxResultBytes", s, len(out))
		}
		if err == nil && !strings.Contains(s, "${{") && out != s {
			t.Fatalf("Interpolate(%q) = %q changed text without ${{ }}", s, out)
		}
	})
}

func TestEvalFields(t *testing.T) {
	t.Parallel()
	c := testContext()
	bools := []struct {
		field string
		want  bool
	}{
		{"", false}, {"false", false}, {"true", true},
		{"${{ inputs.debug }}", true},
		{"${{ matrix.os == 'mac' }}", false},
		{"${{ failure() }}", false},
		{"env.RATE == '500'", true},
	}
	for _, tt := range bools {
		if got, err := c.EvalBool(tt.field); err != nil || got != tt.want {
			t.Errorf("EvalBool(%q) = %v, %v; want %v", tt.field, got, err, tt.want)
		}
	}
	mins := []struct {
		field string
		want  time.Duration
	}{
		{"", 0}, {"10", 10 * time.Minute}, {"0.5", 30 * time.Second},
		{"${{ matrix.n }}", 3 * time.Minute}, {"${{ env.RATE }}", 500 * time.Minute},
		{"${{ matrix.n }}0", 30 * time.Minute},
	}
	for _, tt := range mins {
		if got, err := c.EvalMinutes(tt.field); err != nil || got != tt.want {
			t.Errorf("EvalMinutes(%q) = %v, %v; want %v", tt.field, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${{ runner.os }}", "-1", "${{ 0 }}", "${{ nope }}", "${{ 1e300 }}"} {
		if got, err := c.EvalMinutes(bad); err == nil {
			t.Errorf("EvalMinutes(%q) = %v, want an error", bad, got)
		}
	}
	got, err := c.InterpolateMap(map[string]string{"A": "${{ env.RATE }}rps", "B": "plain"})
	if want := map[string]string{"A": "500rps", "B": "plain"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("InterpolateMap() = %v, %v; want %v", got, err, want)
	}
	if _, err := c.InterpolateMap(map[string]string{"BAD": "${{ nope.x }}"}); err == nil || !strings.HasPrefix(err.Error(), `BAD: unknown context "nope"`) {
		t.Errorf("InterpolateMap(bad) error = %v, want it to name the key", err)
	}
}

func TestInputsContext(t *testing.T) {
	t.Parallel()
	g := map[string]any{"event": map[string]any{"inputs": map[string]any{"rate": "10"}}}
	if got := InputsContext(g, nil); !reflect.DeepEqual(got, map[string]any{"rate": "10"}) {
		t.Errorf("InputsContext() = %v", got)
	}
	if got := InputsContext(map[string]any{}, nil); got != nil {
		t.Errorf("InputsContext(no event) = %v, want nil", got)
	}
}

// TestTypedInputs: workflow_dispatch inputs arrive as strings; the inputs
// context carries those declared boolean or number as such (issue 30), and
// github.event.inputs keeps the strings.
func TestTypedInputs(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(`on:
  workflow_dispatch:
    inputs:
      dry_run: {type: boolean, default: true}
      force: {type: Boolean}
      empty: {type: boolean}
      odd: {type: boolean}
      rate: {type: number}
      bad_rate: {type: number}
      env: {type: environment}
      level: {type: choice, options: [info, debug]}
      name: {description: no type means string}
  push:
jobs:
  perf:
    runs-on: forgeload
    steps: [{run: "true"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	ev := map[string]any{
		"dry_run": "false", "force": "TRUE", "empty": "", "odd": "yes", "rate": "250",
		"bad_rate": "fast", "env": "prod", "level": "debug", "name": "7", "undeclared": "true",
	}
	g := map[string]any{"event_name": "workflow_dispatch", "event": map[string]any{"inputs": ev}}
	got := InputsContext(g, w.InputTypes)
	want := map[string]any{
		"dry_run": false, "force": true, "empty": false, "odd": "yes", "rate": 250.0,
		"bad_rate": "fast", "env": "prod", "level": "debug", "name": "7", "undeclared": "true",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InputsContext() = %#v\nwant %#v", got, want)
	}
	if ev["dry_run"] != "false" {
		t.Errorf("github.event.inputs.dry_run = %#v, want it left the string \"false\"", ev["dry_run"])
	}
	c := &Context{Github: g, Inputs: got}
	for cond, want := range map[string]bool{
		"inputs.dry_run":                         false,
		"${{ !inputs.dry_run }}":                 true,
		"inputs.force":                           true,
		"inputs.rate > 100":                      true,
		"github.event.inputs.dry_run":            true, // a non-empty string
		"github.event.inputs.dry_run == 'false'": true,
	} {
		if ok, err := c.EvalIf(cond); err != nil || ok != want {
			t.Errorf("EvalIf(%q) = %v, %v; want %v", cond, ok, err, want)
		}
	}
	for _, on := range []string{"on: push", "on: [push, workflow_dispatch]", "on: {workflow_dispatch: }", "on: {workflow_dispatch: {inputs: [a]}}", "on: {workflow_dispatch: {inputs: {a: x}}}"} {
		w, err := Parse([]byte(on + "\njobs: {j: {runs-on: x, steps: [{run: a}]}}\n"))
		if err != nil || len(w.InputTypes) != 0 {
			t.Errorf("Parse(%s) InputTypes = %v, %v; want none", on, w.InputTypes, err)
		}
	}
}

// TestNeedsStatus: a job-level if: sees the results of the jobs it needs
// (issue 30); no if: means success().
func TestNeedsStatus(t *testing.T) {
	t.Parallel()
	needs := func(results ...string) map[string]NeedResult {
		m := map[string]NeedResult{}
		for i, r := range results {
			m[fmt.Sprintf("j%d", i)] = NeedResult{Result: r, Outputs: map[string]string{}}
		}
		return m
	}
	conds := []string{"", "success()", "failure()", "cancelled()", "always()", "needs.j0.result == 'failure'", "${{ failure() && needs.j0.result == 'failure' }}"}
	tests := []struct {
		needs  map[string]NeedResult
		status JobStatus
		want   []bool // per cond
	}{
		{needs(), StatusSuccess, []bool{true, true, false, false, true, false, false}},
		{needs("success", "success"), StatusSuccess, []bool{true, true, false, false, true, false, false}},
		{needs("failure", "success"), StatusFailure, []bool{false, false, true, false, true, false, true}},
		{needs("cancelled"), StatusCancelled, []bool{false, false, false, true, true, false, false}},
		{needs("failure", "cancelled"), StatusFailure, []bool{false, false, true, false, true, false, true}},
		{needs("skipped", "success"), StatusSkipped, []bool{false, false, false, false, true, false, false}},
		{needs("unspecified"), StatusFailure, []bool{false, false, true, false, true, false, false}},
	}
	for _, tt := range tests {
		st := NeedsStatus(tt.needs)
		if st != tt.status {
			t.Errorf("NeedsStatus(%v) = %q, want %q", tt.needs, st, tt.status)
		}
		c := &Context{Needs: tt.needs, Status: st}
		for i, cond := range conds {
			if i == 5 && len(tt.needs) == 0 {
				continue
			}
			ok, err := c.EvalIf(cond)
			if err != nil || ok != tt.want[i] {
				t.Errorf("needs %v: EvalIf(%q) = %v, %v; want %v", tt.needs, cond, ok, err, tt.want[i])
			}
		}
	}
}

// TestResultBound: nested format(), join() and toJSON() that would expand a
// short workflow to gigabytes fail with the limit named, having built at
// most about MaxResultBytes.
func TestResultBound(t *testing.T) {
	t.Parallel()
	c := testContext()
	// Each level repeats the one below ten times: 10^9 bytes at level 9.
	nested := "'x'"
	for range 9 {
		nested = "format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', " + nested + ")"
	}
	// 8192 numbers 90 arrays deep: 16 KiB of JSON, 1.5 MB once indented.
	ones := "format('{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', '1,')))))"
	huge := "fromJSON(format('{0}{1}1{2}', '" + strings.Repeat("[", 90) + "', " + ones + ", '" + strings.Repeat("]", 90) + "'))"
	for _, expr := range []string{
		nested,
		"join(fromJSON('[1,2,3,4,5,6,7,8,9]'), " + nested + ")",
		"toJSON(" + huge + ")",
	} {
		_, err := c.Eval(expr)
		if err == nil || !strings.Contains(err.Error(), "limit on expression results") {
			t.Errorf("Eval(%.80s…) = %v, want the result limit", expr, err)
		}
	}
	if _, err := c.Interpolate("${{ " + nested + " }}"); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("Interpolate(nested format) = %v, want the 1 MiB limit", err)
	}
	// Many expressions, each under the limit, are bounded together.
	half := "${{ format('{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}', 'abcdefgh')))))) }}"
	if out, err := c.Interpolate(half); err != nil || len(out) != 1<<19 {
		t.Fatalf("Interpolate(512 KiB) = %d bytes, %v; want 524288 bytes", len(out), err)
	}
	if _, err := c.Interpolate(half + half + half); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("Interpolate(3 × 512 KiB) = %v, want the 1 MiB limit", err)
	}
}

// TestHashFilesCallsContext: hashFiles() passes its arguments, as strings,
// to Context.HashFiles and returns its value or error. Before, every
// hashFiles() was refused when parsed.
func TestHashFilesCallsContext(t *testing.T) {
	t.Parallel()
	var got []string
	c := &Context{HashFiles: func(p []string) (string, error) {
		got = p
		if p[0] == "bad" {
			return "", errors.New("hashFiles: pattern bad")
		}
		return "abc123", nil
	}}
	v, err := c.Interpolate("key-${{ hashFiles('**/go.sum', 1) }}")
	if err != nil || v != "key-abc123" || len(got) != 2 || got[0] != "**/go.sum" || got[1] != "1" {
		t.Fatalf("Interpolate = %q, %v; patterns %q", v, err, got)
	}
	if _, err := c.Interpolate("${{ hashFiles('bad') }}"); err == nil || !strings.Contains(err.Error(), "pattern bad") {
		t.Fatalf("a failing hashFiles: %v", err)
	}
}
