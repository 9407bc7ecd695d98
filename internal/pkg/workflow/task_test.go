package workflow

import (
	"reflect"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestGithubContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any // keys that must have these values
	}{
		{"gitea keys", map[string]any{
			"ref": "refs/heads/main", "run_id": "7", "token": "tok",
			"gitea_runtime_token": "jwt", "gitea_default_actions_url": "https://github.com",
			"event": map[string]any{"after": "abc", "commits": []any{map[string]any{"id": "1"}}},
		}, map[string]any{
			"ref": "refs/heads/main", "run_id": "7", "token": "tok",
			"runtime_token": "jwt", "gitea_runtime_token": "jwt", "forgejo_runtime_token": "jwt",
			"default_actions_url": "https://github.com",
			"event":               map[string]any{"after": "abc", "commits": []any{map[string]any{"id": "1"}}},
		}},
		// Gitea sends its ROOT_URL, with a trailing slash; GitHub's has none.
		{"server_url without its trailing slash", map[string]any{"server_url": "https://forge.example/"}, map[string]any{
			"server_url": "https://forge.example",
		}},
		{"forgejo keys", map[string]any{"forgejo_runtime_token": "fj"}, map[string]any{
			"runtime_token": "fj", "gitea_runtime_token": "fj", "forgejo_runtime_token": "fj",
		}},
		{"gitea wins over forgejo, explicit keys win over aliases", map[string]any{
			"gitea_x": "g", "forgejo_x": "f", "runtime_token": "explicit", "gitea_runtime_token": "jwt",
		}, map[string]any{"x": "g", "gitea_x": "g", "forgejo_x": "f", "runtime_token": "explicit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := structpb.NewStruct(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := GithubContext(s)
			for k, want := range tt.want {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("GithubContext()[%q] = %#v, want %#v", k, got[k], want)
				}
			}
		})
	}
	if got := GithubContext(nil); got == nil || len(got) != 0 {
		t.Errorf("GithubContext(nil) = %#v, want an empty map", got)
	}
}

// The github context built from a task is usable from expressions.
func TestGithubContextInExpressions(t *testing.T) {
	t.Parallel()
	s, err := structpb.NewStruct(map[string]any{"run_number": "3", "event": map[string]any{"pull_request": map[string]any{"number": 12}}, "gitea_runtime_token": "jwt"})
	if err != nil {
		t.Fatal(err)
	}
	c := &Context{Github: GithubContext(s)}
	got, err := c.Interpolate("#${{ github.run_number }} pr ${{ gitea.event.pull_request.number }} ${{ forgejo.runtime_token != '' }}")
	if err != nil || got != "#3 pr 12 true" {
		t.Errorf("Interpolate() = %q, %v", got, err)
	}
}

func TestNeedsFromTask(t *testing.T) {
	t.Parallel()
	got := NeedsFromTask(map[string]*runnerv1.TaskNeed{
		"build": {Outputs: map[string]string{"v": "1"}, Result: runnerv1.Result_RESULT_SUCCESS},
		"lint":  {Result: runnerv1.Result_RESULT_FAILURE},
		"skip":  {Result: runnerv1.Result_RESULT_SKIPPED},
		"gone":  {Result: runnerv1.Result_RESULT_CANCELLED},
		"nil":   nil,
	})
	want := map[string]NeedResult{
		"build": {Outputs: map[string]string{"v": "1"}, Result: "success"},
		"lint":  {Result: "failure"},
		"skip":  {Result: "skipped"},
		"gone":  {Result: "cancelled"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NeedsFromTask() = %#v, want %#v", got, want)
	}
	c := &Context{Needs: got}
	if v, err := c.Eval("needs.build.outputs.v == '1' && needs.lint.result"); err != nil || v != "failure" {
		t.Errorf("Eval(needs) = %#v, %v", v, err)
	}
}

func TestRunnerContext(t *testing.T) {
	t.Parallel()
	c := &Context{Runner: RunnerContext("r1", "/tmp/r1")}
	got, err := c.Interpolate("${{ runner.name }} ${{ runner.temp }} ${{ runner.os != '' && runner.arch != '' }}")
	if err != nil || got != "r1 /tmp/r1 true" {
		t.Errorf("Interpolate(runner) = %q, %v", got, err)
	}
	for goos, want := range map[string]string{"linux": "Linux", "darwin": "macOS", "windows": "Windows", "plan9": "plan9"} {
		if got := runnerOS(goos); got != want {
			t.Errorf("runnerOS(%q) = %q, want %q", goos, got, want)
		}
	}
	for goarch, want := range map[string]string{"amd64": "X64", "arm64": "ARM64", "386": "X86", "arm": "ARM", "riscv64": "riscv64"} {
		if got := runnerArch(goarch); got != want {
			t.Errorf("runnerArch(%q) = %q, want %q", goarch, got, want)
		}
	}
}
