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

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// Spec is the desired content of one workspace.
type Spec struct {
	// Name is the workspace directory name: 1-128 characters of
	// [a-z0-9._-], starting with a letter or digit.
	Name string
	// Files maps slash-separated relative paths to their content: module
	// .tf files, scripts, tfccm.auto.tfvars and the generated backend file.
	Files map[string][]byte
	// Modes gives file modes for files that need one (scripts: 0o755).
	// Files not listed get 0o644.
	Modes map[string]fs.FileMode
	// Hash is the content hash of everything above; when empty the engine
	// computes it (ContentHash).
	Hash string
	// Backend describes the state backend the backend file configures.
	Backend BackendInfo
	// StateWorkspace is the Terraform workspace to select after init, for
	// backends without a per-workspace key attribute; "" or "default"
	// means the default workspace.
	StateWorkspace string
	// BackendConfig holds secret backend settings. They are never written
	// into the workspace directory: init gets them through a
	// -backend-config file that exists only while init runs, and they are
	// scrubbed from every message.
	BackendConfig map[string]string
}

// namedWorkspace reports whether the spec selects a non-default Terraform
// workspace.
func (s *Spec) namedWorkspace() bool {
	return s.StateWorkspace != "" && s.StateWorkspace != "default"
}

// BackendInfo is the state backend of a workspace (config.Backend). The
// engine needs it to find local state and to remove kubernetes state after a
// destroy; other backends pass through to tofu.
type BackendInfo struct {
	// Type is the backend type; "" means local.
	Type string
	// Attributes are the backend settings as written in the backend file.
	Attributes map[string]cty.Value
}

// metaDir holds the engine's own files inside a workspace directory.
const metaDir = ".tfccm"

// reserved are names in a workspace directory that belong to tofu or to the
// engine and that a spec may not write.
var reserved = []string{metaDir, ".terraform", ".terraform.lock.hcl", "terraform.tfstate", "terraform.tfstate.backup", ".terraform.tfstate.lock.info", "errored.tfstate", "terraform.tfstate.d"}

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
	if s.Backend.Type != "" && !validBackendType(s.Backend.Type) {
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

func validBackendType(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return s != ""
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

// ContentHash is the hash of the files, their modes and the backend: the
// value the engine compares with what was last applied.
func (s *Spec) ContentHash() string {
	return hashFiles(s, func(string) bool { return true })
}

// initHash covers what tofu init depends on: every file but the variable
// inputs, and the backend.
func (s *Spec) initHash() string {
	return hashFiles(s, func(p string) bool { return !isVarFile(p) })
}

func isVarFile(p string) bool {
	return strings.HasSuffix(p, ".tfvars") || strings.HasSuffix(p, ".tfvars.json")
}

func hashFiles(s *Spec, keep func(string) bool) string {
	names := make([]string, 0, len(s.Files))
	for p := range s.Files {
		if keep(p) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, p := range names {
		fmt.Fprintf(h, "file %q %o %d\n", p, s.mode(p), len(s.Files[p]))
		h.Write(s.Files[p])
	}
	fmt.Fprintf(h, "backend %q\n", s.Backend.Type)
	attrs := make([]string, 0, len(s.Backend.Attributes))
	for k := range s.Backend.Attributes {
		attrs = append(attrs, k)
	}
	sort.Strings(attrs)
	for _, k := range attrs {
		fmt.Fprintf(h, "attr %q %s\n", k, s.Backend.Attributes[k].GoString())
	}
	fmt.Fprintf(h, "workspace %q\n", s.StateWorkspace)
	secret := make([]string, 0, len(s.BackendConfig))
	for k := range s.BackendConfig {
		secret = append(secret, k)
	}
	sort.Strings(secret)
	for _, k := range secret {
		fmt.Fprintf(h, "backend-config %q %q\n", k, s.BackendConfig[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (s *Spec) mode(p string) fs.FileMode {
	if m, ok := s.Modes[p]; ok {
		return m
	}
	return 0o644
}

// writeDir writes the spec's files into dir and removes files an earlier
// spec wrote that this one no longer has. Tofu's and the engine's own
// files are left alone.
func (s *Spec) writeDir(dir string, previous []string) error {
	if err := os.MkdirAll(filepath.Join(dir, metaDir), 0o700); err != nil {
		return fmt.Errorf("create workspace dir: %w", err)
	}
	for _, p := range previous {
		if _, keep := s.Files[p]; keep || validPath(p) != nil {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale file %s: %w", p, err)
		}
	}
	for p, content := range s.Files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := writeFileAtomic(full, content, s.mode(p)); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// fileList is the sorted list of the spec's file paths.
func (s *Spec) fileList() []string {
	names := make([]string, 0, len(s.Files))
	for p := range s.Files {
		names = append(names, p)
	}
	sort.Strings(names)
	return names
}

// writeFileAtomic writes a file so that a crash never leaves it half
// written; unchanged files are not rewritten.
func writeFileAtomic(name string, content []byte, mode fs.FileMode) error {
	return fsutil.WriteFileAtomic(name, content, mode)
}
