package client_test

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// Example registers a runner against the fake forge, then polls it with
// the runner's credentials, as `forgeload register` and the daemon do.
func Example() {
	forge, err := forgetest.NewServer(forgetest.WithRegistrationToken("reg-token"))
	if err != nil {
		panic(err)
	}
	defer forge.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	anon, err := client.New(client.Options{Address: forge.URL(), Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	if err := anon.PingUntil(ctx, "runner-1", time.Second, nil); err != nil {
		panic(err)
	}
	reg, err := anon.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name: "runner-1", Token: "reg-token", Labels: []string{"forgeload"},
	}))
	if err != nil {
		panic(err)
	}

	c, err := client.New(client.Options{
		Address: forge.URL(), UUID: reg.Msg.Runner.Uuid, Token: reg.Msg.Runner.Token, Version: "1.0.0",
	})
	if err != nil {
		panic(err)
	}
	id := forge.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}})
	res, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{TasksVersion: 0}))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Msg.Task.Id == id)
	// Output: true
}
