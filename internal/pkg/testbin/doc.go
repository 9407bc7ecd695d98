// Package testbin builds the module's commands for tests that run them as
// processes of their own: the forgeload binary of the end-to-end tests,
// the static one of the cluster's container image, and the small servers
// that stand in for a system under test. Each build goes to a directory
// that outlives the run, one per checkout, package, environment and flag
// set, under the user's cache directory (where no other user can put a
// binary first); a later run whose sources did not change finds the binary
// up to date and `go build` skips the link, some 0.5 to 2 s of CPU each.
// Test binaries only: internal/archtest keeps it out of the product.
package testbin
