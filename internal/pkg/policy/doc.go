// Package policy owns the runner admin's target policy: where load may go
// (the allow_targets and deny_targets of the daemon config's `load` section,
// DESIGN.md section 6; the section's rate, concurrency, duration, grace and
// endpoint caps are checked where a load config is built, in
// internal/pkg/load/build's Limits). A [Policy] is checked on every hop: on a job's targets
// before any byte is sent ([Policy.CheckURL]), on every redirect's new URL
// before a client of the load step follows it ([Policy.CheckRedirect]:
// host-name rules too, which the dial sees no more), and at dial time on
// the resolved address ([Policy.Control]), so a DNS answer that changes to
// a denied address after the first check is still refused.
//
// The built-in denies are the unspecified addresses (0.0.0.0/8, ::), which
// Linux connects to the local host, link-local and cloud-metadata addresses
// (169.254.0.0/16, fe80::/10 and the well-known ones outside them), and the
// forge's own host and port; a forge on this host also owns its port on
// every local address. Hosts are compared in one form whatever way they
// are written: IP addresses unmapped (IPv4-mapped IPv6 as IPv4) and without
// an IPv6 zone, names in lower case without a trailing dot, the scheme's
// default port when none is written. A host that ends in a number (0x7f000002, 127.2) is
// refused before any lookup. deny_targets adds CIDRs and host globs; a
// non-empty allow_targets turns the policy into an allow-list.
package policy
