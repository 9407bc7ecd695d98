// Package run is the TaskRunner: it turns one forge task into a parsed job,
// runs the job's steps in order (`run:` on the host, a native
// `actions/checkout`, and `forgeload/load` on the embedded engine) and
// streams every log row, step state, output and the final result through a
// [report.Reporter]. It owns the job's workspace, its env files
// (GITHUB_ENV, GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), the
// workflow commands in step output (::add-mask::, ::group::, ::error:: …),
// job and step timeouts, cancel, and panic recovery: a panic fails its job
// only.
package run
