package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
)

// applyInfra applies testdata/infra with the real OpenTofu and returns the
// working directory (its state is what tfccm reads).
func applyInfra(t *testing.T) (dir, tofu string) {
	t.Helper()
	tofu = repo.Tofu(t)
	dir = t.TempDir()
	src, err := os.ReadFile("testdata/infra/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"init", "-input=false"}, {"apply", "-auto-approve", "-input=false"}} {
		cmd := exec.CommandContext(ctx, tofu, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE=/dev/null", "TF_IN_AUTOMATION=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tofu %s: %v\n%s", args[0], err, out)
		}
	}
	return dir, tofu
}

func TestStateQuery(t *testing.T) {
	infra, tofu := applyInfra(t)
	cfg := filepath.Join(t.TempDir(), "cloud.hcl")
	src := fmt.Sprintf("cluster_name = \"q\"\nwork_dir = %q\nterraform {\n  binary = %q\n}\ninstances {\n  source \"infra\" {\n    dir = %q\n  }\n}\n", t.TempDir(), tofu, infra)
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "state", "query", "--config", cfg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^alpha\s+terraform://local/alpha\s+local\.small\s+z1\s+r1\s+InternalIP=10\.250\.0\.21,Hostname=alpha\s+false\s+terraform_data\.node\["alpha"\]$`),
		regexp.MustCompile(`(?m)^beta\s+terraform://local/beta\s+local\.large\s+z2\s+r1\s+\S+\s+true\s+`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}

	code, out, _ = runCLI(t, "state", "query", "--config", cfg, "--provider-id", "terraform://local/beta", "--json")
	if code != exitOK || !strings.Contains(out, `"Name": "beta"`) || strings.Contains(out, "alpha") {
		t.Errorf("lookup by providerID: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "state", "query", "--config", cfg, "--name", "gamma")
	if code != exitError || !strings.Contains(errOut, "not found") {
		t.Errorf("missing node: exit %d, %q", code, errOut)
	}

	// No sources, or an unreadable source: an error, never an empty answer.
	bad := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(bad, []byte(strings.Replace(src, infra, infra+"-missing", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "state", "query", "--config", bad, "--timeout", "20s"); code != exitError {
		t.Errorf("unreadable source: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "state", "query"); code != exitUsage {
		t.Errorf("no --config: exit %d", code)
	}
}
