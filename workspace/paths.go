package workspace

import (
	"path/filepath"
	"time"

	"github.com/tfccm/tfccm/workspace/locks"
)

// Every path the engine keeps under a workspace's metadata directory
// (<work dir>/<workspace>/.tfccm), relative to the workspace directory.
// Nothing else writes there; a spec may not (reserved).
const (
	// metaDir holds the engine's own files inside a workspace directory.
	metaDir = ".tfccm"
	// recordFile is the workspace's record (record.go): applied hash,
	// init hash, outputs.
	recordFile = metaDir + "/applied.json"
	// claimFile names the incarnation running tofu in the workspace
	// (lock.go); it outlives a killed run.
	claimFile = locks.ClaimFile
	// appliedDir is a copy of the files last applied (applied.go), for a
	// destroy with the configuration the state was applied with.
	appliedDir = metaDir + "/applied"
	// planFile is the saved plan; planTextFile and planJSONFile are its
	// published forms (publish.go).
	planFile     = metaDir + "/plan.tfplan"
	planTextFile = metaDir + "/plan.txt"
	planJSONFile = metaDir + "/plan.json"
	// erroredPrefix + a UTC time stamp keeps an errored.tfstate once it
	// is pushed (pushErrored).
	erroredPrefix = metaDir + "/errored.tfstate."
)

// erroredPath is where an errored.tfstate pushed at t is kept.
func erroredPath(dir string, t time.Time) string {
	return filepath.Join(dir, erroredPrefix+t.UTC().Format("20060102T150405Z"))
}
