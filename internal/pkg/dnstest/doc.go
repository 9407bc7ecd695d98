// Package dnstest owns a tiny DNS server for tests: it answers A queries
// over UDP on 127.0.0.1 from a function, so a test can make a name resolve
// to one address and then to another (DNS rebinding) and check that the
// load policy is enforced on the address actually dialled.
package dnstest
