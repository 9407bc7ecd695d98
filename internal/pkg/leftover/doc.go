// Package leftover owns what a runner does about the processes its host
// steps started when the daemon that started them is gone. A daemon that
// ends normally stops its jobs' process groups itself; one that is killed
// (kill -9, the OOM killer, a crash) cannot, and outside a systemd unit or
// a container nothing else does: a step's script and whatever it started
// run on, sending load or holding files, with no job left to cancel them.
// Every process a host step starts carries [Marker] of its runner in its
// environment, which its children inherit; [Stop], run by the next daemon
// of the same registration before it takes a job, kills every process that
// still carries it. The registration's lock makes sure no live daemon of
// that registration owns them. It works on Linux (through /proc); elsewhere
// Stop finds nothing.
package leftover
