package config

import (
	"strings"
	"testing"
)

func TestCheckEnv(t *testing.T) {
	t.Parallel()
	if err := CheckEnv([]string{"PATH=/bin", "FORGELOAD_RUNNER_CAPACITY=2", "FORGELOAD_INSTANCE=https://x", "FORGELOAD_METRICS_ADDR=:9101"}); err != nil {
		t.Fatalf("CheckEnv(known names) = %v", err)
	}
	err := CheckEnv([]string{"FORGELOAD_RUNNER_CAPACTIY=3"})
	if err == nil || !strings.Contains(err.Error(), "FORGELOAD_RUNNER_CAPACTIY (did you mean FORGELOAD_RUNNER_CAPACITY?)") {
		t.Fatalf("CheckEnv(typo) = %v, want the name and a suggestion", err)
	}
	// Names a deploy script commonly sets are no error, only a warning.
	other := []string{"FORGELOAD_BIN=/usr/bin/forgeload", "FORGELOAD_HOME=/var/lib/forgeload", "FORGELOAD_RUNNER_CAPACITY=2"}
	if err := CheckEnv(other); err != nil {
		t.Errorf("CheckEnv(unrelated names) = %v, want nil", err)
	}
	if got := UnknownEnv(append(other, "FORGELOAD_RUNNER_CAPACTIY=3")); strings.Join(got, ",") != "FORGELOAD_BIN,FORGELOAD_HOME" {
		t.Errorf("UnknownEnv = %v, want [FORGELOAD_BIN FORGELOAD_HOME] (the near miss is CheckEnv's error)", got)
	}
	for _, name := range EnvNames() {
		if !strings.HasPrefix(name, "FORGELOAD_") || strings.ContainsAny(name, ".-") {
			t.Errorf("EnvNames has %q", name)
		}
	}
}
