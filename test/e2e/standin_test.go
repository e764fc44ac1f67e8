package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/test/standin"
)

// applyStandInInfra applies the set's infrastructure fixture
// (test/clouds/testdata/<set>/infra) through the stand-in and returns its
// directory (the instances state source) and the ids the cloud gave the
// created objects of type serverType, by name.
func applyStandInInfra(t *testing.T, env *standin.Env, set, serverType string) (dir string, ids map[string]string) {
	t.Helper()
	dir = t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "clouds", "testdata", set, "infra", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "main.tf", string(src))
	env.Tofu(t, dir, "init", "-input=false", "-no-color")
	env.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	ids = map[string]string{}
	for _, c := range env.Calls(t) {
		if c.Type == serverType {
			ids[fmt.Sprint(c.Values["name"])] = c.ID
		}
	}
	return dir, ids
}

// writeStandInCloudConfig is writeCloudConfig for a set whose provider the
// stand-in plays: its CLI config in the terraform block, its call log,
// store and fixture in its settings file (extraEnv adds credentials the
// real provider would need, to terraform.env).
func writeStandInCloudConfig(t *testing.T, env *standin.Env, blocks string, extraEnv ...string) (cfg, workDir string) {
	t.Helper()
	return writeCloudConfig(t, t.TempDir(), blocks, standInTerraform(t, env, extraEnv...)...)
}

// standInTerraform are the terraform block's lines for the stand-in (its
// CLI config; env with extraEnv). The stand-in's own settings go to its
// settings file (written here, Only included): a workspace's tofu gets
// only the credentials its template declares.
func standInTerraform(t *testing.T, env *standin.Env, extraEnv ...string) []string {
	env.WriteSettings(t)
	lines := []string{fmt.Sprintf("cli_config_file = %q", env.CLIConfig)}
	if len(extraEnv) > 0 {
		lines = append(lines, "env = { "+strings.Join(extraEnv, ", ")+" }")
	}
	return lines
}

// waitStandInCalls waits until the calls the cloud received since the last
// look satisfy want.
func waitStandInCalls(t *testing.T, env *standin.Env, what string, want func([]standin.Call) bool) {
	t.Helper()
	var seen []standin.Call
	eventually(t, 90*time.Second, what, func(context.Context) error {
		seen = append(seen, env.Calls(t)...)
		if want(seen) {
			return nil
		}
		return fmt.Errorf("calls so far %+v", seen)
	})
}
