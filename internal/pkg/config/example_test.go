package config_test

import (
	"fmt"

	"github.com/forgeload/forgeload/internal/pkg/config"
)

// Environment overrides win over the file; errors name the file, line and key.
func ExampleParse() {
	yaml := []byte("runner:\n  capacity: 2\n  labels: [forgeload, 'perf:docker://node:20']\n")
	getenv := func(k string) string {
		return map[string]string{"FORGELOAD_RUNNER_CAPACITY": "4"}[k]
	}
	cfg, err := config.Parse("forgeload.yaml", yaml, getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Runner.Capacity, config.LabelNames(cfg.Runner.Labels))

	_, err = config.Parse("forgeload.yaml", []byte("runner:\n  capacity: many\n"), nil)
	fmt.Println(err)
	// Output:
	// 4 [forgeload perf]
	// forgeload.yaml:2: runner.capacity: "many" is not a whole number (want e.g. 2)
}
