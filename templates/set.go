package templates

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// Limits on what a template tree may hold, so that a broken or hostile
// override directory cannot exhaust memory or loop on symlinks.
const (
	maxTreeDepth = 16
	maxTreeFiles = 2000
	maxTreeBytes = 32 << 20
)

// Set is a validated template set: modules by key plus instances.hcl.
// A Set is immutable once built; share it freely.
type Set struct {
	modules       map[string]*Module
	instances     []byte
	instancesName string
	hash          string
}

// Module returns the module with the given key ("loadbalancer",
// "loadbalancer.<variant>", "routes").
func (s *Set) Module(key string) (*Module, bool) {
	m, ok := s.modules[key]
	return m, ok
}

// Variants lists the installed load balancer variants, "default" first when
// the default module exists.
func (s *Set) Variants() []string {
	var out []string
	for _, k := range sortedKeys(s.modules) {
		m := s.modules[k]
		if m.Kind != KindLoadBalancer {
			continue
		}
		if m.Variant == "" {
			out = append([]string{"default"}, out...)
		} else {
			out = append(out, m.Variant)
		}
	}
	return out
}

// OpenTofuOnly says why HashiCorp Terraform cannot run the set ("" = it
// can): the first module that needs OpenTofu and why.
func (s *Set) OpenTofuOnly() string {
	// The modules that create things first: the reason names one of them
	// when they need OpenTofu too.
	keys := sortedKeys(s.modules)
	sort.SliceStable(keys, func(i, j int) bool {
		return s.modules[keys[i]].Kind != KindHostHealth && s.modules[keys[j]].Kind == KindHostHealth
	})
	for _, k := range keys {
		if why := s.modules[k].OpenTofuOnly; why != "" {
			return k + ": " + why
		}
	}
	return ""
}

// Credentials names the first module that takes the ephemeral credentials
// variable ("" if none).
func (s *Set) Credentials() string {
	for _, k := range sortedKeys(s.modules) {
		if s.modules[k].Credentials {
			return k + ": variable \"" + tofu.CredentialsVar + "\" is ephemeral"
		}
	}
	return ""
}

// Hash identifies the set's content (changes when any module changes).
func (s *Set) Hash() string { return s.hash }

// InstancesMapping returns the set's instances.hcl and a name for it in
// diagnostics. (config.Instances.Mapping, when set, is the caller's to honour.)
func (s *Set) InstancesMapping() (src []byte, filename string, err error) {
	if s.instances == nil {
		return nil, "", fmt.Errorf("template set has no %s", InstancesFile)
	}
	return append([]byte(nil), s.instances...), s.instancesName, nil
}

// tree is a raw snapshot of a set directory: top-level entries to files.
type tree struct {
	modules   map[string][]File // key -> files relative to the module dir
	instances []byte
	ignored   []string // top-level entries that are not part of the layout
}

func (t *tree) hash() string {
	h := sha256.New()
	for _, k := range sortedKeys(t.modules) {
		fmt.Fprintf(h, "module %q\n", k)
		for _, f := range t.modules[k] {
			fmt.Fprintf(h, "file %q %t %d\n", f.Path, f.Exec, len(f.Data))
			h.Write(f.Data)
		}
	}
	if t.instances != nil {
		fmt.Fprintf(h, "instances %d\n", len(t.instances))
		h.Write(t.instances)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readTree snapshots the set directory root of fsys. It follows symlinks
// (a Kubernetes ConfigMap volume is made of them) and skips dot entries,
// which include the volume's "..data" and timestamped directories.
func readTree(fsys fs.FS, root string) (*tree, error) {
	t := &tree{modules: map[string][]File{}}
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("read template directory: %w", err)
	}
	budget := &treeBudget{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := path.Join(root, name)
		info, err := fs.Stat(fsys, p) // follows symlinks
		if err != nil {
			return nil, fmt.Errorf("read template directory: %w", err)
		}
		switch {
		case name == InstancesFile && info.Mode().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			if err := budget.add(len(data)); err != nil {
				return nil, err
			}
			t.instances = data
		case info.IsDir():
			if _, _, ok := kindOf(name); !ok {
				t.ignored = append(t.ignored, name)
				continue
			}
			var files []File
			if err := readModuleFiles(fsys, p, "", 0, budget, &files); err != nil {
				return nil, fmt.Errorf("read module %s: %w", name, err)
			}
			sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
			t.modules[name] = files
		default:
			t.ignored = append(t.ignored, name)
		}
	}
	return t, nil
}

type treeBudget struct{ files, bytes int }

func (b *treeBudget) add(n int) error {
	b.files++
	b.bytes += n
	if b.files > maxTreeFiles || b.bytes > maxTreeBytes {
		return fmt.Errorf("template directory exceeds %d files or %d bytes", maxTreeFiles, maxTreeBytes)
	}
	return nil
}

// skipFile reports files never copied into a workspace: dot files (tofu's
// own working data, including .terraform.lock.hcl, which the engine owns)
// and state, which do not belong in a template.
func skipFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tfstate") || strings.HasSuffix(name, ".tfstate.backup") ||
		name == "terraform.tfstate.d"
}

func readModuleFiles(fsys fs.FS, dir, rel string, depth int, budget *treeBudget, out *[]File) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: directories nested deeper than %d (symlink loop?)", dir, maxTreeDepth)
	}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if skipFile(name) {
			continue
		}
		p := path.Join(dir, name)
		r := path.Join(rel, name)
		info, err := fs.Stat(fsys, p)
		if err != nil {
			return err
		}
		if info.IsDir() {
			if err := readModuleFiles(fsys, p, r, depth+1, budget, out); err != nil {
				return err
			}
			continue
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if err := budget.add(len(data)); err != nil {
			return err
		}
		*out = append(*out, File{Path: r, Data: data, Exec: bytes.HasPrefix(data, []byte("#!"))})
	}
	return nil
}

// parseTree validates every module of a tree. origin names the tree in
// diagnostics (e.g. "builtin:local" or the override directory).
func parseTree(t *tree, origin string) (map[string]*Module, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	mods := map[string]*Module{}
	for _, key := range sortedKeys(t.modules) {
		kind, variant, _ := kindOf(key)
		if kind == KindLoadBalancer && variant != "" && (!annotations.ValidVariant(variant) || variant == "default") {
			r := hcl.Range{Filename: origin + "/" + key}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variant name",
				Detail: fmt.Sprintf("Variant directory %q: a variant name is 1-32 characters of a-z, 0-9 and '-' (and not \"default\").", key), Subject: &r})
			continue
		}
		m, d := parseModule(key, kind, variant, origin+"/"+key, t.modules[key])
		diags = append(diags, d...)
		if m != nil {
			mods[key] = m
		}
	}
	if t.instances != nil {
		_, d := hclsyntax.ParseConfig(t.instances, origin+"/"+InstancesFile, hcl.InitialPos)
		diags = append(diags, d...)
	}
	return mods, diags
}

// LoadSet reads and validates the template set at dir of fsys. Every
// contract break is reported as a diagnostic naming file:line.
func LoadSet(fsys fs.FS, dir, origin string) (*Set, hcl.Diagnostics) {
	t, err := readTree(fsys, dir)
	if err != nil {
		r := hcl.Range{Filename: origin}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unreadable template set", Detail: err.Error(), Subject: &r}}
	}
	return buildSet(nil, t, origin)
}

// buildSet layers tree t (from origin) over base, module by module.
func buildSet(base *Set, t *tree, origin string) (*Set, hcl.Diagnostics) {
	mods, diags := parseTree(t, origin)
	if diags.HasErrors() {
		return nil, diags
	}
	s := &Set{modules: map[string]*Module{}}
	if base != nil {
		for k, m := range base.modules {
			s.modules[k] = m
		}
		s.instances, s.instancesName = base.instances, base.instancesName
	}
	for k, m := range mods {
		s.modules[k] = m
	}
	if t.instances != nil {
		s.instances, s.instancesName = t.instances, origin+"/"+InstancesFile
	}
	h := sha256.New()
	for _, k := range sortedKeys(s.modules) {
		fmt.Fprintf(h, "%s %s\n", k, s.modules[k].Origin)
		for _, f := range s.modules[k].Files {
			fmt.Fprintf(h, "%q %t %d\n", f.Path, f.Exec, len(f.Data))
			h.Write(f.Data)
		}
	}
	h.Write(s.instances)
	s.hash = hex.EncodeToString(h.Sum(nil))
	return s, diags
}
