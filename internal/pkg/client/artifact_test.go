package client_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

func TestUploadArtifact(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token, Version: "1.0"})
	ctx := context.Background()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}})
	fres, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	rt := fres.Msg.Task.Context.AsMap()["gitea_runtime_token"].(string)
	data := bytes.Repeat([]byte("PK\x03\x04 zip bytes "), 5000)

	aid, err := c.UploadArtifact(ctx, rt, "forgeload-api", data)
	if err != nil {
		t.Fatalf("UploadArtifact: %v", err)
	}
	arts := f.Artifacts()
	if len(arts) != 1 || arts[0].ID != aid || arts[0].TaskID != id || arts[0].Name != "forgeload-api" || !arts[0].Confirmed || arts[0].Size != int64(len(data)) || !bytes.Equal(arts[0].Data, data) {
		t.Fatalf("forge has %+v, want one confirmed artifact of %d bytes", arts, len(data))
	}

	// A forge that refuses uploads fails the upload with its answer, and
	// the token stays out of the error.
	f.RefuseArtifacts(http.StatusForbidden)
	_, err = c.UploadArtifact(ctx, rt, "again", data)
	if err == nil || !strings.Contains(err.Error(), "CreateArtifact: 403") || strings.Contains(err.Error(), rt) {
		t.Errorf("refused upload = %v, want a CreateArtifact 403 without the token", err)
	}
}
