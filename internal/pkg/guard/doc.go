// Package guard turns a panic in a goroutine into an error, so that a bug
// reached by one job's input fails that job and the daemon keeps serving.
// Go ends the whole process when any goroutine panics unrecovered, and a
// recover only works in the goroutine that panicked: every goroutine a job
// starts (the output copier, load workers, reporter loops, segment
// runners) runs its body through [Run] or defers [Recover], and hands the
// resulting [*PanicError], with its stack, to whoever owns the job.
//
// [Fault] is a fault-injection point for tests of exactly that: it does
// nothing unless the binary is built with the "faults" build tag.
package guard
