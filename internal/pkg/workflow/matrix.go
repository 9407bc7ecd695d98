package workflow

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// MaxMatrixJobs is the most jobs one strategy.matrix may expand to
// (GitHub's limit).
const MaxMatrixJobs = 256

// MatrixJob is one combination of an expanded strategy.matrix: one job.
type MatrixJob struct {
	// Keys are the combination's keys: the matrix's dimensions in the order
	// written, then the keys that include: added.
	Keys []string
	// Values are the combination's values by key.
	Values map[string]any
}

// Suffix returns the suffix Gitea appends to the job's name, " (v1, v2)":
// the values in the order of their sorted keys.
func (j MatrixJob) Suffix() string {
	if len(j.Values) == 0 {
		return ""
	}
	keys := sortedMapKeys(j.Values)
	vs := make([]string, len(keys))
	for i, k := range keys {
		vs[i] = fmt.Sprint(j.Values[k])
	}
	return " (" + strings.Join(vs, ", ") + ")"
}

// Node returns the combination as a strategy.matrix mapping whose every key
// holds a one-element list, the form in which the forge sends one job of an
// expanded matrix (and which [Job.Matrix] unwraps).
func (j MatrixJob) Node() (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range j.Keys {
		var v yaml.Node
		if err := v.Encode([]any{j.Values[k]}); err != nil {
			return nil, fmt.Errorf("matrix value %s: %w", k, err)
		}
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &v)
	}
	return out, nil
}

// ExpandMatrix expands a job's strategy.matrix mapping into one MatrixJob per
// job, as GitHub documents and Gitea does: the product of the dimensions
// (the first one outermost), without the combinations that match an
// exclude: entry on every key it names; then each include: entry is added
// to every combination whose dimension values it does not change, or, when
// there is none, becomes a combination of its own. path names the node in
// errors. A matrix given as an expression cannot be expanded here.
func ExpandMatrix(n *yaml.Node, path string) ([]MatrixJob, error) {
	n = strictyaml.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, want(n, path, "a mapping of dimensions to lists (an expression matrix needs the forge to expand it)")
	}
	m, err := readMatrix(n, path)
	if err != nil {
		return nil, err
	}
	jobs, ok := m.product()
	if !ok {
		return nil, perr(n, path, "expands to more than %d jobs; split it", MaxMatrixJobs)
	}
	jobs = slices.DeleteFunc(jobs, func(j MatrixJob) bool {
		return slices.ContainsFunc(m.exclude, func(ex map[string]any) bool { return j.matches(ex, nil) })
	})
	jobs = m.applyIncludes(jobs)
	if len(jobs) > MaxMatrixJobs {
		return nil, perr(n, path, "expands to more than %d jobs; split it", MaxMatrixJobs)
	}
	if len(jobs) == 0 {
		return nil, perr(n, path, "expands to no job (an empty dimension, or everything excluded)")
	}
	return jobs, nil
}

// matrixSpec is a strategy.matrix mapping as written: its dimensions in order,
// their values, and its include: and exclude: entries.
type matrixSpec struct {
	dims             []string
	lists            map[string][]any
	include, exclude []map[string]any
}

// readMatrix reads the mapping n (at path) into a matrixSpec.
func readMatrix(n *yaml.Node, path string) (*matrixSpec, error) {
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	m := &matrixSpec{lists: map[string][]any{}}
	for _, p := range pairs {
		k := p.Name
		var v any
		if err := p.Value.Decode(&v); err != nil {
			return nil, perr(p.Value, strictyaml.Join(path, k), "cannot read the value: %v", err)
		}
		switch k {
		case "include", "exclude":
			entries, err := matrixEntries(v, p.Value, strictyaml.Join(path, k))
			if err != nil {
				return nil, err
			}
			if k == "include" {
				m.include = entries
			} else {
				m.exclude = entries
			}
			continue
		}
		l, ok := v.([]any)
		if !ok {
			return nil, want(p.Value, strictyaml.Join(path, k), "a list of values")
		}
		m.dims = append(m.dims, k)
		m.lists[k] = l
	}
	return m, nil
}

// product returns the combinations of the dimensions, the first one
// outermost; none without dimensions. It reports false when they are more
// than MaxMatrixJobs.
func (m *matrixSpec) product() ([]MatrixJob, bool) {
	if len(m.dims) == 0 {
		return nil, true
	}
	jobs := []MatrixJob{{Values: map[string]any{}}}
	for _, d := range m.dims {
		next := make([]MatrixJob, 0, len(jobs)*len(m.lists[d]))
		for _, j := range jobs {
			for _, v := range m.lists[d] {
				c := j.clone()
				c.set(d, v)
				next = append(next, c)
			}
		}
		if len(next) > MaxMatrixJobs {
			return nil, false
		}
		jobs = next
	}
	return jobs, true
}

// applyIncludes adds each include: entry to every one of jobs whose
// dimension values it does not change, or, when there is none, appends it
// as a combination of its own.
func (m *matrixSpec) applyIncludes(jobs []MatrixJob) []MatrixJob {
	base := len(jobs)
	for _, inc := range m.include {
		added := false
		for i := range jobs[:base] {
			if jobs[i].matches(inc, m.dims) {
				for _, k := range sortedMapKeys(inc) {
					jobs[i].set(k, inc[k])
				}
				added = true
			}
		}
		if !added {
			j := MatrixJob{Values: map[string]any{}}
			for _, k := range sortedMapKeys(inc) {
				j.set(k, inc[k])
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

func matrixEntries(v any, n *yaml.Node, path string) ([]map[string]any, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, want(n, path, "a list of mappings")
	}
	out := make([]map[string]any, 0, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, perr(n, strictyaml.Index(path, i), "want a mapping of matrix keys to values")
		}
		out = append(out, m)
	}
	return out, nil
}

func (j MatrixJob) clone() MatrixJob {
	c := MatrixJob{Keys: slices.Clone(j.Keys), Values: make(map[string]any, len(j.Values)+1)}
	for k, v := range j.Values {
		c.Values[k] = v
	}
	return c
}

func (j *MatrixJob) set(k string, v any) {
	if _, ok := j.Values[k]; !ok {
		j.Keys = append(j.Keys, k)
	}
	j.Values[k] = v
}

// matches reports whether j agrees with every key of m (only with the keys
// in only, when only is non-nil: an include may overwrite values that
// another include added, never a dimension's).
func (j MatrixJob) matches(m map[string]any, only []string) bool {
	for k, v := range m {
		if only != nil && !slices.Contains(only, k) {
			continue
		}
		got, ok := j.Values[k]
		if !ok || !reflect.DeepEqual(got, v) {
			return false
		}
	}
	return true
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
