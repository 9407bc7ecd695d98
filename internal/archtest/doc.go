// Package archtest owns the project's layering rules and checks them as a test:
// nothing in internal/pkg or bench/ imports internal/app, the load engine imports
// no forge, Redis, Docker or Prometheus code, no test fake is linked into the
// binary, the step executor (jobrun) reports through its own interface, not
// the forge reporter, and every package's tests start with internal/pkg/testmain
// (so that none pays the race runtime's second at exit).
// It has no code of its own; the rules live in layering_test.go so that CI fails
// the moment an import crosses a line, instead of a reviewer having to notice.
package archtest
