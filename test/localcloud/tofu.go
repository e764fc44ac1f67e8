package localcloud

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/internal/repo"
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
	cmd := exec.CommandContext(ctx, tofu, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE="+cliConfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("tofu %s in %s: %w\n%s%s", args[0], dir, err, tail(stdout.String(), 2000), tail(stderr.String(), 4000))
	}
	return stdout.Bytes(), nil
}

// cleanEnv is the process environment without variables that would change
// what tofu does (TF_VAR_*, TF_LOG, TF_CLI_*, TF_DATA_DIR...).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") {
			env = append(env, kv)
		}
	}
	return env
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
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
