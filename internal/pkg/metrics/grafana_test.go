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

// TestGrafanaDashboardQueriesExportedMetrics reads deploy/grafana's
// dashboard and checks that every forgeload_ metric its queries name is
// exported by New (a histogram's _bucket, _sum and _count included) and
// documented in docs/metrics.md, so that no panel stays empty after a
// rename. It also checks that every panel has a query.
func TestGrafanaDashboardQueriesExportedMetrics(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "forgeload.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/forgeload.json: %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := New(reg, "v", "n").RegisterState(reg, &readyFake{}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`\bforgeload_[a-z0-9_]+`)
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				queried++
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suf); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which forgeload does not export", p.Title, m)
				}
				if !strings.Contains(string(doc), "`"+strings.TrimPrefix(base, "forgeload_")+"`") {
					t.Errorf("panel %q queries %s, which docs/metrics.md does not document", p.Title, base)
				}
			}
		}
	}
	if queried < 15 {
		t.Errorf("the dashboard queries %d metrics, want the documented ones", queried)
	}
}
