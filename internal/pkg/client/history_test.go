package client_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestArtifactHistory: the history is the artifact of the newest
// successful runs of the same workflow on the branch, newest first: not a
// run of another workflow with an artifact of the same name, not a failed
// run, not another branch, not the excluded run, and a run without the
// artifact is passed over; on both forges' dialects.
func TestArtifactHistory(t *testing.T) {
	t.Parallel()
	for _, fl := range []forgetest.Flavor{forgetest.Gitea, forgetest.Forgejo} {
		t.Run(fl.String(), func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(t, forgetest.WithFlavor(fl))
			const name = "forgeload-perf-api"
			job := func(data string) []forgetest.RunJob {
				return []forgetest.RunJob{{ID: "perf", Artifacts: map[string][]byte{name: []byte(data)}}}
			}
			for id := int64(1); id <= 6; id++ {
				f.SeedRun(forgetest.Run{ID: id, Workflow: "perf.yml", Jobs: job("run" + strconv.FormatInt(id, 10))})
			}
			f.SeedRun(forgetest.Run{ID: 7, Workflow: "perf.yml", Jobs: []forgetest.RunJob{{ID: "perf"}}}) // no artifact
			f.SeedRun(forgetest.Run{ID: 8, Workflow: "other.yml", Jobs: job("other workflow")})           // same step id elsewhere
			f.SeedRun(forgetest.Run{ID: 9, Workflow: "perf.yml", Jobs: []forgetest.RunJob{{ID: "perf", Result: runnerv1.Result_RESULT_FAILURE, Artifacts: map[string][]byte{name: []byte("failed")}}}})
			f.SeedRun(forgetest.Run{ID: 10, Workflow: "perf.yml", Ref: "refs/heads/feature", Jobs: job("feature")})
			f.SeedRun(forgetest.Run{ID: 11, Workflow: "perf.yml", Jobs: job("current")})
			tok := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Context: map[string]any{"run_id": "12"}})).Token
			c := mustNew(t, client.Options{Address: f.URL(), UUID: "u", Token: "t", Version: "1.0"})

			got, err := c.ArtifactHistory(context.Background(), tok, client.HistoryQuery{
				Repo: "forgeload/demo", Branch: "main", Workflow: "perf.yml", Name: name, Exclude: 11, N: 5,
			})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, a := range got {
				ids = append(ids, a.RunID)
				if want := "run" + strconv.FormatInt(a.RunID, 10); !bytes.Equal(a.Zip, []byte(want)) {
					t.Errorf("run %d's artifact = %q, want %q", a.RunID, a.Zip, want)
				}
			}
			if want := []int64{6, 5, 4, 3, 2}; !equalIDs(ids, want) {
				t.Errorf("history runs = %v, want %v", ids, want)
			}
			_, err = c.ArtifactHistory(context.Background(), tok, client.HistoryQuery{
				Repo: "forgeload/demo", Branch: "main", Workflow: "nightly.yml", Name: name, N: 5,
			})
			if !errors.Is(err, client.ErrNoArtifact) {
				t.Errorf("history of a workflow without runs = %v, want ErrNoArtifact", err)
			}
		})
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestArtifactPerRunAndName: the forge keeps one artifact per run and
// name, as Gitea does: a second job of the run that uploads the same name
// replaces the first one's, and a different name keeps both.
func TestArtifactPerRunAndName(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token, Version: "1.0"})
	ctx := context.Background()
	upload := func(name, data string) {
		t.Helper()
		f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Context: map[string]any{"run_id": "3"}})
		res, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
		if err != nil || res.Msg.Task == nil {
			t.Fatalf("FetchTask: %v", err)
		}
		rt := res.Msg.Task.Context.AsMap()["gitea_runtime_token"].(string)
		if _, err := c.UploadArtifact(ctx, rt, name, []byte(data)); err != nil {
			t.Fatalf("UploadArtifact %s: %v", name, err)
		}
	}
	upload("forgeload-api", "first job")
	upload("forgeload-api", "second job")
	if arts := f.Artifacts(); len(arts) != 1 || string(arts[0].Data) != "second job" {
		t.Fatalf("two jobs of one run uploading one name left %+v, want one artifact holding the second's", arts)
	}
	upload("forgeload-b-api", "third job")
	if arts := f.Artifacts(); len(arts) != 2 {
		t.Fatalf("artifacts = %+v, want two", arts)
	}
}

// TestUpsertComment: the first call posts a comment on the pull request,
// the next ones edit it (found by its marker), and a comment of someone
// else is left alone.
func TestUpsertComment(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	tok := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}})).Token
	c := mustNew(t, client.Options{Address: f.URL(), UUID: "u", Token: "t", Version: "1.0"})
	ctx := context.Background()
	const marker = "<!-- forgeload:forgeload-perf-api -->"
	other, err := c.UpsertComment(ctx, tok, "forgeload/demo", 7, "<!-- other -->", "<!-- other -->\nLGTM")
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.UpsertComment(ctx, tok, "forgeload/demo", 7, marker, marker+"\nrun 1")
	if err != nil || first.Updated || first.ID == other.ID {
		t.Fatalf("first upsert = %+v, %v; want a new comment", first, err)
	}
	second, err := c.UpsertComment(ctx, tok, "forgeload/demo", 7, marker, marker+"\nrun 2")
	if err != nil || !second.Updated || second.ID != first.ID {
		t.Fatalf("second upsert = %+v, %v; want comment %d updated", second, err, first.ID)
	}
	cs := f.Comments("forgeload/demo", 7)
	if len(cs) != 2 || cs[1].Body != marker+"\nrun 2" || cs[1].Edits != 1 || cs[0].Body != "<!-- other -->\nLGTM" {
		t.Errorf("comments = %+v, want the other one and ours, edited once", cs)
	}
	if _, err := c.UpsertComment(ctx, tok, "forgeload/demo", 7, marker, "no marker"); err == nil {
		t.Errorf("a body without its marker was posted")
	}
	if _, err := c.UpsertComment(ctx, tok, "team/other", 7, marker, marker); err == nil || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), tok) {
		t.Errorf("comment on another repository = %v, want a 403 without the token", err)
	}
}

// TestUpsertCommentReadOnly: the read-only token of a fork's pull request
// may not comment (ErrRefused, without the token in the error), and a
// user's token, as the runner's admin configures one, may: the comment is
// by that user.
func TestUpsertCommentReadOnly(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	tok := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, ReadOnlyToken: true})).Token
	c := mustNew(t, client.Options{Address: f.URL(), UUID: "u", Token: "t", Version: "1.0"})
	ctx := context.Background()
	const marker = "<!-- forgeload:forgeload-perf-api -->"
	_, err := c.UpsertComment(ctx, tok, "forgeload/demo", 7, marker, marker+"\nrun 1")
	if !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), tok) {
		t.Fatalf("comment with a read-only token = %v, want ErrRefused (403) without the token", err)
	}
	bot := f.UserToken("perf-bot")
	if got, err := c.UpsertComment(ctx, bot, "forgeload/demo", 7, marker, marker+"\nrun 1"); err != nil || got.Updated {
		t.Fatalf("comment with a user's token = %+v, %v; want a new comment", got, err)
	}
	if cs := f.Comments("forgeload/demo", 7); len(cs) != 1 || cs[0].Author != "perf-bot" {
		t.Errorf("comments = %+v, want one by perf-bot", cs)
	}
}
