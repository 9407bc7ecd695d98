// Package jobrun is the step executor, a library: it runs one forge task's
// job (a [Job] made by [NewJob] from a [Config] the runner fixes once) and
// streams every log row, step state, output and the final result through a
// [Reporter] (the forge's task report, package report). Each step is
// resolved once, when it starts, into a value of its kind (resolveStep): a
// shellStep (`run:`, on the host or in the job container), a checkoutStep
// (a native `actions/checkout` with the host's git, and git-lfs for
// lfs: true, which refuses inputs it would ignore), a
// loadStep (`forgeload/load`, run by the load executor, package loadrun,
// which also runs this daemon's cluster segments), a compositeStep (a
// composite action, local `./path` or remote `owner/repo@ref`, whose steps
// run as parts of it), a nodeStep (a JavaScript action, with the admin's
// Node.js, or the image's in the job container; its pre: runs when the
// job starts, runPres, also nested in composite actions from repositories,
// compositePres, its post: at the job's end, each within its step's
// timeout-minutes and continue-on-error, limits), a dockerStep (`docker://`,
// or a Docker action, whose Dockerfile it builds first, and whose
// pre-entrypoint and post-entrypoint run as a JavaScript action's pre:
// and post: do, through the same stagedAction machinery: dockerbuild.go
// holds to the job's pull policy what the build may take, and
// dockerfile.go reads the Dockerfile; on the Docker Engine, its output
// streamed), or an unsupportedStep that fails saying what runs
// instead. Before any step runs, checkSteps reports every step the job
// has that this runner cannot run, and fetches its remote actions, and
// those their composite actions use (with git, through the [ActionCache],
// by commit) into the task directory. A
// job that calls a reusable workflow (jobs.<id>.uses, as Gitea up to 1.26
// sends it) has no steps: runCall fetches the called file the same way and
// runs its jobs as jobs of their own, in needs order, through a reporter
// that puts them in the caller's rows. A kind is one file and one line in
// usesKinds; each runs with a stepJob, the job as that step sees it, whose
// Logf and Writer are the step's log (the [Reporter]'s input for that
// step): no step indexes the reporter. What a job publishes beside its log
// (the load step's report artifact and baseline, each step's job summary)
// goes through the [Publisher] in its Config; forgeload exec has none. The
// package owns the job's task directory (workspace, temp, files), every
// file operation in which goes through a [jobfile.Dir] so that what a job
// plants there cannot lead the daemon out of it; its env files (GITHUB_ENV,
// GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), the workflow commands
// in step output (::add-mask::, ::group::, ::error:: …), the job's
// services: and container: (through [Containers]), job and step timeouts,
// cancel, and panic recovery: a panic fails its job only. It knows nothing
// of how the task was fetched: package internal/app/run is the adapter from
// the forge's task to it.
package jobrun
