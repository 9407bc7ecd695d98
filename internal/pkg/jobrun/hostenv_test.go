package jobrun

import (
	"maps"
	"slices"
	"testing"
)

// TestHostEnvAllowList: only the allow-listed part of the daemon's
// environment reaches steps, and PATH always has a value.
func TestHostEnvAllowList(t *testing.T) {
	got := hostEnv([]string{
		"PATH=/opt/bin:/usr/bin", "HOME=/home/runner", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC",
		"https_proxy=http://proxy:3128", "NO_PROXY=localhost",
		"FORGELOAD_REGISTRATION_TOKEN=reg-token", "FORGELOAD_CLUSTER_REDIS_URL=redis://:pw@redis:6379",
		"AWS_SECRET_ACCESS_KEY=aws", "GITHUB_TOKEN=from-the-host", "LD_PRELOAD=/evil.so", "BROKEN",
	})
	want := map[string]string{
		"PATH": "/opt/bin:/usr/bin", "HOME": "/home/runner", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
		"https_proxy": "http://proxy:3128", "NO_PROXY": "localhost",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("hostEnv = %v\nwant %v", got, want)
	}
	if got := hostEnvSecrets([]string{"HTTPS_PROXY=http://u:pr0xy-pass@proxy:3128", "http_proxy=http://proxy:3128", "AWS_PROXY=http://u:other@x"}); !slices.Equal(got, []string{"pr0xy-pass"}) {
		t.Fatalf("hostEnvSecrets = %q, want the allowed proxy's password", got)
	}
	if got := hostEnv(nil)["PATH"]; got != defaultPath {
		t.Fatalf("PATH of an empty environment = %q, want %q", got, defaultPath)
	}
}
