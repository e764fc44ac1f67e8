package jobrunner

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/workspace/tofu"
)

const testPackage = "registry.opentofu.org/tfccm/lbhost/1.2.3/linux_amd64"

// installAsTofu lays out dir as tofu's init leaves it with a plugin cache:
// the lock file and each package in pkgs a link to its cache entry.
func installAsTofu(t *testing.T, dir, cache, lock string, pkgs ...string) {
	t.Helper()
	write(t, dir, map[string]string{".terraform.lock.hcl": lock})
	for _, p := range pkgs {
		entry := filepath.Join(cache, filepath.FromSlash(p))
		if err := os.MkdirAll(entry, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, ".terraform/providers", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(entry, link); err != nil {
			t.Fatal(err)
		}
	}
}

// The record of a workspace's provider links: written after an init when
// every package is tofu's link into the cache, and made again in a fresh
// directory of the next command only when it still fits.
func TestProviderLinks(t *testing.T) {
	other := "registry.opentofu.org/hashicorp/null/3.2.4/linux_amd64"
	cases := []struct {
		name string
		// installed lays out the directory init ran in.
		installed func(t *testing.T, dir, cache string)
		// next changes the next command's directory (a copy of the
		// carried files) and the cache before linking.
		next       func(t *testing.T, dir, cache string)
		wantRecord bool
		wantLinked bool
	}{
		{
			name:       "links into the cache, same lock file",
			installed:  func(t *testing.T, dir, cache string) { installAsTofu(t, dir, cache, "lock v1", testPackage, other) },
			wantRecord: true, wantLinked: true,
		},
		{
			name:      "the lock file changed since",
			installed: func(t *testing.T, dir, cache string) { installAsTofu(t, dir, cache, "lock v1", testPackage) },
			next: func(t *testing.T, dir, _ string) {
				write(t, dir, map[string]string{".terraform.lock.hcl": "lock v2"})
			},
			wantRecord: true,
		},
		{
			name:      "a package missing from this pod's cache",
			installed: func(t *testing.T, dir, cache string) { installAsTofu(t, dir, cache, "lock v1", testPackage, other) },
			next: func(t *testing.T, _, cache string) {
				if err := os.RemoveAll(filepath.Join(cache, filepath.FromSlash(other))); err != nil {
					t.Fatal(err)
				}
			},
			wantRecord: true,
		},
		{
			name: "a package tofu copied instead of linking",
			installed: func(t *testing.T, dir, cache string) {
				installAsTofu(t, dir, cache, "lock v1", testPackage)
				write(t, filepath.Join(dir, ".terraform/providers", filepath.FromSlash(other)), map[string]string{"terraform-provider-null": "bin"})
			},
		},
		{
			name: "a link elsewhere than the cache",
			installed: func(t *testing.T, dir, cache string) {
				installAsTofu(t, dir, t.TempDir(), "lock v1", testPackage)
			},
		},
		{
			name: "a module without providers (the engine's catalog)",
			installed: func(t *testing.T, dir, _ string) {
				write(t, dir, map[string]string{".terraform/terraform.tfstate": "{}"})
			},
			wantRecord: true, wantLinked: true,
		},
		{
			name: "a module without providers that has a lock file since",
			installed: func(t *testing.T, dir, _ string) {
				write(t, dir, map[string]string{".terraform/terraform.tfstate": "{}"})
			},
			next: func(t *testing.T, dir, _ string) {
				write(t, dir, map[string]string{".terraform.lock.hcl": "lock v1"})
			},
			wantRecord: true,
		},
		{
			// The engine pins the image's lock file into the catalog too.
			name: "no providers installed, a lock file naming some",
			installed: func(t *testing.T, dir, cache string) {
				installAsTofu(t, dir, cache, "lock v1")
				write(t, dir, map[string]string{".terraform/terraform.tfstate": "{}"})
			},
			wantRecord: true, wantLinked: true,
		},
		{
			name: "no providers installed, the lock file changed since",
			installed: func(t *testing.T, dir, cache string) {
				installAsTofu(t, dir, cache, "lock v1")
				write(t, dir, map[string]string{".terraform/terraform.tfstate": "{}"})
			},
			next: func(t *testing.T, dir, _ string) {
				write(t, dir, map[string]string{".terraform.lock.hcl": "lock v2"})
			},
			wantRecord: true,
		},
		{
			name: "no lock file",
			installed: func(t *testing.T, dir, cache string) {
				installAsTofu(t, dir, cache, "lock v1", testPackage)
				if err := os.Remove(filepath.Join(dir, ".terraform.lock.hcl")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:      "a forged record naming a path out of the cache",
			installed: func(t *testing.T, dir, cache string) { installAsTofu(t, dir, cache, "lock v1", testPackage) },
			next: func(t *testing.T, dir, _ string) {
				b, err := os.ReadFile(filepath.Join(dir, providerLinksFile))
				if err != nil {
					t.Fatal(err)
				}
				forged := strings.Replace(string(b), testPackage, "../../etc/x/y/z", 1)
				write(t, dir, map[string]string{providerLinksFile: forged})
			},
			wantRecord: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, cache := t.TempDir(), t.TempDir()
			tc.installed(t, dir, cache)
			if err := recordProviderLinks(dir, cache); err != nil {
				t.Fatal(err)
			}
			if got := exists(filepath.Join(dir, providerLinksFile)); got != tc.wantRecord {
				t.Fatalf("record written %v, want %v", got, tc.wantRecord)
			}
			// The next command's directory: what travels (the
			// providers do not).
			next := t.TempDir()
			rels, err := carriedFiles(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, rel := range rels {
				b, err := os.ReadFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				write(t, next, map[string]string{rel: string(b)})
			}
			if tc.next != nil {
				tc.next(t, next, cache)
			}
			if got := linkProviders(next, cache); got != tc.wantLinked {
				t.Fatalf("linked %v, want %v", got, tc.wantLinked)
			}
			if !tc.wantLinked {
				if exists(filepath.Join(next, providersDir)) {
					t.Error("providers left behind by a record that did not fit")
				}
				return
			}
			again, err := installedLinks(next, cache)
			if err != nil || again == nil {
				t.Fatalf("the links made are not tofu's: %+v, %v", again, err)
			}
			first, _ := installedLinks(dir, cache)
			if strings.Join(again.Links, ",") != strings.Join(first.Links, ",") {
				t.Errorf("linked %v, init had %v", again.Links, first.Links)
			}
		})
	}
}

func TestValidLink(t *testing.T) {
	for rel, want := range map[string]bool{
		testPackage: true,
		"localhost:8443/acme/thing/0.1.0-beta+x/linux_arm64": true,
		"registry.opentofu.org/tfccm/lbhost/1.2.3":           false,
		"registry.opentofu.org/tfccm/lbhost/1.2.3/linux/x":   false,
		"registry.opentofu.org/../lbhost/1.2.3/linux_amd64":  false,
		"/registry.opentofu.org/tfccm/lbhost/1.2.3/linux":    false,
		"registry.opentofu.org/tfccm//1.2.3/linux_amd64":     false,
		"registry.opentofu.org/tfccm/lb host/1.2.3/linux":    false,
	} {
		if got := validLink(rel); got != want {
			t.Errorf("validLink(%q) = %v, want %v", rel, got, want)
		}
	}
}

// countingTofu is real tofu behind a wrapper that logs each process's
// command; ran returns the commands since its last call.
func countingTofu(t *testing.T) (tofu string, ran func() string) {
	t.Helper()
	real := repo.Tofu(t)
	calls := filepath.Join(t.TempDir(), "calls")
	tofu = filepath.Join(t.TempDir(), "tofu")
	write(t, filepath.Dir(tofu), map[string]string{"tofu": "#!/bin/sh\necho \"$1\" >>" + calls + "\nexec " + real + " \"$@\"\n"})
	if err := os.Chmod(tofu, 0o755); err != nil {
		t.Fatal(err)
	}
	return tofu, func() string {
		b, _ := os.ReadFile(calls)
		_ = os.Remove(calls)
		return strings.Join(strings.Fields(string(b)), " ")
	}
}

// pooledRun sends one command of the engine's workspace dir to a pooled
// pod's `tfccm run --exec` with work and cache, as RunPooled does, and
// syncs its result back into dir.
func pooledRun(t *testing.T, dir, work, cache, tofu string, env []string, args ...string) *result {
	t.Helper()
	a := newArchive()
	if err := a.addDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := newRequest(a, dir, args, env); err != nil {
		t.Fatal(err)
	}
	b, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	go func() { _ = writeFrame(stdinW, b) }()
	var stdout, stderr bytes.Buffer
	code := execMain(stdinR, &stdout, &stderr, work, cache, tofu)
	_ = stdinW.Close()
	if code != 0 {
		t.Fatalf("%s: exit %d, stderr %q", args[0], code, stderr.String())
	}
	out, err := readFrame(&stdout, maxFrame)
	if err != nil {
		t.Fatal(err)
	}
	res, err := decodeResult(out, dir)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Through a pooled pod with real tofu and a provider from the image's
// mirror: after the engine's init, a command in a pod whose cache holds
// the workspace's providers runs tofu once (no linking init, which would
// read the state through the backend); in a pod whose cache lacks them,
// or after the lock file changed, the linking init runs and the command
// still succeeds.
func TestPooledCommandsLinkProvidersWithoutInit(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	tofu, ran := countingTofu(t)
	dir := t.TempDir()
	write(t, dir, map[string]string{"main.tf": lbhostModule})
	env := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE="+cliConfig)
	work, cache := t.TempDir(), t.TempDir()
	steps := []struct {
		name      string
		work      string
		cache     string
		before    func()
		args      []string
		wantTofu  string
		wantInOut string
	}{
		{name: "the engine's init", work: work, cache: cache, args: []string{"init", "-input=false", "-no-color"}, wantTofu: "init", wantInOut: "initialized"},
		{name: "plan in the same pod", work: work, cache: cache, args: []string{"plan", "-input=false", "-no-color", "-out=.tfccm/plan.tfplan"}, wantTofu: "plan", wantInOut: "Changes to Outputs"},
		{name: "apply in another pod on the node", work: t.TempDir(), cache: cache, args: []string{"apply", "-input=false", "-no-color", ".tfccm/plan.tfplan"}, wantTofu: "apply", wantInOut: "Apply complete"},
		{name: "a pod whose cache lacks the provider", work: t.TempDir(), cache: t.TempDir(), args: []string{"plan", "-input=false", "-no-color"}, wantTofu: "init plan", wantInOut: "No changes"},
		{
			name: "the lock file changed", work: work, cache: cache,
			before: func() {
				f, err := os.OpenFile(filepath.Join(dir, ".terraform.lock.hcl"), os.O_APPEND|os.O_WRONLY, 0)
				if err == nil {
					_, err = f.WriteString("\n# changed\n")
					_ = f.Close()
				}
				if err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"plan", "-input=false", "-no-color"}, wantTofu: "init plan", wantInOut: "No changes",
		},
		{name: "the record made again by that init", work: work, cache: cache, args: []string{"plan", "-input=false", "-no-color"}, wantTofu: "plan", wantInOut: "No changes"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		res := pooledRun(t, dir, s.work, s.cache, tofu, env, s.args...)
		if res.Exit != 0 || !strings.Contains(res.Stdout, s.wantInOut) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", s.name, res.Exit, res.Stdout, res.Stderr)
		}
		if got := ran(); got != s.wantTofu {
			t.Errorf("%s: tofu ran %q, want %q", s.name, got, s.wantTofu)
		}
		if !exists(filepath.Join(dir, providerLinksFile)) {
			t.Errorf("%s: the providers' record did not come back", s.name)
		}
		if exists(filepath.Join(dir, providersDir)) {
			t.Errorf("%s: the providers travelled back", s.name)
		}
	}
}

// A module without providers (as the engine's catalog: workspace and
// state commands only) runs each command alone in any pod after its init,
// also with a lock file naming providers it does not use (the image's
// pinned lock file, which the engine writes into every workspace: each of
// the catalog's writes ran a linking init, O(workspaces) with the
// kubernetes backend).
func TestPooledModuleWithoutProviders(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no lock file":       {},
		"a pinned lock file": {".terraform.lock.hcl": "provider \"registry.opentofu.org/tfccm/lbhost\" {\n  version = \"0.1.0\"\n  hashes = [\n    \"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\n  ]\n}\n"},
	} {
		t.Run(name, func(t *testing.T) {
			tofu, ran := countingTofu(t)
			dir := t.TempDir()
			write(t, dir, files)
			write(t, dir, map[string]string{"main.tf": "terraform {\n  backend \"local\" {}\n}\n"})
			env := append(os.Environ(), "TF_IN_AUTOMATION=1")
			for _, step := range [][]string{{"init", "-input=false", "-no-color"}, {"workspace", "new", "-no-color", "entry"}, {"workspace", "list", "-no-color"}, {"state", "pull"}} {
				res := pooledRun(t, dir, t.TempDir(), t.TempDir(), tofu, env, step...)
				if res.Exit != 0 {
					t.Fatalf("%v: exit %d, stderr %q", step, res.Exit, res.Stderr)
				}
			}
			if got := ran(); got != "init workspace workspace state" {
				t.Errorf("tofu ran %q, want each command once and no linking init", got)
			}
		})
	}
}

// A new workspace seeded from an earlier pooled init (the engine's
// prepared .terraform, workspace/tofu/prepared.go: what came back from the
// pod, the providers' record without the providers) runs its first command
// alone in another pod: no init, no linking init (each listed every state
// with the kubernetes backend).
func TestPooledWorkspaceSeededFromAPreparedInit(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	tofuBin, ran := countingTofu(t)
	env := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE="+cliConfig)
	cache := t.TempDir()
	inits := tofu.NewInitCache(tofuBin, cliConfig, t.TempDir(), nil)
	const key = "lbhost-module"

	donor := t.TempDir()
	write(t, donor, map[string]string{"main.tf": lbhostModule})
	if res := pooledRun(t, donor, t.TempDir(), cache, tofuBin, env, "init", "-input=false", "-no-color"); res.Exit != 0 {
		t.Fatalf("init: exit %d, stderr %q", res.Exit, res.Stderr)
	}
	inits.KeepLockFile(donor, key)
	inits.KeepPrepared(donor, key, nil)
	ran()

	fresh := t.TempDir()
	write(t, fresh, map[string]string{"main.tf": lbhostModule})
	if !inits.SeedLockFile(fresh, key) || !inits.SeedPrepared(fresh, key, nil) {
		t.Fatal("the fresh workspace was not seeded from the pooled init")
	}
	res := pooledRun(t, fresh, t.TempDir(), cache, tofuBin, env, "plan", "-input=false", "-no-color")
	if res.Exit != 0 || !strings.Contains(res.Stdout, "Changes to Outputs") {
		t.Fatalf("plan: exit %d, stdout %q, stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if got := ran(); got != "plan" {
		t.Errorf("tofu ran %q in the seeded workspace, want plan alone", got)
	}
	// A pod whose cache lacks the provider still links it with init.
	res = pooledRun(t, fresh, t.TempDir(), t.TempDir(), tofuBin, env, "plan", "-input=false", "-no-color")
	if res.Exit != 0 {
		t.Fatalf("plan in a pod without the provider: exit %d, stderr %q", res.Exit, res.Stderr)
	}
	if got := ran(); got != "init plan" {
		t.Errorf("tofu ran %q in a pod without the provider, want the linking init and plan", got)
	}
}
