package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tfccm/tfccm/workspace"
)

// TestWorkspacesPhases: the phases `tfccm workspaces` reads from a work_dir
// as the engine writes it (workspace.Spec.WriteDir for the desired and the
// applied copy, a tombstone for a destroyed name).
func TestWorkspacesPhases(t *testing.T) {
	work := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(cfgFile, []byte("cluster_name = \"c1\"\nwork_dir = \""+work+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(name, content string) *workspace.Spec {
		return &workspace.Spec{Name: name, Files: map[string][]byte{"main.tf": []byte(content)}}
	}
	write := func(dir string, s *workspace.Spec) {
		if err := s.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	// applied: desired == applied; changed: a newer desired; new: never applied.
	write(filepath.Join(work, "lb-applied"), spec("lb-applied", "a"))
	write(workspace.AppliedPath(filepath.Join(work, "lb-applied")), spec("lb-applied", "a"))
	write(filepath.Join(work, "lb-changed"), spec("lb-changed", "b2"))
	write(workspace.AppliedPath(filepath.Join(work, "lb-changed")), spec("lb-changed", "b1"))
	write(filepath.Join(work, "routes"), spec("routes", "r"))
	if err := os.MkdirAll(filepath.Join(work, ".tombstones"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, ".tombstones", "lb-gone"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "plugin-cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"workspaces", "--config", cfgFile, "--kubeconfig", "/nonexistent"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{`lb-applied\s+Applied\s+-`, `lb-changed\s+Changed\s+-`, `lb-gone\s+Destroyed\s+-`, `routes\s+NotApplied\s+\(routes\)`} {
		if !regexp.MustCompile(`(?m)^` + want + `\s*$`).MatchString(out.String()) {
			t.Errorf("no line %q in\n%s", want, out.String())
		}
	}
	if bytes.Contains(out.Bytes(), []byte("plugin-cache")) {
		t.Errorf("a directory that is no workspace is listed:\n%s", out.String())
	}
}
