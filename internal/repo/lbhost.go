package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

var lbhost struct {
	once sync.Once
	cfg  string
	err  error
}

// LBHostCLIConfig builds the lbhost provider from this repository into the
// filesystem mirror bin/providers (as `make build` does, with its lock file
// bin/providers.lock.hcl; the build is cached by Go) and returns bin/lbhost.tfrc, a CLI configuration that
// installs it from there. Once per process; the binary is replaced
// atomically so concurrent test binaries never see a partial file.
func LBHostCLIConfig() (string, error) {
	lbhost.once.Do(func() {
		root, err := Root()
		if err != nil {
			lbhost.err = err
			return
		}
		providers := filepath.Join(root, "bin", "providers")
		for i, source := range []string{mirror.Source, mirror.TerraformSource} {
			bin := mirror.BinaryPath(providers, source, mirror.Version)
			if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
				lbhost.err = fmt.Errorf("lbhost provider: %w", err)
				return
			}
			// Staged outside the mirror: tofu hashes every file of a
			// provider's directory (h1), so no other file may ever be
			// there, even for a moment.
			tmp := filepath.Join(root, ".work", fmt.Sprintf("lbhost-provider-%d.tmp%d", i, os.Getpid()))
			if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
				lbhost.err = fmt.Errorf("lbhost provider: %w", err)
				return
			}
			if i == 0 {
				if err := BuildTo("./lbhost/cmd/terraform-provider-lbhost", tmp); err != nil {
					os.Remove(tmp)
					lbhost.err = fmt.Errorf("the lbhost provider: %w", err)
					return
				}
			} else if err := copyFile(mirror.BinaryPath(providers, mirror.Source, mirror.Version), tmp); err != nil {
				lbhost.err = fmt.Errorf("lbhost provider: %w", err)
				return
			}
			err := os.Rename(tmp, bin)
			// A rename onto another link of the same file (BuildTo's
			// shared output, renamed there by another test process) does
			// nothing and leaves tmp (POSIX).
			os.Remove(tmp)
			if err != nil {
				lbhost.err = fmt.Errorf("lbhost provider: %w", err)
				return
			}
			if err := onlyFile(bin); err != nil {
				lbhost.err = fmt.Errorf("lbhost provider: %w", err)
				return
			}
		}
		// The mirror's checksums, as make build writes them: a cloud
		// config's provider_lock_file (make demo) must match this build.
		lock := filepath.Join(root, "bin", "providers.lock.hcl")
		tmpLock := fmt.Sprintf("%s.tmp%d", lock, os.Getpid())
		if err := providerlock.WriteMirrorLock(providers, tmpLock); err != nil {
			lbhost.err = fmt.Errorf("lbhost provider lock file: %w", err)
			return
		}
		if err := os.Rename(tmpLock, lock); err != nil {
			lbhost.err = fmt.Errorf("lbhost provider lock file: %w", err)
			return
		}
		cfg := filepath.Join(root, "bin", "lbhost.tfrc")
		tmpCfg := fmt.Sprintf("%s.tmp%d", cfg, os.Getpid())
		if err := os.WriteFile(tmpCfg, []byte(mirror.CLIConfig(providers)), 0o644); err != nil {
			lbhost.err = fmt.Errorf("lbhost CLI config: %w", err)
			return
		}
		if err := os.Rename(tmpCfg, cfg); err != nil {
			lbhost.err = fmt.Errorf("lbhost CLI config: %w", err)
			return
		}
		lbhost.cfg = cfg
	})
	return lbhost.cfg, lbhost.err
}

// LBHost is LBHostCLIConfig for tests: a failure fails the test.
func LBHost(t testing.TB) string {
	t.Helper()
	p, err := LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// onlyFile removes every other entry of bin's directory (a staging file
// an older test run left there): tofu's hash of the package covers them.
func onlyFile(bin string) error {
	entries, err := os.ReadDir(filepath.Dir(bin))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(bin) {
			if err := os.RemoveAll(filepath.Join(filepath.Dir(bin), e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
