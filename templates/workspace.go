package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// Workspace is a rendered Terraform working directory.
type Workspace struct {
	// Name is the workspace name: "lb-<cluster>-<uid hash>" or "routes".
	// It is safe as a directory name and as a state key.
	Name string
	// Module is the template module the workspace was rendered from
	// ("loadbalancer", "loadbalancer.<variant>", "routes").
	Module string
	// Files maps slash-separated relative paths to contents: the module's
	// files (nested directories included), tfccm.auto.tfvars and
	// tfccm_backend.tf.
	Files map[string][]byte
	// Modes holds each file's permission bits (0644, or 0755 for scripts).
	Modes map[string]fs.FileMode
	// StateWorkspace is the Terraform workspace to select ("default" unless
	// the backend has no per-workspace key attribute tfccm knows; then it is
	// Name, and the engine must select it, e.g. with TF_WORKSPACE).
	StateWorkspace string
	// BackendConfig holds backend settings that look secret (passwords,
	// tokens, keys). They are never written to Files nor hashed; the engine
	// passes them to `init` out of band (e.g. a -backend-config file kept
	// outside the workspace). Never log them.
	BackendConfig map[string]string
	// BackendType and BackendAttributes are the effective backend settings
	// (the configured ones plus the per-workspace key), secret ones
	// included: the engine needs them to find and remove state. Never log
	// them.
	BackendType       string
	BackendAttributes map[string]cty.Value
	// Hash is sha256 over the sorted file names, modes and contents plus
	// StateWorkspace: the engine's no-op key.
	Hash string

	inputs map[string]cty.Value // the values written to the tfvars, for tests
}

func newWorkspace(name string) *Workspace {
	return &Workspace{Name: name, Files: map[string][]byte{}, Modes: map[string]fs.FileMode{}, StateWorkspace: "default"}
}

func (w *Workspace) add(p string, data []byte, exec bool) {
	w.Files[p] = data
	w.Modes[p] = 0o644
	if exec {
		w.Modes[p] = 0o755
	}
}

// Paths returns the file paths in sorted order.
func (w *Workspace) Paths() []string { return sortedKeys(w.Files) }

func (w *Workspace) seal() {
	h := sha256.New()
	fmt.Fprintf(h, "tfccm workspace v1\nstate workspace %q\n", w.StateWorkspace)
	for _, p := range w.Paths() {
		fmt.Fprintf(h, "%q %o %d\n", p, w.Modes[p], len(w.Files[p]))
		h.Write(w.Files[p])
	}
	w.Hash = hex.EncodeToString(h.Sum(nil))
}

// WriteDir writes the workspace into dir (created if missing), replacing
// files of a previous WriteDir that are no longer part of it (tracked in
// .tfccm-files) and leaving everything else alone (.terraform/, lock file,
// plans, local state). Each file is written atomically. The controller and
// `tfccm render` both use it.
func (w *Workspace) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write workspace %s: %w", w.Name, err)
	}
	paths := w.Paths()
	for _, p := range paths {
		if !cleanRel(p) || p == ManifestFile {
			return fmt.Errorf("write workspace %s: invalid file path %q", w.Name, p)
		}
	}
	// Remove files written last time that are gone now.
	if old, err := os.ReadFile(filepath.Join(dir, ManifestFile)); err == nil {
		for _, p := range strings.Split(string(old), "\n") {
			if _, keep := w.Files[p]; keep || !cleanRel(p) {
				continue
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("write workspace %s: remove stale %s: %w", w.Name, p, err)
			}
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
					break // not empty
				}
			}
		}
	}
	for _, p := range paths {
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, filepath.FromSlash(p)), w.Files[p], w.Modes[p]); err != nil {
			return fmt.Errorf("write workspace %s: %w", w.Name, err)
		}
	}
	manifest := strings.Join(paths, "\n") + "\n"
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
		return fmt.Errorf("write workspace %s: %w", w.Name, err)
	}
	return nil
}

// ReadDir reads back a directory written by WriteDir (the files listed in
// its manifest), for comparisons and tests.
func ReadDir(dir string) (map[string][]byte, error) {
	m, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("read workspace: %w", err)
	}
	out := map[string][]byte{}
	for _, p := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		if !cleanRel(p) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("read workspace: %w", err)
		}
		out[p] = data
	}
	return out, nil
}
