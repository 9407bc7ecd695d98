package summary_test

import (
	"os"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// Summaries are written from one result model; thresholds come in as Checks.
func ExampleSummary_WriteText() {
	s := summary.Of(&load.Result{Elapsed: time.Second}, []load.Check{{Name: "http_req_failed:rate < 1%", Actual: "0.00%", Passed: true}})
	_ = s.WriteText(os.Stdout)
}
