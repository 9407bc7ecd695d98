// Package nettest owns loopback servers that tests of several packages
// point load at when what matters is how the server misbehaves, such as a
// target that accepts connections and never answers. Every server listens
// on 127.0.0.1 only and is closed, with its connections, when the test
// ends.
package nettest
