package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Tofu runs OpenTofu (or Terraform) in one test working directory with the
// process environment minus every TF_* variable (no TF_VAR_*, TF_LOG or
// stray CLI config changes what the test sees), plus TF_IN_AUTOMATION, the
// CLI config when set, and Env.
type Tofu struct {
	Binary    string
	Dir       string
	CLIConfig string   // TF_CLI_CONFIG_FILE when not empty
	Env       []string // extra KEY=value
}

// Command returns the tofu command with args, ready to run.
func (f Tofu) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, f.Binary, args...)
	cmd.Dir = f.Dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TF_IN_AUTOMATION=1")
	if f.CLIConfig != "" {
		cmd.Env = append(cmd.Env, "TF_CLI_CONFIG_FILE="+f.CLIConfig)
	}
	cmd.Env = append(cmd.Env, f.Env...)
	return cmd
}

// Run runs tofu with args and returns its stdout; the error carries the
// ends of stdout and stderr.
func (f Tofu) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := f.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("tofu %s in %s: %w\n%s%s", args[0], f.Dir, err, tail(stdout.String(), 2000), tail(stderr.String(), 4000))
	}
	return stdout.Bytes(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
