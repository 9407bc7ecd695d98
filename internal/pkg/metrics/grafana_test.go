package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// grafanaDashboard is the part of deploy/grafana/forgeload.json the test
// reads: the panels' queries and the template variables' queries.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// Patterns of the PromQL the dashboard writes: metric names, grouping
// labels, selector matchers and label_values' label.
var (
	promName     = regexp.MustCompile(`\bforgeload_[a-z0-9_]+`)
	promBy       = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	promSelector = regexp.MustCompile(`\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promValues   = regexp.MustCompile(`label_values\(.*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
)

// exportedLabels gathers what New exports, with a load step's series
// recorded, as each metric's label names.
func exportedLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "v", "n")
	if err := m.RegisterState(reg, &readyFake{}); err != nil {
		t.Fatal(err)
	}
	exerciseLoad(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]map[string]bool{}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		exported[mf.GetName()] = labels
	}
	return exported
}

// queryLabels are the label names expr groups by or matches on, and
// label_values' label.
func queryLabels(expr string) []string {
	var out []string
	for _, m := range promBy.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	for _, sel := range promSelector.FindAllStringSubmatch(expr, -1) {
		for _, m := range promMatcher.FindAllStringSubmatch(sel[1], -1) {
			out = append(out, m[1])
		}
	}
	if m := promValues.FindStringSubmatch(expr); m != nil {
		out = append(out, m[1])
	}
	return out
}

// TestGrafanaDashboardQueriesExportedMetrics reads deploy/grafana's
// dashboard and checks that every forgeload_ metric its queries (the
// panels' and the template variables') name is exported by New (a
// histogram's _bucket, _sum and _count included) and documented in
// docs/metrics.md, and that every label they group by or match on is a
// label of the metrics they query (or a target label Prometheus adds), so
// that no panel stays empty after a rename. It also checks that every panel
// has a query, and that every load panel follows the workflow job and step
// variables.
func TestGrafanaDashboardQueriesExportedMetrics(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "forgeload.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash grafanaDashboard
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/forgeload.json: %v", err)
	}
	exported := exportedLabels(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	queried := 0
	check := func(where, expr string) {
		// Target labels every scraped series has, and the histogram's le.
		known := map[string]bool{"instance": true, "job": true, "le": true}
		for _, m := range promName.FindAllString(expr, -1) {
			queried++
			base := m
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suf); ok && exported[b] != nil {
					base = b
				}
			}
			if exported[base] == nil {
				t.Errorf("%s queries %s, which forgeload does not export", where, m)
			}
			if !strings.Contains(string(doc), "`"+strings.TrimPrefix(base, "forgeload_")+"`") {
				t.Errorf("%s queries %s, which docs/metrics.md does not document", where, base)
			}
			for l := range exported[base] {
				known[l] = true
			}
		}
		for _, l := range queryLabels(expr) {
			if !known[l] {
				t.Errorf("%s uses label %s, which none of the metrics it queries has: %s", where, l, expr)
			}
		}
	}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
		if v.Definition != "" {
			check("variable "+v.Name, v.Definition)
		}
	}
	for _, name := range []string{LabelJob, LabelStep} {
		if !vars[name] {
			t.Errorf("the dashboard has no %s variable", name)
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
			if strings.Contains(tg.Expr, "forgeload_load_") && (!strings.Contains(tg.Expr, `workflow_job=~"$workflow_job"`) || !strings.Contains(tg.Expr, `step=~"$step"`)) {
				t.Errorf("panel %q: a load query that does not follow the workflow_job and step variables: %s", p.Title, tg.Expr)
			}
		}
	}
	if queried < 15 {
		t.Errorf("the dashboard queries %d metrics, want the documented ones", queried)
	}
}

// TestQueryLabels: the test's PromQL reading finds the labels a query
// groups by and matches on.
func TestQueryLabels(t *testing.T) {
	t.Parallel()
	got := queryLabels(`sum by (workflow_job, step, le) (rate(x{instance=~"$i", result!="ok"}[5m])) + label_values(y{a="b"}, endpoint)`)
	want := []string{"workflow_job", "step", "le", "instance", "result", "a", "endpoint"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("queryLabels = %v, want %v", got, want)
	}
}
