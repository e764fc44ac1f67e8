package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
)

// Env is an installed stand-in for tests: a mirror, a CLI config that uses
// it, a call log, an object store and a fixture file.
type Env struct {
	Dir       string
	CLIConfig string
	Log       string
	Store     string
	Fixture   string
	// Environ is where its processes record their environment
	// (EnvEnviron, Environs).
	EnvironLog string
	// Only, when set, limits the served types (EnvOnly).
	Only     []string
	tofu     string
	settings string // the launchers' settings file (WriteSettings)
}

// Setup builds the stand-in, installs it for the named known providers
// (all when none are named) in a fresh directory and returns its Env.
func Setup(t testing.TB, names ...string) *Env {
	t.Helper()
	return SetupBinary(t, Build(t), names...)
}

// Build builds the stand-in's binary once for tests that set up several
// Envs (SetupBinary), and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	return repo.Build(t, "./test/standin/cmd/terraform-provider-standin")
}

// SetupBinary is Setup with the stand-in binary bin already built (Build).
func SetupBinary(t testing.TB, bin string, names ...string) *Env {
	t.Helper()
	dir := t.TempDir()
	providers := Known
	if len(names) > 0 {
		providers = nil
		for _, n := range names {
			p, err := Lookup(n)
			if err != nil {
				t.Fatal(err)
			}
			providers = append(providers, p)
		}
	}
	e := &Env{
		Dir: dir, CLIConfig: filepath.Join(dir, "tofurc"), Log: filepath.Join(dir, "calls.jsonl"),
		Store: filepath.Join(dir, "store"), Fixture: filepath.Join(dir, "fixture.json"), tofu: repo.Tofu(t),
		EnvironLog: filepath.Join(dir, "environ.jsonl"),
	}
	mirror := filepath.Join(dir, "mirror")
	if err := Install(mirror, bin, providers...); err != nil {
		t.Fatal(err)
	}
	if err := WriteCLIConfig(e.CLIConfig, mirror, providers...); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Fixture, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settings = SettingsFile(mirror)
	e.WriteSettings(t)
	return e
}

// WriteSettings writes the stand-in's settings (Log, Store, Fixture and
// Only) into the file its launchers read: a CCM's tofu, which passes on
// no undeclared variable, runs the stand-in configured as this Env.
// Call it again after changing Only.
func (e *Env) WriteSettings(t testing.TB) {
	t.Helper()
	vars := map[string]string{EnvLog: e.Log, EnvStore: e.Store, EnvFixture: e.Fixture, EnvEnviron: e.EnvironLog}
	if len(e.Only) > 0 {
		vars[EnvOnly] = strings.Join(e.Only, ",")
	}
	data, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.settings, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Environ is the environment for OpenTofu processes using the stand-in.
func (e *Env) Environ() []string {
	env := []string{
		"HOME=" + e.Dir, "PATH=/usr/bin:/bin", "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=" + e.CLIConfig,
		EnvLog + "=" + e.Log, EnvStore + "=" + e.Store, EnvFixture + "=" + e.Fixture,
	}
	if len(e.Only) > 0 {
		env = append(env, EnvOnly+"="+strings.Join(e.Only, ","))
	}
	return env
}

// SetFixture replaces the fixture: resource type → attribute → value.
func (e *Env) SetFixture(t testing.TB, fixture map[string]map[string]any) {
	t.Helper()
	data, err := json.Marshal(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Fixture, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Run runs OpenTofu in dir and returns stdout, or an error carrying stderr.
func (e *Env) Run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.tofu, args...)
	cmd.Dir = dir
	cmd.Env = e.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &TofuError{Args: args, Err: err, Stdout: string(out), Stderr: stderr.String()}
	}
	return out, nil
}

// Tofu runs OpenTofu in dir and fails the test on error.
func (e *Env) Tofu(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := e.Run(ctx, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Calls returns the call log so far, sorted (SortCalls), and empties it.
func (e *Env) Calls(t testing.TB) []Call {
	t.Helper()
	calls, err := ReadCalls(e.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.Log); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	SortCalls(calls)
	return calls
}

// TofuError is a failed OpenTofu run.
type TofuError struct {
	Args           []string
	Err            error
	Stdout, Stderr string
}

func (e *TofuError) Error() string {
	return "tofu " + strings.Join(e.Args, " ") + ": " + e.Err.Error() + "\n" + e.Stdout + e.Stderr
}

func (e *TofuError) Unwrap() error { return e.Err }

// ProviderConfigs returns the fingerprints of every provider configuration
// the stand-in received (attribute -> Fingerprint), in order.
func (e *Env) ProviderConfigs(t testing.TB) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(e.Log + ".configure")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]string
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("configure log: %v", err)
		}
		out = append(out, m)
	}
	return out
}
