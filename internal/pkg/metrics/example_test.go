package metrics_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forgeload/forgeload/internal/pkg/metrics"
)

// Each daemon builds its collectors on its own registry and records with the
// exported label constants; a load step records through its own handle,
// whose workflow job, step and endpoint labels stay bounded.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1.0.0", "runner-1")
	m.PollFetchTotal.WithLabelValues(metrics.ResultEmpty).Inc()
	step := m.StartLoadStep("perf", "soak", metrics.ProtocolHTTP)
	step.Requests("home", metrics.HTTPResult(200), 100)
	step.Done()
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP forgeload_load_requests_total Load-test requests by workflow job, step, endpoint, protocol and result class.
# TYPE forgeload_load_requests_total counter
forgeload_load_requests_total{endpoint="home",protocol="http",result="ok",step="soak",workflow_job="perf"} 100
`), "forgeload_load_requests_total")
	fmt.Println(err)
	// Output: <nil>
}
