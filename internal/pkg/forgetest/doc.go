// Package forgetest owns the fake forge that the rest of forgeload tests
// against: a real connect-go HTTP server on 127.0.0.1 that implements
// runner.v1.RunnerService and ping.v1.PingService with the semantics of
// Gitea 1.27, plus the job-summary upload endpoint. Tests drive it through
// [Forge]: queue jobs with [Forge.QueueJob], watch them with [Forge.Task]
// and [Forge.WaitTask], cancel them with [Forge.Cancel], inject RPC faults
// with [Forge.SetFault] and simulate outages with [Forge.Down] and
// [Forge.Up]. It holds no package-level state; every Forge is independent
// and safe for concurrent use.
//
// # Semantics
//
//   - Register needs a name and a known registration token (reusable); a
//     missing one is a plain (Unknown) error, an unknown token
//     InvalidArgument. Each call creates a runner with a new uuid and token.
//   - Every other RunnerService call needs x-runner-uuid/x-runner-token;
//     otherwise, as in Gitea (whose interceptor returns a gRPC status error
//     that connect does not know), HTTP 500 with code unknown and the
//     message [UnregisteredMessage].
//   - Declare replaces labels, version and capabilities and returns
//     X-Gitea-Actions-Capabilities ([DefaultCapabilities]).
//   - FetchTask never returns tasks_version 0; an equal version skips the
//     scan; otherwise the oldest waiting job whose runs-on labels are all in
//     the runner's labels is picked. An ephemeral runner gets nothing while
//     its task runs, and Internal "runner has been removed" once it is done.
//   - UpdateTask copies steps by index; any result finishes the task
//     (cancelling becomes cancelled); a done task never changes; outputs are
//     insert-if-absent (key ≤ 255 B, value ≤ 1 MiB) and sent_outputs lists
//     every stored key; the response result maps cancelling to CANCELLED.
//     An ephemeral runner is deleted when its task finishes.
//   - UpdateLog acks the stored length, drops rows before it, writes nothing
//     after a gap, archives on no_more and then refuses new rows with
//     AlreadyExists "log file has been archived".
//   - Job summaries are PUT with the task's runtime token; see
//     [Forge.Summaries].
//   - Artifacts are kept one per run and name, as Gitea does: a second
//     job of the run that uploads the same name starts it over. Both
//     artifact protocols are served whole, upload and download: v3
//     (upload-artifact@v3, download-artifact@v3: list, download_url,
//     download, gzip files served with Content-Encoding: gzip) and v4
//     (CreateArtifact, UploadArtifact, FinalizeArtifact, ListArtifacts,
//     GetSignedArtifactURL, DownloadArtifact). The REST
//     API lists a repository's runs (newest first, paged by page and
//     limit: 30 by default, at most 50; each with its workflow as Gitea's
//     path "<file>@<ref>" or Forgejo's workflow_id), a run's artifacts and
//     an artifact's zip. [Forge.SeedRun] stores finished runs with their
//     artifacts, as a history to read.
//   - Repositories ([Forge.AddRepo], [Forge.AddActionRepo]) are served
//     over smart HTTP to a running task's token, and so is Gitea's Git LFS
//     server under /{owner}/{repo}.git/info/lfs: the batch API (the LFS
//     media type in Accept, else 415; download and upload over the basic
//     transfer; a per-object 404 for an object the repository lacks and
//     422 for a malformed one), the download, upload and verify URLs, and
//     an empty lock list. A missing or unknown token, or a read-only one
//     asking to write, is 401 with WWW-Authenticate, as Gitea answers an
//     actions token (its 403s are for personal tokens without the scope,
//     which the fake has none of). [Forge.AddLFSObject] stores an object
//     and returns the pointer file to commit; [Forge.LFSRequests] lists
//     what the LFS server answered.
//
// [Forge.Cancelled] counts calls the client abandoned while the server was
// handling them, which Gitea logs as "context canceled".
//
// [WithCallExpansion] makes a Forge expand reusable workflows as Gitea 1.27
// does: a calling job (uses:) is queued with [Forge.QueueCall], never
// reaches a runner, and each called job is a task of its own, handed out
// after the called jobs it needs, with its inputs in its context's event;
// [Call.Need] is the calling job as its dependents see it. Without it the
// Forge sends a calling job to a runner as Gitea up to 1.26 does.
//
// [WithForgejo] makes a Forge imitate Forgejo instead (see [Forgejo] for
// every difference, [Forge.RegisterSecret] for Forgejo's offline
// registration, and [Forge.AdminToken] for the runner jobs list whose
// handles FetchSingleTask takes), so that tests can run in both flavors.
//
// Where the fake is deliberately simpler than Gitea: one global scope (no
// owner/repo runners), no pick semaphore, no zombie cron ([Forge.Reap] does
// it on demand), and task ids are fixed when the job is queued.
package forgetest
