// Package buildinfo renders a binary's version for `version` commands and
// --version flags: the version the Makefile stamps in with -ldflags, and the
// commit only when the version does not already name it (git describe
// --always gives the bare commit on an untagged tree).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// String is "v1.2.0 (commit 1a2b3c4)", "1a2b3c4-dirty" (the version
// already names the commit), or, for a plain `go build` (version "dev", no
// commit), "dev (commit <vcs.revision>)" from the Go toolchain's build
// information when it has one.
func String(version, commit string) string {
	if version == "" {
		version = "dev"
	}
	if commit == "" {
		commit = vcsRevision()
	}
	if commit == "" || strings.Contains(version, commit) {
		return version
	}
	return version + " (commit " + commit + ")"
}

// vcsRevision is the short vcs.revision the toolchain stamped, or "".
func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 7 {
			return s.Value[:7]
		}
	}
	return ""
}
