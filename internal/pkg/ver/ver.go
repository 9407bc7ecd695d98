// Package ver holds the build version, injected at link time with
// -ldflags "-X github.com/forgeload/forgeload/internal/pkg/ver.version=v1.2.3".
package ver

var version = "dev"

// Version returns the version this binary was built with, or "dev".
func Version() string { return version }
