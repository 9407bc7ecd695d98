package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forgeload/forgeload/internal/pkg/metrics"
)

// Each daemon builds its collectors on its own registry and records with the
// exported label constants.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1.0.0", "runner-1")
	m.PollFetchTotal.WithLabelValues(metrics.ResultEmpty).Inc()
	m.LoadRequestsTotal.WithLabelValues(metrics.ProtocolHTTP, metrics.HTTPResult(200)).Add(100)
	fmt.Println(testutil.ToFloat64(m.LoadRequestsTotal.WithLabelValues(metrics.ProtocolHTTP, metrics.LoadOK)))
	// Output: 100
}
