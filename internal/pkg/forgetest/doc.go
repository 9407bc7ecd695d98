// Package forgetest owns the fake forge that the rest of forgeload tests
// against: a real connect-go HTTP server on 127.0.0.1 that implements
// runner.v1.RunnerService and ping.v1.PingService with the semantics of
// Gitea 1.27 (registration, Declare, FetchTask with tasks_version, the
// UpdateTask state machine with cancelling, UpdateLog acks and archiving,
// ephemeral runners) plus the job-summary upload endpoint. Tests drive it
// through [Forge]: queue jobs with [Forge.QueueJob], watch them with
// [Forge.Task] and [Forge.WaitTask], cancel them with [Forge.Cancel], inject
// RPC faults with [Forge.SetFault] and simulate outages with [Forge.Down]
// and [Forge.Up]. It holds no package-level state; every Forge is
// independent and safe for concurrent use.
package forgetest
