package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/lbhost/mirror"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// flipByte changes (or restores) one byte in the middle of file.
func flipByte(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(file, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestProviderChecksumMismatchRefused: with the build's lock file of the
// mirror (terraform.provider_lock_file), one byte changed in the mirrored
// lbhost provider makes every run of the workspace refuse it — an update
// and a destroy, each an Error naming the provider, counted in the
// metric — and the workspace's lock file is never deleted; restoring the
// byte lets runs go on. A new build with its new lock file (a new image:
// a new engine over the same work dir) is accepted by a workspace the old
// build applied.
func TestProviderChecksumMismatchRefused(t *testing.T) {
	dir, plugin, cliConfig := lbhostMirror(t)
	lock := filepath.Join(t.TempDir(), "providers.lock.hcl")
	if err := providerlock.WriteMirrorLock(dir, lock); err != nil {
		t.Fatal(err)
	}
	pinned, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	opts := Options{WorkDir: work, CLIConfigFile: cliConfig, ProviderLockFile: lock, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}}
	e := newTestEngine(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "integrity"
	wsLock := filepath.Join(e.Dir(name), tofu.LockFile)
	first := lbhostSpec(name, "1", nil)
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, name, first.Hash); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	kept := lbhostSpec("integrity-kept", "1", nil) // applied by this build, updated by the next
	if _, err := e.Apply(kept); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, kept.Name, kept.Hash); err != nil {
		t.Fatalf("apply %s: %v", kept.Name, err)
	}
	h1 := lockedHash(t, pinned)
	if got, _ := os.ReadFile(wsLock); !strings.Contains(string(got), h1) {
		t.Fatalf("the workspace's lock file does not hold the pinned checksum %s:\n%s", h1, got)
	}

	const want = "registry.opentofu.org/tfccm/lbhost " + mirror.Version
	refused := func(what string, do func(Spec) (Status, error), spec Spec) {
		t.Helper()
		before := mismatches(t)
		if _, err := do(spec); err != nil {
			t.Fatal(err)
		}
		_, err := e.Wait(ctx, name, spec.Hash)
		if got := tofu.ProviderMismatch(err); got != want {
			t.Fatalf("%s with a changed provider: ProviderMismatch %q (want %q), error %v", what, got, want, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: the error does not name the provider: %v", what, err)
		}
		if got := mismatches(t) - before; got < 1 {
			t.Errorf("%s: tfccm_workspace_provider_checksum_mismatches_total rose by %v", what, got)
		}
		if got, err := os.ReadFile(wsLock); err != nil || !strings.Contains(string(got), h1) {
			t.Fatalf("after the refused %s the workspace's lock file is gone or changed (%v):\n%s", what, err, got)
		}
	}
	ok := func(what string, do func(Spec) (Status, error), spec Spec, phase Phase) {
		t.Helper()
		if _, err := do(spec); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Wait(ctx, name, spec.Hash); err != nil || st.Phase != phase {
			t.Fatalf("%s: %v %+v", what, err, st)
		}
	}

	flipByte(t, plugin)
	refused("update", e.Apply, lbhostSpec(name, "2", nil))
	flipByte(t, plugin) // restored
	ok("update with the provider restored", e.Apply, lbhostSpec(name, "3", nil), PhaseApplied)
	flipByte(t, plugin)
	refused("destroy", e.Destroy, lbhostSpec(name, "4", nil))
	flipByte(t, plugin) // restored
	ok("destroy with the provider restored", e.Destroy, lbhostSpec(name, "5", nil), PhaseDestroyed)

	// A new build of the same version and its lock file: a new image.
	cancel()
	flipByte(t, plugin)
	if err := providerlock.WriteMirrorLock(dir, lock); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	e2 := newTestEngine(t, opts)
	fourth := lbhostSpec(kept.Name, "2", nil)
	if _, err := e2.Apply(fourth); err != nil {
		t.Fatal(err)
	}
	if st, err := e2.Wait(ctx2, fourth.Name, fourth.Hash); err != nil || st.Phase != PhaseApplied {
		t.Fatalf("apply after a new build with its new lock file: %v %+v", err, st)
	}
}

// TestProviderChecksumRecordedOnFirstUse: without a pinned lock file the
// first init records what it found, and a later change of the package is
// refused the same way (the lock file is kept).
func TestProviderChecksumRecordedOnFirstUse(t *testing.T) {
	_, plugin, cliConfig := lbhostMirror(t)
	e := newTestEngine(t, Options{CLIConfigFile: cliConfig, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "tofu-first-use"
	first := lbhostSpec(name, "1", nil)
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, name, first.Hash); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	recorded, err := os.ReadFile(filepath.Join(e.Dir(name), tofu.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, plugin)
	second := lbhostSpec(name, "2", nil)
	if _, err := e.Apply(second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, name, second.Hash); tofu.ProviderMismatch(err) == "" {
		t.Fatalf("apply with a changed provider: %v, want a checksum mismatch", err)
	}
	if got, _ := os.ReadFile(filepath.Join(e.Dir(name), tofu.LockFile)); string(got) != string(recorded) {
		t.Fatalf("the lock file changed after the refusal:\n%s\nwas:\n%s", got, recorded)
	}
}

// lockedHash is the first h1 hash in a lock file.
func lockedHash(t *testing.T, lock []byte) string {
	t.Helper()
	i := strings.Index(string(lock), `"h1:`)
	if i < 0 {
		t.Fatalf("no h1 hash in the lock file:\n%s", lock)
	}
	s := string(lock[i+1:])
	return s[:strings.IndexByte(s, '"')]
}

// mismatches reads the lbhost provider's checksum mismatch counter.
func mismatches(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(providerChecksumMismatches.WithLabelValues(mirror.Source))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return v
}
