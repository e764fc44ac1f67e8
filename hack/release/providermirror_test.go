package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// builtProvider is the lbhost provider `make build` installed for this
// machine.
func builtProvider(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	p := mirror.BinaryPath(filepath.Join(root, "bin", "providers"), mirror.Source, mirror.Version)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the lbhost provider is not built (%v): run `make build`", err)
	}
	return p
}

// writeTestMirror writes the mirror of the built provider, for this
// machine's platform and one other, and returns its root and the zh: hash
// of this machine's zip.
func writeTestMirror(t *testing.T) (string, string) {
	t.Helper()
	bin := builtProvider(t)
	root := filepath.Join(t.TempDir(), "providers")
	host := platform{runtime.GOOS, runtime.GOARCH}
	other := platform{"linux", "riscv64"}
	if err := writeProviderMirror(root, mirror.Version, map[platform]string{host: bin, other: bin}, epoch); err != nil {
		t.Fatal(err)
	}
	var v mirrorVersion
	b, err := os.ReadFile(filepath.Join(root, mirror.Source, mirror.Version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	a, ok := v.Archives[host.dir()]
	if !ok || len(a.Hashes) != 1 || !strings.HasPrefix(a.Hashes[0], "zh:") || len(v.Archives) != 2 {
		t.Fatalf("%s.json = %s", mirror.Version, b)
	}
	return root, a.Hashes[0]
}

// tofuInit runs `tofu init` of a module requiring tfccm/lbhost at
// mirror.Version with the CLI config cliConfig (and env), then `tofu
// providers schema` (which starts the installed provider), and returns the
// lock file.
func tofuInit(t *testing.T, cliConfig string, env ...string) string {
	t.Helper()
	tofu := repo.Tofu(t)
	dir := t.TempDir()
	module := fmt.Sprintf(`terraform {
  required_providers {
    lbhost = {
      source  = "tfccm/lbhost"
      version = %q
    }
  }
}
`, mirror.Version)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(rc, []byte(cliConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(tofu, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("init", "-input=false", "-no-color")
	if out := run("providers", "schema", "-json"); !strings.Contains(out, `"lbhost_frontend"`) {
		t.Errorf("the installed provider has no lbhost_frontend resource: %.300s", out)
	}
	lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(lock)
}

// TestProviderNetworkMirror: a user's `tofu init` installs tfccm/lbhost
// from the release's providers/ directory served by a static HTTPS server
// (the network mirror protocol), and locks the zh: hash it lists.
func TestProviderNetworkMirror(t *testing.T) {
	root, zh := writeTestMirror(t)
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(root)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := tofuInit(t, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %s\n  }\n}\n", strconv.Quote(srv.URL+"/")), "SSL_CERT_FILE="+ca)
	if !strings.Contains(lock, strconv.Quote(zh)) || !strings.Contains(lock, strconv.Quote(zipH1(t, root))) || !strings.Contains(lock, `version     = "`+mirror.Version+`"`) {
		t.Errorf("the lock file does not record %s %s:\n%s", mirror.Version, zh, lock)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(requests, " "); !strings.Contains(got, "/"+mirror.Source+"/index.json") {
		t.Errorf("tofu did not ask the mirror: %s", got)
	}
}

// TestProviderFilesystemMirror: the same directory is a filesystem mirror
// (packed layout) for an air-gapped `tofu init`, which locks the h1: hash
// of the zip it installed.
func TestProviderFilesystemMirror(t *testing.T) {
	root, zh := writeTestMirror(t)
	lock := tofuInit(t, fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %s\n  }\n}\n", strconv.Quote(root)))
	if h1 := zipH1(t, root); !strings.Contains(lock, strconv.Quote(h1)) {
		t.Errorf("the lock file does not record the zip's %s (%s):\n%s", h1, zh, lock)
	}
	// The release's providers.lock.hcl (internal/providerlock) holds what
	// tofu recorded, for every platform's zip.
	ps, err := providerlock.Mirror(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Address != mirror.Source || ps[0].Version != mirror.Version || len(ps[0].Hashes) != 4 ||
		!slices.Contains(ps[0].Hashes, zipH1(t, root)) || !slices.Contains(ps[0].Hashes, zh) {
		t.Errorf("the release's lock file of the mirror: %+v, want the h1 and zh of both platforms' zips (%s)", ps, zh)
	}
}

// zipH1 is the h1: hash (OpenTofu's hash of a package's content) of this
// machine's zip in the mirror at root.
func zipH1(t *testing.T, root string) string {
	t.Helper()
	zip := filepath.Join(root, mirror.Source, fmt.Sprintf("%s_%s_%s.zip", providerBinary, mirror.Version, platform{runtime.GOOS, runtime.GOARCH}.dir()))
	h1, err := dirhash.HashZip(zip, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h1
}

// TestTerraformMirrorDocuments: registry.terraform.io's documents point at
// the same zips.
func TestTerraformMirrorDocuments(t *testing.T) {
	root, zh := writeTestMirror(t)
	docURL, _ := url.Parse("https://mirror.example/" + mirror.TerraformSource + "/" + mirror.Version + ".json")
	b, err := os.ReadFile(filepath.Join(root, mirror.TerraformSource, mirror.Version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var v mirrorVersion
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	a := v.Archives[platform{runtime.GOOS, runtime.GOARCH}.dir()]
	ref, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	zipPath := strings.TrimPrefix(docURL.ResolveReference(ref).Path, "/")
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(zipPath))); err != nil || a.Hashes[0] != zh {
		t.Errorf("%s resolves to %s: %v (hash %v, want %s)", a.URL, zipPath, err, a.Hashes, zh)
	}
}
