// Package jobfile reads and writes files that a job controls without
// letting the job take the daemon down or reach the host. Every read is
// bounded by a size limit, refuses anything but a regular file (a device
// such as /dev/zero, a FIFO that would block forever, a directory), and
// opens without blocking. Files a job names by path are read inside an
// [os.Root], so neither "..", an absolute path nor a symlink can reach
// outside the directory the job was given (its workspace). A [Dir] is a
// task directory, which a job container mounts read-write: the runner's
// own files in it (scripts, GITHUB_ENV and the other env files, the
// checkout's destination) are created, read and removed through it, so
// that a symlink the job planted never makes the daemon write, truncate,
// create, read or remove a file elsewhere, and a new file is never one
// that was there before. A directory the daemon prepared out of the job's
// reach (the checkout's repository) moves in by one rename that neither
// follows nor replaces what the job put at its path. Errors name the file as the job wrote it (or its
// path in the task directory) and the limit, and never quote the file's
// content.
package jobfile
