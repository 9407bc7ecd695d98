package spec_test

import (
	"fmt"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// A workflow step's config file, then its with: keys on top, then the
// whole-config check.
func ExampleConfig_Override() {
	c, err := spec.Parse("perf/api.yaml", []byte(`
target: https://api.example.com/users
rate: 100
duration: 5m
thresholds:
  - http_req_duration:p99 < 1s
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = c.Override(map[string]string{
		"rate":       "500",
		"duration":   "1m",
		"thresholds": "http_req_duration:p99 < 300ms\nhttp_req_failed:rate < 1%",
	})
	if err == nil {
		err = c.Validate()
	}
	fmt.Println(err)
	fmt.Println(c.Rate, c.Duration, c.Thresholds)
	// Output:
	// <nil>
	// 500 1m0s [http_req_duration:p99 < 300ms http_req_failed:rate < 1%]
}

func ExampleParse_unknownKey() {
	_, err := spec.Parse("perf/api.yaml", []byte("target: https://api.example.com\nconcurency: 50\n"))
	msg, _, _ := strings.Cut(err.Error(), " known keys")
	fmt.Println(msg)
	// Output:
	// perf/api.yaml:2: unknown key "concurency"; did you mean "concurrency"?
}
