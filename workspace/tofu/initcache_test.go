package tofu

import (
	"io/fs"
	"maps"
	"testing"
)

// TestInitCacheKey: the key names a provider set: a template's files and
// the tofu that resolves them, not a workspace's inputs or its generated
// backend block.
func TestInitCacheKey(t *testing.T) {
	c := NewInitCache("/bin/tofu", "", t.TempDir(), nil)
	base := DirSpec{Name: "lb-a", Files: map[string][]byte{
		"main.tf":              []byte("terraform {}\n"),
		"tfccm.auto.tfvars":    []byte("n = 1\n"),
		"tfccm_backend.tf":     []byte("terraform {\n  backend \"local\" {}\n}\n"),
		"modules/m/tfccm_x.tf": []byte("# a module file\n"),
	}}
	key := c.Key(&base)
	with := func(path, content string) *DirSpec {
		s := base
		s.Files = maps.Clone(base.Files)
		s.Files[path] = []byte(content)
		return &s
	}
	for _, tc := range []struct {
		name string
		spec *DirSpec
		c    *InitCache
		same bool
	}{
		{"another workspace's inputs", with("tfccm.auto.tfvars", "n = 2\n"), c, true},
		{"another workspace's backend block", with("tfccm_backend.tf", "# other\n"), c, true},
		{"another name", func() *DirSpec { s := base; s.Name = "lb-b"; return &s }(), c, true},
		{"a changed module file", with("main.tf", "terraform { required_version = \">= 1.6\" }\n"), c, false},
		{"a changed file of a sub-module", with("modules/m/tfccm_x.tf", "# changed\n"), c, false},
		{"a file's mode", func() *DirSpec { s := base; s.Modes = map[string]fs.FileMode{"main.tf": 0o755}; return &s }(), c, false},
		{"another binary", &base, NewInitCache("/bin/terraform", "", t.TempDir(), nil), false},
		{"a pinned lock file", &base, NewInitCache("/bin/tofu", "", t.TempDir(), []byte("provider \"x\" {}\n")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Key(tc.spec); (got == key) != tc.same {
				t.Errorf("same key = %v, want %v", got == key, tc.same)
			}
		})
	}
}
