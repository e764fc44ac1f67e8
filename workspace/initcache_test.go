package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// marker is a well-formed checksum no package has: a lock file that
// carries it was seeded from the shared copy (init keeps the checksums a
// lock file records and adds the ones it verifies).
const marker = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// TestInitSharesLockFile: a workspace's init starts from the lock file an
// earlier init of the same template wrote; another template gets an entry
// of its own; a damaged entry is detected, not used, and written again; an
// entry tofu refuses is dropped and init runs without it.
func TestInitSharesLockFile(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	bin, calls := countingBinary(t)
	// A plugin cache, as a cloud config sets it (plugin_cache_dir): the
	// providers a seeded lock file names are linked from it.
	plugins := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, CLIConfigFile: cliConfig, PluginCacheDir: plugins})
	template := func(extra string) map[string][]byte {
		return map[string][]byte{"main.tf": []byte(preparedModule + extra)}
	}
	apply := func(name, extra string) string {
		t.Helper()
		s := Spec{Name: name, Files: template(extra)}
		s.Files["tfccm.auto.tfvars"] = []byte("n = 1\n")
		// Per workspace, like the backend file: not part of the key.
		s.Files["tfccm_backend.tf"] = []byte("terraform {\n  backend \"local\" {\n    path = \"" + name + ".tfstate\"\n  }\n}\n")
		s.Hash = s.ContentHash()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := e.Apply(s); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Wait(ctx, name, s.Hash); err != nil {
			t.Fatalf("apply %s: %v", name, err)
		}
		return e.tofu.Inits.Key(s.dirSpec())
	}
	lockOf := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(e.Dir(name), tofu.LockFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	entry := func(key string) (lock, sum string) {
		t.Helper()
		l, _ := os.ReadFile(filepath.Join(e.tofu.Inits.Entry(key), tofu.CachedLock))
		s, _ := os.ReadFile(filepath.Join(e.tofu.Inits.Entry(key), tofu.CachedLockSum))
		return string(l), strings.TrimSpace(string(s))
	}
	// share writes content as key's entry, with a matching checksum.
	share := func(key, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(e.tofu.Inits.Entry(key), tofu.CachedLock), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.tofu.Inits.Entry(key), tofu.CachedLockSum), []byte(sha256Hex([]byte(content))), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	key := apply("a", "")
	if l, s := entry(key); l != lockOf("a") || s != sha256Hex([]byte(l)) || !strings.Contains(l, "tfccm/lbhost") {
		t.Fatalf("after the first init the shared lock file is %q (sum %q), want a's %q", l, s, lockOf("a"))
	}

	// Same template: b starts from the shared lock file.
	l, _ := entry(key)
	share(key, strings.Replace(l, "hashes = [\n", "hashes = [\n    \""+marker+"\",\n", 1))
	if k := apply("b", ""); k != key {
		t.Fatalf("same template, other backend and inputs: key %s, want %s", k, key)
	}
	if !strings.Contains(lockOf("b"), marker) {
		t.Errorf("b's lock file was not seeded from the shared one:\n%s", lockOf("b"))
	}

	// A changed module: a key and an entry of its own, not seeded.
	other := apply("c", "\n# changed\n")
	if other == key {
		t.Fatal("a changed module has the same key")
	}
	if strings.Contains(lockOf("c"), marker) {
		t.Errorf("c (another module) was seeded from a's template's lock file")
	}
	if l, _ := entry(other); l != lockOf("c") {
		t.Errorf("c's entry is %q, want c's lock file", l)
	}

	// A damaged entry (its checksum no longer matches) is not used and is
	// written again by the next init.
	if err := os.WriteFile(filepath.Join(e.tofu.Inits.Entry(key), tofu.CachedLock), []byte("provider \"registry.opentofu.org/tfccm/lbhost\" {\n  version = \"9.9.9\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := count(calls(), "init")
	apply("d", "")
	if n := count(calls(), "init") - before; n != 1 {
		t.Errorf("%d inits for d, want 1 (the damaged entry not tried)", n)
	}
	if strings.Contains(lockOf("d"), "9.9.9") || strings.Contains(lockOf("d"), marker) {
		t.Errorf("d was seeded from a damaged entry:\n%s", lockOf("d"))
	}
	if l, s := entry(key); l != lockOf("d") || s != sha256Hex([]byte(l)) {
		t.Errorf("the damaged entry was not rebuilt: %q (sum %q)", l, s)
	}

	// An intact entry tofu refuses (a version the mirror does not have):
	// init fails with it, is run again without it, and the entry is
	// replaced by the lock file of that init.
	share(key, "provider \"registry.opentofu.org/tfccm/lbhost\" {\n  version     = \"9.9.9\"\n  constraints = \"9.9.9\"\n  hashes = [\n    \""+marker+"\",\n  ]\n}\n")
	before = count(calls(), "init")
	apply("f", "")
	if strings.Contains(lockOf("f"), "9.9.9") {
		t.Errorf("f kept the refused lock file:\n%s", lockOf("f"))
	}
	if n := count(calls(), "init") - before; n != 2 {
		t.Errorf("%d inits for f, want 2 (with the refused lock file, then without)", n)
	}
	if l, _ := entry(key); l != lockOf("f") {
		t.Errorf("the refused entry was not replaced: %q", l)
	}

	// A new incarnation does not reuse the shared lock files.
	e2 := newTestEngine(t, Options{Binary: bin, CLIConfigFile: cliConfig, PluginCacheDir: plugins, WorkDir: e.opts.WorkDir})
	if _, err := os.Stat(e2.tofu.Inits.Entry(key)); !os.IsNotExist(err) {
		t.Errorf("shared lock file kept across incarnations: %v", err)
	}
}

// sha256Hex is the checksum a shared lock file's entry records.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
