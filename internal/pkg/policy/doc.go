// Package policy owns the runner admin's target policy: where load may go
// (the allow_targets and deny_targets of the daemon config's `load` section,
// DESIGN.md section 6; the rate, concurrency and duration caps are checked
// by the load plan). A [Policy] is checked twice: once on a job's targets
// before any byte is sent ([Policy.CheckURL]) and again
// at dial time on the resolved address ([Policy.Control]), so a DNS answer that
// changes to a denied address after the first check is still refused.
//
// The built-in denies are link-local and cloud-metadata addresses
// (169.254.0.0/16, fe80::/10, fd00:ec2::254) and the forge's own host and port.
// deny_targets adds CIDRs and host globs; a non-empty allow_targets turns the
// policy into an allow-list.
package policy
