package localcloud

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// tofu runs one OpenTofu command in the infra workspace.
func (c *Cloud) tofu(ctx context.Context, args ...string) error {
	_, err := c.tofuOutput(ctx, args...)
	return err
}

func (c *Cloud) tofuOutput(ctx context.Context, args ...string) ([]byte, error) {
	return RunTofu(ctx, c.Tofu, c.infraWorkspace(), args...)
}

// RunTofu runs tofu with args in dir and returns its stdout. The error
// carries the command's stderr (the infra has no secrets).
func RunTofu(ctx context.Context, tofu, dir string, args ...string) ([]byte, error) {
	// The local set's modules use tfccm's lbhost provider: install it
	// from the repository's filesystem mirror, never from a registry.
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		return nil, fmt.Errorf("tofu %s: %w", args[0], err)
	}
	return testkit.Tofu{Binary: tofu, Dir: dir, CLIConfig: cliConfig}.Run(ctx, args...)
}

// CopyModule copies the regular files of a Terraform module directory
// (*.tf, *.sh, ...; not .terraform or state) into dst.
func CopyModule(src, dst string) error { return copyModule(src, dst) }

func copyModule(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "terraform.tfstate") {
			continue
		}
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(dst, data, st.Mode().Perm())
}
