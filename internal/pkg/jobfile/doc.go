// Package jobfile reads files that a job controls without letting the job
// take the daemon down: every read is bounded by a size limit, refuses
// anything but a regular file (a device such as /dev/zero, a FIFO that
// would block forever, a directory), and opens without blocking. Files a
// job names by path are read inside an [os.Root], so neither "..", an
// absolute path nor a symlink can reach outside the directory the job was
// given (its workspace). Errors name the file as the job wrote it and the
// limit, and never quote the file's content.
package jobfile
