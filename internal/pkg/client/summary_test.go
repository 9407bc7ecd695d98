package client_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

func TestUploadSummary(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token, Version: "1.0"})
	ctx := context.Background()
	dres, err := c.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Labels: []string{"forgeload"}}))
	if err != nil {
		t.Fatal(err)
	}
	if !client.HasCapability(dres.Header().Get(client.HeaderCapabilities), client.CapabilityJobSummary) {
		t.Fatalf("forge does not advertise %s", client.CapabilityJobSummary)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}})
	fres, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	rt := fres.Msg.Task.Context.AsMap()["gitea_runtime_token"].(string)
	run, job, err := client.RuntimeScope(rt)
	if v := f.Task(id); err != nil || run != 1 || job != v.JobID {
		t.Fatalf("RuntimeScope = %d, %d, %v; want 1, %d", run, job, err, v.JobID)
	}
	if err := c.UploadSummary(ctx, rt, 1, []byte("| p99 | 12ms |\n")); err != nil {
		t.Fatalf("UploadSummary: %v", err)
	}
	if got := f.Summaries()[id]; got != "| p99 | 12ms |\n" {
		t.Errorf("stored summary = %q", got)
	}
	if err := c.UploadSummary(ctx, "not-a-jwt", 0, []byte("x")); err == nil || !strings.Contains(err.Error(), "not a JWT") {
		t.Errorf("UploadSummary with a bad token = %v, want a parse error", err)
	}
	// A well-formed token the forge did not issue is refused, and the
	// error does not quote the token.
	forged := "e30." + base64.RawURLEncoding.EncodeToString([]byte(`{"scp":"Actions.Results:1:101"}`)) + ".c2ln"
	err = c.UploadSummary(ctx, forged, 0, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), forged) {
		t.Errorf("UploadSummary with a forged token = %v, want 401 without the token", err)
	}
}

func TestHasCapability(t *testing.T) {
	t.Parallel()
	tests := []struct {
		csv, capability string
		want            bool
	}{
		{"job-summary", "job-summary", true},
		{"a, job-summary ,b", "job-summary", true},
		{"job-summary-v2", "job-summary", false},
		{"", "job-summary", false},
	}
	for _, tt := range tests {
		if got := client.HasCapability(tt.csv, tt.capability); got != tt.want {
			t.Errorf("HasCapability(%q, %q) = %v, want %v", tt.csv, tt.capability, got, tt.want)
		}
	}
}

// FuzzRuntimeScope checks that any token string is parsed without panic
// and that accepted scopes are positive ids only when claimed.
func FuzzRuntimeScope(f *testing.F) {
	f.Add("a.b.c")
	f.Add("e30." + base64.RawURLEncoding.EncodeToString([]byte(`{"scp":"Actions.Results:3:4"}`)) + ".x")
	f.Add("e30." + base64.RawURLEncoding.EncodeToString([]byte(`{"RunID":1,"JobID":2}`)) + ".x")
	f.Fuzz(func(t *testing.T, tok string) {
		run, job, err := client.RuntimeScope(tok)
		if err != nil && (run != 0 || job != 0) {
			t.Fatalf("RuntimeScope(%q) = %d, %d with error %v", tok, run, job, err)
		}
	})
}
