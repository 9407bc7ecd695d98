// Package ver holds the build's identity: the version, commit and build
// date, injected at link time with
//
//	-ldflags "-X github.com/forgeload/forgeload/internal/pkg/ver.version=v1.2.3
//	          -X github.com/forgeload/forgeload/internal/pkg/ver.commit=abc1234
//	          -X github.com/forgeload/forgeload/internal/pkg/ver.date=2026-01-02T15:04:05Z"
//
// Without them, the commit and date come from the VCS information the Go
// toolchain stamps into binaries built from a git checkout.
package ver

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

var (
	version = "dev"
	commit  = ""
	date    = ""
)

// protoModule is the forge protocol's Go module (runner.v1 over connect).
const protoModule = "gitea.dev/actions-proto-go"

// Version returns the version this binary was built with, or "dev".
func Version() string { return version }

// Info is the build's identity, as `forgeload version` prints it.
type Info struct {
	// Version is the release version, or "dev".
	Version string `json:"version"`
	// Commit is the git commit, with "-dirty" when the tree had changes;
	// "unknown" when neither -ldflags nor the toolchain recorded one.
	Commit string `json:"commit"`
	// Date is the build (or commit) date in RFC 3339, or "unknown".
	Date string `json:"date"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// Protocol is the forge protocol spoken: the runner.v1 service and the
	// actions-proto-go version it was generated from.
	Protocol string `json:"protocol"`
}

// Get returns the build's identity.
func Get() Info {
	i := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Protocol: "runner.v1"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && commit == "" && i.Commit != "" {
			i.Commit += "-dirty"
		}
		for _, d := range bi.Deps {
			if d.Path != protoModule {
				continue
			}
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Path + " " + d.Replace.Version
			}
			i.Protocol = fmt.Sprintf("runner.v1 (actions-proto-go %s)", v)
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String formats i on several lines: "forgeload v1.2.3", then one
// "  key: value" line per field.
func (i Info) String() string {
	return fmt.Sprintf("forgeload %s\n  commit:   %s\n  built:    %s\n  go:       %s\n  protocol: %s\n",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Protocol)
}
