package workflow

import (
	"runtime"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// forgePrefixes are the prefixes Gitea and Forgejo put on their own keys of
// a task's context, such as gitea_runtime_token.
var forgePrefixes = [...]string{"gitea_", "forgejo_"}

// GithubContext builds the github context from a task's context Struct. A
// nil Struct gives an empty map. Keys the forge prefixes with gitea_ or
// forgejo_ (gitea_runtime_token, gitea_default_actions_url, ...) are also
// available under the other prefix and without a prefix, unless the task
// already sets that key, so callers read runtime_token whichever forge sent
// the task. server_url loses the trailing slash Gitea sends, as on GitHub,
// so that ${{ github.server_url }}/${{ github.repository }} is a URL. The
// result is a new map the caller owns.
func GithubContext(s *structpb.Struct) map[string]any {
	orig := s.AsMap()
	m := s.AsMap()
	if u, ok := m["server_url"].(string); ok {
		m["server_url"] = strings.TrimRight(u, "/")
	}
	for _, p := range forgePrefixes { // gitea_ wins when both forges' keys are set
		for k, v := range orig {
			rest, ok := strings.CutPrefix(k, p)
			if !ok || rest == "" {
				continue
			}
			for _, alias := range []string{rest, "gitea_" + rest, "forgejo_" + rest} {
				if _, set := m[alias]; !set {
					m[alias] = v
				}
			}
		}
	}
	return m
}

// NeedsFromTask builds the needs context from a task's needs. Each result
// is the lower-case name of the runner.v1.Result without its RESULT_ prefix
// ("success", "failure", "cancelled", "skipped"), as the forge's own runner
// does. Nil entries are skipped.
func NeedsFromTask(needs map[string]*runnerv1.TaskNeed) map[string]NeedResult {
	out := make(map[string]NeedResult, len(needs))
	for id, n := range needs {
		if n == nil {
			continue
		}
		out[id] = NeedResult{
			Outputs: n.GetOutputs(),
			Result:  strings.ToLower(strings.TrimPrefix(n.GetResult().String(), "RESULT_")),
		}
	}
	return out
}

// NeedsStatus is the status a job-level if: sees, from the results of the
// jobs it needs (see [NeedsFromTask]), as on GitHub: [StatusSuccess] when
// every needed job succeeded (or there are none), else [StatusFailure]
// when any failed, else [StatusCancelled] when any was cancelled, else
// [StatusSkipped]. So success(), which is also the default when the job
// has no if:, is false once a needed job failed, was cancelled or skipped;
// failure() is true when one failed; always() is true regardless. A result
// forgeload does not know counts as a failure.
func NeedsStatus(needs map[string]NeedResult) JobStatus {
	failed, cancelled, skipped := false, false, false
	for _, n := range needs {
		switch n.Result {
		case "success":
		case "cancelled":
			cancelled = true
		case "skipped":
			skipped = true
		default:
			failed = true
		}
	}
	switch {
	case failed:
		return StatusFailure
	case cancelled:
		return StatusCancelled
	case skipped:
		return StatusSkipped
	}
	return StatusSuccess
}

// RunnerContext builds the runner context for this host: os and arch in
// GitHub's spelling (Linux, macOS, Windows; X64, ARM64, X86, ARM), plus the
// runner's name and temp directory. Other keys may be added by the caller.
func RunnerContext(name, temp string) map[string]any {
	return map[string]any{
		"os":   runnerOS(runtime.GOOS),
		"arch": runnerArch(runtime.GOARCH),
		"name": name,
		"temp": temp,
	}
}

func runnerOS(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return goos
}

func runnerArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "X64"
	case "arm64":
		return "ARM64"
	case "386":
		return "X86"
	case "arm":
		return "ARM"
	}
	return goarch
}
