// Package version owns the version of this tfccm build. It is one string,
// from `git describe --tags --always --dirty` (or VERSION=), set at link
// time by `make build`, `make image` and `make release` with
//
//	-ldflags "-X github.com/tfccm/tfccm/internal/version.version=v1.2.3 -X ...commit=SHA"
//
// The Makefile's VERSION_LDFLAGS sets it together with
// k8s.io/component-base/version (what the CCM's --version prints), so every
// binary of one build reports the same version. A build without those flags
// (a plain `go build ./cmd/tfccm`) says so rather than guessing.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; see the package comment.
var (
	version string
	commit  string
)

// Unstamped is the version of a binary built without VERSION_LDFLAGS.
const Unstamped = "v0.0.0-unstamped"

// Version is the build's version, e.g. v0.1.0 or v0.1.0-3-gabc1234-dirty.
func Version() string {
	if version == "" {
		return Unstamped
	}
	return version
}

// Commit is the source commit the build was made from: the stamped one, else
// the one Go recorded (vcs.revision), else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String describes the build for a `version` command: program, version,
// commit and Go toolchain.
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)", program, Version(), Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
