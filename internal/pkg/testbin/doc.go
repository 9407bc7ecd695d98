// Package testbin builds the module's commands for tests that run them as
// processes of their own: the forgeload binary of the end-to-end tests,
// the static one of the cluster's container image, and the small servers
// that stand in for a system under test. Each build goes to a directory
// that outlives the run, one per checkout, package, environment and flag
// set, under the user's cache directory (where no other user can put a
// binary first). Beside each binary a stamp holds the hash of its inputs
// (the module's files, the toolchain, the build environment and flags): a
// later run whose inputs are the same takes the binary without running go,
// which even for an up-to-date build costs 0.5 to 1 s of CPU; any other
// run asks go build, which relinks only what changed.
// Test binaries only: internal/archtest keeps it out of the product.
package testbin
