// Package run is the TaskRunner: the adapter from one forge task to the
// step executor, package jobrun. A [Runner], made by [New] from [Options]
// (the executor's [jobrun.Config], given to every job as it is, and the
// reporting's own fields), makes each task's [report.Reporter] on the
// forge client, runs the task as a [jobrun.Job], closes the report (what
// the forge does not take in time goes to the outbox) and tells the
// daemon's observers. It also owns where task directories live: one
// directory per registration in the work dir, and removing those a killed
// daemon left ([Runner.RemoveStaleTaskDirs]).
package run
