// Package redistest starts a private, throw-away redis-server for tests.
//
// Every [Server] listens on 127.0.0.1 on a port of its own, keeps no data
// on disk (no RDB snapshots, no AOF) and is stopped when the test ends.
// [Server.Pause] and [Server.Resume] freeze and thaw it (SIGSTOP,
// SIGCONT), as a stalled Redis host. Tests never share a Redis: each one
// that needs Redis calls [Start]. When the redis-server binary is missing
// the test is skipped with a message saying how to install it (CI
// installs it, so there it never skips).
//
// A [Proxy] is a TCP relay a test can cut and heal, to partition one client
// from its Redis. It runs in the test's process ([StartProxy]) or, for
// clients in other processes on a loaded machine, in a process of its own
// ([StartProxyProcess], which needs [ServeProxyIfAsked] in TestMain).
// A time proxy ([StartTimeProxy], [StartTimeProxyProcess]) also reads the
// Redis protocol and rewrites TIME replies, so a test can step Redis's
// clock by an offset or freeze it, with no privileges.
package redistest
