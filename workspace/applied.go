package workspace

import (
	"path/filepath"
)

// appliedDir (paths.go), inside a workspace directory, holds a copy of the files of
// its last successful apply: the configuration its state was made with.
// A destroy runs with them, so inputs that became invalid since (a
// requested address outside the pool, a tfccm.io/vars value the template
// rejects, a template that no longer validates) can never keep a
// Service's finalizer: `tofu destroy` evaluates the configuration, and the
// one that was applied last is the one that is known to pass.

// saveApplied records spec as the workspace's last applied configuration.
// When the previous apply was of the same content (prevHash: a drift
// check, a repair) and its copy is there, nothing is written.
func saveApplied(dir string, spec *Spec, prevHash string) error {
	if prevHash == spec.Hash {
		if prev, ok := lastApplied(dir, spec); ok && prev.Hash == spec.Hash {
			return nil
		}
	}
	return spec.WriteDir(AppliedPath(dir))
}

// lastApplied returns the workspace's last applied configuration under
// spec's name and backend settings; false when it has none.
func lastApplied(dir string, spec *Spec) (Spec, bool) {
	return readAs(AppliedPath(dir), spec)
}

// readAs reads the spec written into dir and gives it spec's identity and
// backend settings (a workspace's state location never changes with its
// files).
func readAs(dir string, spec *Spec) (Spec, bool) {
	prev, err := ReadDir(dir)
	if err != nil {
		return Spec{}, false
	}
	prev.Name, prev.Module = spec.Name, spec.Module
	prev.Backend, prev.StateWorkspace, prev.BackendConfig = spec.Backend, spec.StateWorkspace, spec.BackendConfig
	prev.Hash = prev.ContentHash()
	return prev, true
}

// AppliedPath is where the workspace directory dir keeps the copy of its
// last applied configuration.
func AppliedPath(dir string) string { return filepath.Join(dir, appliedDir) }

// LastApplied reads the workspace directory dir's last applied
// configuration as it is on disk (ErrNotFound when it has none), for
// readers outside the engine (tfccm workspaces).
func LastApplied(dir string) (Spec, error) { return ReadDir(AppliedPath(dir)) }
