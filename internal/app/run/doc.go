// Package run is the TaskRunner: it turns one forge task into a parsed job,
// runs the job's steps in order and streams every log row, step state,
// output and the final result through a [report.Reporter]. Each step is
// resolved once, when it starts, into a value of its kind (resolveStep): a
// shellStep (`run:`, on the host or in the job container), a checkoutStep
// (a native `actions/checkout`, which refuses inputs it would ignore), a
// loadStep (`forgeload/load`, run by the load executor, package loadrun,
// which also runs this daemon's cluster segments), or an unsupportedStep
// that fails saying what runs instead. A job gets what it needs from its
// [Runner] as a read-only jobDeps fixed by [New]; it never reads the
// runner's [Options]. What a job publishes beside its log (the load step's
// report artifact and baseline, each step's job summary) goes through the
// [Publisher] the daemon gives it; forgeload exec has none. The package
// owns the job's task directory (workspace, temp, files), every file
// operation in which goes through a [jobfile.Dir] so that what a job
// plants there cannot lead the daemon out of it; its env files
// (GITHUB_ENV, GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), the
// workflow commands in step output (::add-mask::, ::group::, ::error:: …),
// job and step timeouts, cancel, and panic recovery: a panic fails its job
// only.
package run
