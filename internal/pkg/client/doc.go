// Package client owns forgeload's connection to the forge (Gitea or
// Forgejo): a connect-go client of runner.v1.RunnerService and
// ping.v1.PingService rooted at <address>/api/actions, which adds the
// x-runner-uuid and x-runner-token headers to every call except Register
// and Ping, applies a per-RPC timeout, sends User-Agent forgeload/<version>,
// and honours the runner's TLS (insecure) setting. [Client] has the method
// set of the generated clients, so consumers declare small interfaces with
// just the methods they call, plus Forgejo's FetchSingleTask (see
// [FetchSingleTaskProcedure]); its fetch calls carry Forgejo Runner's
// idempotency header ([HeaderRequestKey]). It never logs, and [Options]
// redacts the token when printed.
package client
