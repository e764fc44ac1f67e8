package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestSBOMListsEveryModule: the SBOM of a Go binary (this test binary)
// names every module its build information lists, with its version, as a
// pkg:golang purl, and the document is the same each time it is made.
func TestSBOMListsEveryModule(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := goBinary(exe, "release.test")
	if err != nil {
		t.Fatal(err)
	}
	bi, _ := debug.ReadBuildInfo()
	purls := map[string]bool{}
	for _, m := range c.Components {
		purls[m.PURL] = true
	}
	if len(bi.Deps) < 10 {
		t.Fatalf("only %d modules in the build information", len(bi.Deps))
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if p := "pkg:golang/" + d.Path + "@" + d.Version; !purls[p] {
			t.Errorf("SBOM lacks %s", p)
		}
	}
	if !purls["pkg:golang/stdlib@"+strings.TrimPrefix(bi.GoVersion, "go")] {
		t.Errorf("SBOM lacks the Go standard library %s", bi.GoVersion)
	}
	if len(c.Hashes) != 1 || len(c.Hashes[0].Content) != 64 {
		t.Errorf("hashes %v", c.Hashes)
	}
	a, _ := json.Marshal(newBOM(c, c.Components, epoch))
	b, _ := json.Marshal(newBOM(c, c.Components, epoch))
	if string(a) != string(b) {
		t.Error("the same SBOM twice differs")
	}
	var doc map[string]any
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["bomFormat"] != "CycloneDX" || doc["specVersion"] != "1.6" || !strings.HasPrefix(doc["serialNumber"].(string), "urn:uuid:") {
		t.Errorf("header %v %v %v", doc["bomFormat"], doc["specVersion"], doc["serialNumber"])
	}
}

// TestSums: SHA256SUMS covers every file, nested ones too, and sha256sum
// -c accepts it.
func TestSums(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.tar.gz": "a", "providers/x/index.json": "{}", "b.json": "b"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSums(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, SumsFile))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "  a.tar.gz") || !strings.HasSuffix(lines[2], "  providers/x/index.json") {
		t.Errorf("SHA256SUMS:\n%s", b)
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", SumsFile)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.json"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("sha256sum", "--strict", "-c", SumsFile)
	cmd.Dir = dir
	if err := cmd.Run(); err == nil {
		t.Error("sha256sum -c accepted a changed file")
	}
}
