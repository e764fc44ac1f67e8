package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// ErrDestroyed is returned by Apply for a workspace Destroy was asked for:
// a destroy is final for a workspace name, so an update that raced a
// deletion can never bring the infrastructure back.
var ErrDestroyed = errors.New("the workspace was destroyed and is never applied again")

// tombstoneDir holds one file per destroyed workspace name under the work
// dir (not a valid workspace name, so it never collides with one).
const tombstoneDir = ".tombstones"

// tombstones is the directory of the tombstones under the work dir.
type tombstones string

// tombstoneTTL is how long a tombstone is kept across restarts. The races
// it guards against last seconds; after a restart the service controller
// no longer calls for a deleted Service at all.
const tombstoneTTL = 7 * 24 * time.Hour

// Destroyed lists the workspace names destroyed under workDir whose
// tombstones are still kept (for `tfccm workspaces`); none when there are none.
func Destroyed(workDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(workDir, tombstoneDir))
	names := make([]string, 0, len(entries))
	for _, d := range entries {
		names = append(names, d.Name())
	}
	return names
}

func (t tombstones) tombstonePath(name string) string {
	return filepath.Join(string(t), name)
}

// tombstoned reports whether Destroy was asked for name, in this process
// or (within tombstoneTTL) an earlier one. The caller holds e.mu.
func (t tombstones) tombstoned(en *entry) bool {
	if en.tombstone {
		return true
	}
	st, err := os.Stat(t.tombstonePath(en.name))
	if err != nil {
		return false
	}
	if time.Since(st.ModTime()) > tombstoneTTL {
		_ = os.Remove(t.tombstonePath(en.name))
		return false
	}
	en.tombstone = true
	return true
}

// setTombstone marks name destroyed, in memory and on disk. The caller
// holds e.mu.
func (t tombstones) setTombstone(en *entry) error {
	en.tombstone = true
	if err := os.MkdirAll(string(t), 0o700); err != nil {
		return fmt.Errorf("tombstone %s: %w", en.name, err)
	}
	if err := fsutil.WriteFileAtomic(t.tombstonePath(en.name), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return fmt.Errorf("tombstone %s: %w", en.name, err)
	}
	return nil
}

// pruneTombstones removes tombstones older than tombstoneTTL.
func (t tombstones) pruneTombstones() {
	entries, err := os.ReadDir(string(t))
	if err != nil {
		return
	}
	for _, d := range entries {
		if info, err := d.Info(); err == nil && time.Since(info.ModTime()) > tombstoneTTL {
			_ = os.Remove(filepath.Join(string(t), d.Name()))
		}
	}
}

// Workspaces lists the workspace directories under the work dir with the
// time each was last written, sorted by name (for the orphan sweep).
func (e *Engine) Workspaces() ([]WorkspaceDir, error) {
	entries, err := os.ReadDir(e.opts.WorkDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	var out []WorkspaceDir
	for _, d := range entries {
		if !d.IsDir() || !validName(d.Name()) {
			continue
		}
		info, err := d.Info()
		if err != nil {
			continue
		}
		out = append(out, WorkspaceDir{Name: d.Name(), ModTime: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WorkspaceDir is a workspace directory found under the work dir.
type WorkspaceDir struct {
	Name    string
	ModTime time.Time
}

// Revive lifts the tombstone of a workspace whose destroy has finished, so
// it can be applied again: for a Service that stopped wanting a load
// balancer (its type changed, which destroyed it) and wants one again. A
// deleted Service never asks (its workspace name dies with its UID). It
// reports false, changing nothing, while the destroy is still to run,
// running or failed; true when name is not tombstoned at all.
func (e *Engine) Revive(name string) (bool, error) {
	if !validName(name) {
		return false, fmt.Errorf("revive %q: invalid workspace name", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.entry(name)
	if !e.tombs.tombstoned(en) {
		return true, nil
	}
	switch en.status.Phase {
	case PhaseDestroyed:
	case PhaseUnknown: // destroyed by an earlier incarnation: done once its directory is gone
		if _, err := os.Stat(e.Dir(name)); !errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
	default:
		return false, nil
	}
	if err := os.Remove(e.tombs.tombstonePath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("revive %s: %w", name, err)
	}
	en.tombstone = false
	return true, nil
}
