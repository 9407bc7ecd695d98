package workflow

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

func matrixNode(t testing.TB, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func TestExpandMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, matrix string
		want         []string // each job's suffix
	}{
		{"one dimension", "rate: [10, 20]", []string{" (10)", " (20)"}},
		{"product, first key outermost", "os: [a, b]\nv: [1, 2]", []string{" (a, 1)", " (a, 2)", " (b, 1)", " (b, 2)"}},
		{"suffix in sorted key order", "z: [1]\na: [x]", []string{" (x, 1)"}},
		{"exclude", "os: [a, b]\nv: [1, 2]\nexclude:\n  - {os: a, v: 2}", []string{" (a, 1)", " (b, 1)", " (b, 2)"}},
		{"partial exclude", "os: [a, b]\nv: [1, 2]\nexclude:\n  - {os: a}", []string{" (b, 1)", " (b, 2)"}},
		{"include extends and adds", "os: [a, b]\ninclude:\n  - {os: a, extra: x}\n  - {os: c}", []string{" (x, a)", " (b)", " (c)"}},
		{"include only", "include:\n  - {rate: 5}\n  - {rate: 7}", []string{" (5)", " (7)"}},
		// GitHub's documented example: six combinations.
		{"github example", `fruit: [apple, pear]
animal: [cat, dog]
include:
  - color: green
  - color: pink
    animal: cat
  - fruit: apple
    shape: circle
  - fruit: banana
  - fruit: banana
    animal: cat`, []string{" (cat, pink, apple, circle)", " (dog, green, apple, circle)", " (cat, pink, pear)", " (dog, green, pear)", " (banana)", " (cat, banana)"}},
	} {
		jobs, err := ExpandMatrix(matrixNode(t, tc.matrix), "jobs.x.strategy.matrix")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.Suffix())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: suffixes %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestExpandMatrixErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ matrix, want string }{
		{"rate: 10", "rate: want a list"},
		{"rate: []", "expands to no job"},
		{"include: {a: 1}", "include: want a list of mappings"},
		{"a: [1, 2]\nexclude:\n  - {a: 1}\n  - {a: 2}", "expands to no job"},
		{"a: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]\nb: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", "more than 256 jobs"},
		{"${{ fromJSON(needs.a.outputs.m) }}", "expression matrix"},
	} {
		_, err := ExpandMatrix(matrixNode(t, tc.matrix), "m")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ExpandMatrix(%q) = %v, want an error containing %q", tc.matrix, err, tc.want)
		}
	}
}

// TestMatrixNodeRoundTrip checks that one job's matrix, sent as the forge
// sends it, parses back to the combination's values.
func TestMatrixNodeRoundTrip(t *testing.T) {
	t.Parallel()
	jobs, err := ExpandMatrix(matrixNode(t, "rate: [10, 20]\nname: [\"a b\"]\ninclude:\n  - {rate: 20, extra: [1, 2]}"), "m")
	if err != nil {
		t.Fatal(err)
	}
	j := jobs[1]
	n, err := j.Node()
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "on"}, {Kind: yaml.ScalarNode, Value: "push"},
		{Kind: yaml.ScalarNode, Value: "jobs"}, {Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: "x"}, {Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Value: "runs-on"}, {Kind: yaml.ScalarNode, Value: "x"},
				{Kind: yaml.ScalarNode, Value: "strategy"}, {Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "matrix"}, n}},
				{Kind: yaml.ScalarNode, Value: "steps"}, matrixNode(t, "- run: 'true'"),
			}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := Parse(out)
	if err != nil {
		t.Fatalf("parse %s: %v", out, err)
	}
	want := map[string]any{"rate": 20, "name": "a b", "extra": []any{1, 2}}
	if !reflect.DeepEqual(wf.Job.Matrix, want) {
		t.Errorf("matrix = %v, want %v", wf.Job.Matrix, want)
	}
}

func FuzzExpandMatrix(f *testing.F) {
	for _, s := range []string{"rate: [10, 20]", "a: [1]\ninclude:\n  - {b: 2}\nexclude:\n  - {a: 1}", "include: [{a: 1}]", "a: *x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 || strictyaml.Expanded(doc.Content[0], 10_000) > 10_000 {
			return
		}
		jobs, err := ExpandMatrix(doc.Content[0], "m")
		if err != nil {
			return
		}
		if len(jobs) == 0 || len(jobs) > MaxMatrixJobs {
			t.Fatalf("%d jobs", len(jobs))
		}
		for _, j := range jobs {
			if len(j.Keys) != len(j.Values) {
				t.Fatalf("keys %v, values %v", j.Keys, j.Values)
			}
			_ = j.Suffix()
		}
	})
}
