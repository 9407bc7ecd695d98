package threshold_test

import (
	"fmt"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// result is a stand-in for the engine's result.
type result struct{}

func (result) Requests() int64                         { return 1000 }
func (result) Failures() int64                         { return 4 }
func (result) Elapsed() time.Duration                  { return 10 * time.Second }
func (result) LatencyPercentile(float64) time.Duration { return 212400 * time.Microsecond }
func (result) LatencyMin() time.Duration               { return time.Millisecond }
func (result) LatencyMax() time.Duration               { return time.Second }
func (result) LatencyMean() time.Duration              { return 30 * time.Millisecond }
func (r result) Overall() threshold.Metrics            { return r }
func (result) Endpoint(string) (threshold.Metrics, bool) {
	return nil, false
}
func (result) Resources() map[string]threshold.ResourceMetrics { return nil }

func ExampleEvaluateBaseline() {
	ts, err := threshold.ParseAll([]string{`
http_req_duration:p99 < 300ms
http_req_failed:rate < 0.1%
http_requests:rate >= 100
`})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range threshold.EvaluateBaseline(ts, result{}, nil) {
		fmt.Println(o.Threshold.Source, threshold.FormatValue(o.Threshold, o.Actual), o.Passed)
	}
	// Output:
	// http_req_duration:p99 < 300ms 212.4ms true
	// http_req_failed:rate < 0.1% 0.40% false
	// http_requests:rate >= 100 100.0/s true
}
