package cmd

import (
	"strings"
	"testing"
)

// TestE2EConfigValidateChecksEnvLikeTheDaemon runs `config validate` with
// the environment overrides a daemon would see: a misspelt override that
// makes the daemon refuse to start fails validate too (it said valid, exit
// 0), with the name it probably meant; an unrelated FORGELOAD_ variable is
// a warning, as in the daemon.
func TestE2EConfigValidateChecksEnvLikeTheDaemon(t *testing.T) {
	parallel(t)
	n := newNode(t, "")
	typo := []string{"FORGELOAD_RUNNER_CAPACTIY=3"}
	code, out := n.forgeloadEnv(typo, "config", "validate", n.cfg)
	if code != ExitBadInput || !strings.Contains(out, "FORGELOAD_RUNNER_CAPACTIY (did you mean FORGELOAD_RUNNER_CAPACITY?)") {
		t.Errorf("config validate with FORGELOAD_RUNNER_CAPACTIY: exit %d, want 2 naming FORGELOAD_RUNNER_CAPACITY; output:\n%s", code, out)
	}
	code, dout := n.forgeloadEnv(typo, "daemon", "--once")
	if code != ExitBadInput || !strings.Contains(dout, "FORGELOAD_RUNNER_CAPACTIY") {
		t.Errorf("daemon with FORGELOAD_RUNNER_CAPACTIY: exit %d, want 2 as validate; output:\n%s", code, dout)
	}
	code, out = n.forgeloadEnv([]string{"FORGELOAD_BIN=/usr/bin/forgeload", "FORGELOAD_RUNNER_CAPACITY=nope"}, "config", "validate", n.cfg)
	if code != ExitBadInput || !strings.Contains(out, "FORGELOAD_RUNNER_CAPACITY") {
		t.Errorf("config validate with FORGELOAD_RUNNER_CAPACITY=nope: exit %d, want 2 naming it; output:\n%s", code, out)
	}
	code, out = n.forgeloadEnv([]string{"FORGELOAD_BIN=/usr/bin/forgeload"}, "config", "validate", n.cfg)
	if code != ExitOK || !strings.Contains(out, "valid daemon config") || !strings.Contains(out, "warning: ignoring environment variable FORGELOAD_BIN") {
		t.Errorf("config validate with FORGELOAD_BIN: exit %d, want 0 and a warning naming it; output:\n%s", code, out)
	}
}
