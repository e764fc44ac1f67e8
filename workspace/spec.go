package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// AdoptVar is the template input that carries a Service's adoption
// (templates: the adopt variable the import blocks read).
const AdoptVar = "adopt"

// Spec is the desired content of one workspace.
type Spec struct {
	// Name is the workspace directory name: 1-128 characters of
	// [a-z0-9._-], starting with a letter or digit: "lb-<cluster>-<uid
	// hash>" or "routes". It is also the state key.
	Name string
	// Module is the template module the workspace was rendered from
	// ("loadbalancer", "loadbalancer.<variant>", "routes"); informational,
	// not part of the hash.
	Module string
	// Coalesce lets the engine gather a burst of updates to this workspace
	// into one run (Options.Coalesce); a load balancer's node churn, not
	// the routes workspace, which batches its own calls. Not hashed.
	Coalesce bool
	// Adopts is set when the workspace imports existing infrastructure
	// (tfccm.io/adopt, the template input AdoptVar): its plans are read
	// and refused when they would destroy or replace what they import
	// (plans.CheckAdoption). Once an apply succeeded, later plans set
	// AdoptVar to null: what was adopted is in the state, and a port or
	// node added later is created, not imported. Not hashed (the inputs
	// carry the adoption).
	Adopts bool
	// Retain, on a destroy, keeps the workspace's resources in the cloud
	// (tfccm.io/retain-on-delete): the engine plans the forget
	// configuration (ForgetSpec: a removed block with destroy = false for
	// every resource) instead of a destroy, applies it, and removes the
	// state and directory as after a destroy. Read from the spec the
	// destroy was asked with. Not hashed, never written.
	Retain bool
	// Files maps slash-separated relative paths to their content: module
	// .tf files, scripts, tfccm.auto.tfvars and the generated backend file.
	Files map[string][]byte
	// Modes gives file modes for files that need one (scripts: 0o755).
	// Files not listed get 0o644.
	Modes map[string]fs.FileMode
	// Hash is the content hash (ContentHash): the engine's no-op key. When
	// empty the engine computes it.
	Hash string
	// Backend describes the state backend the backend file configures,
	// secret settings included: the engine needs them to find and remove
	// state. Never log it.
	Backend backends.Info
	// StateWorkspace is the Terraform workspace to select after init, for
	// backends without a per-workspace key attribute; "" or "default"
	// means the default workspace.
	StateWorkspace string
	// BackendConfig holds secret backend settings. They are never written
	// into the workspace directory: init gets them through a
	// -backend-config file that exists only while init runs, and they are
	// scrubbed from every message.
	BackendConfig map[string]string
	// Owner, when set, is the object the workspace belongs to (a load
	// balancer's Service): the catalog records it (catalog.go). Not
	// hashed, never written into the workspace.
	Owner *Owner
}

// namedWorkspace reports whether the spec selects a non-default Terraform
// workspace.
func (s *Spec) namedWorkspace() bool { return tofu.NamedWorkspace(s.StateWorkspace) }

// ManifestFile lists, one per line, the files WriteDir wrote into a
// workspace directory, so that the next WriteDir removes the ones a newer
// spec no longer has.
const ManifestFile = ".tfccm-files"

// reserved are names in a workspace directory that belong to tofu or to the
// engine and that a spec may not write.
var reserved = []string{metaDir, ManifestFile, ".terraform", ".terraform.lock.hcl", "terraform.tfstate", "terraform.tfstate.backup", ".terraform.tfstate.lock.info", "errored.tfstate", "terraform.tfstate.d"}

// Validate checks the spec's name and file paths. A spec that fails it is
// never written.
func (s *Spec) Validate() error {
	if !validName(s.Name) {
		return fmt.Errorf("workspace name %q: must be 1-128 characters of lowercase letters, digits, '.', '_' and '-', starting with a letter or digit", s.Name)
	}
	if len(s.Files) == 0 {
		return fmt.Errorf("workspace %s: no files", s.Name)
	}
	for p := range s.Files {
		if err := validPath(p); err != nil {
			return fmt.Errorf("workspace %s: file %q: %w", s.Name, p, err)
		}
	}
	for p, m := range s.Modes {
		if _, ok := s.Files[p]; !ok {
			return fmt.Errorf("workspace %s: mode given for unknown file %q", s.Name, p)
		}
		if m&^fs.ModePerm != 0 {
			return fmt.Errorf("workspace %s: file %q: mode %v is not a plain permission mode", s.Name, p, m)
		}
	}
	if s.Backend.Type != "" && !tfenv.ValidBackendType(s.Backend.Type) {
		return fmt.Errorf("workspace %s: backend type %q is not a valid backend name", s.Name, s.Backend.Type)
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] == '.' || s[0] == '-' || s[0] == '_' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func validPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return errors.New("must be a non-empty relative slash-separated path")
	}
	if path.Clean(p) != p {
		return errors.New("must be a clean path")
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." || el == "." {
			return errors.New("must stay inside the workspace")
		}
	}
	top := strings.SplitN(p, "/", 2)[0]
	for _, r := range reserved {
		if top == r {
			return fmt.Errorf("%s is reserved for tofu and the engine", r)
		}
	}
	if strings.HasSuffix(p, ".tfplan") {
		return errors.New("plan files are written by the engine")
	}
	return nil
}

// ContentHash is the engine's no-op key: sha256 over the sorted file
// paths, modes and contents and the Terraform workspace to select. Secret
// backend settings are left out (a hash of them is never persisted); the
// non-secret backend settings are in the generated backend file.
func (s *Spec) ContentHash() string {
	return hashFiles(s, func(string) bool { return true }, false)
}

// initHash covers what tofu init depends on: every file but the variable
// inputs, the backend and its secret settings (a changed credential must
// re-initialize).
func (s *Spec) initHash() string {
	return hashFiles(s, func(p string) bool { return !tofu.IsVarFile(p) }, true)
}

func hashFiles(s *Spec, keep func(string) bool, withBackend bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "tfccm workspace v2\nworkspace %q\n", s.StateWorkspace)
	for _, p := range s.Paths() {
		if !keep(p) {
			continue
		}
		fmt.Fprintf(h, "file %q %o %d\n", p, s.mode(p), len(s.Files[p]))
		h.Write(s.Files[p])
	}
	if withBackend {
		fmt.Fprintf(h, "backend %q\n", s.Backend.Type)
		for _, k := range sortedKeys(s.Backend.Attributes) {
			fmt.Fprintf(h, "attr %q %s\n", k, s.Backend.Attributes[k].GoString())
		}
		for _, k := range sortedKeys(s.BackendConfig) {
			fmt.Fprintf(h, "backend-config %q %q\n", k, s.BackendConfig[k])
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *Spec) mode(p string) fs.FileMode { return tofu.FileMode(s.Modes, p) }

// Paths returns the spec's file paths in sorted order.
func (s *Spec) Paths() []string { return sortedKeys(s.Files) }

// WriteDir writes the spec's files into dir (created if missing), each
// atomically, removes files an earlier WriteDir wrote (ManifestFile) that
// this spec no longer has, and leaves everything else alone (.terraform/,
// the lock file, plans, local state, the engine's .tfccm/). The engine and
// `tfccm render` both write workspaces with it.
func (s *Spec) WriteDir(dir string) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("write workspace: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write workspace %s: %w", s.Name, err)
	}
	previous, err := readManifest(dir)
	if err != nil {
		return fmt.Errorf("write workspace %s: %w", s.Name, err)
	}
	for _, p := range previous {
		if _, keep := s.Files[p]; keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write workspace %s: remove stale %s: %w", s.Name, p, err)
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break // not empty
			}
		}
	}
	paths := s.Paths()
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write workspace %s: %w", s.Name, err)
		}
		if err := fsutil.WriteFileAtomic(full, s.Files[p], s.mode(p)); err != nil {
			return fmt.Errorf("write workspace %s: %w", s.Name, err)
		}
	}
	manifest := strings.Join(paths, "\n") + "\n"
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
		return fmt.Errorf("write workspace %s: %w", s.Name, err)
	}
	return nil
}

// readManifest returns the valid paths listed in dir's manifest; none when
// there is no manifest yet.
func readManifest(dir string) ([]string, error) {
	m, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		if validPath(p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// ReadDir reads back the files WriteDir last wrote into dir, with their
// modes on disk. Name is dir's base name; the backend is left for the
// caller to fill in.
func ReadDir(dir string) (Spec, error) {
	paths, err := readManifest(dir)
	if err != nil {
		return Spec{}, fmt.Errorf("read workspace %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return Spec{}, fmt.Errorf("read workspace %s: %w", dir, ErrNotFound)
	}
	spec := Spec{Name: filepath.Base(dir), Files: make(map[string][]byte, len(paths)), Modes: make(map[string]fs.FileMode, len(paths))}
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		b, err := os.ReadFile(full)
		if err != nil {
			return Spec{}, fmt.Errorf("read workspace %s: %w", dir, err)
		}
		st, err := os.Stat(full)
		if err != nil {
			return Spec{}, fmt.Errorf("read workspace %s: %w", dir, err)
		}
		spec.Files[p], spec.Modes[p] = b, st.Mode().Perm()
	}
	return spec, nil
}
