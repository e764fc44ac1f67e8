package jobrunner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// TestPodMainSteps: the pod's first step (container tofu, no token) runs
// tofu on the inputs and leaves the result archive in the work volume for
// the second (container result); each step refuses the other's flags
// missing.
func TestPodMainSteps(t *testing.T) {
	tofu := repo.Tofu(t)
	inputs, work := podInputsOf(t, map[string]string{"main.tf": "output \"x\" {\n  value = \"y\"\n}\n"}), t.TempDir()
	resultFile := filepath.Join(work, "result.tar.gz")
	var stdout, stderr bytes.Buffer
	code := PodMain([]string{"--inputs", inputs, "--parts", "1", "--work", work, "--plugin-cache", t.TempDir(), "--tofu", tofu, "--result-file", resultFile}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "tofu exited 0") {
		t.Fatalf("tofu step: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	out, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, err := decodeResult(out, dst)
	if err != nil || res.Exit != 0 || !strings.Contains(res.Stdout, "Apply complete") {
		t.Fatalf("result %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "terraform.tfstate")); err != nil {
		t.Errorf("the state did not come back: %v", err)
	}
	for _, args := range [][]string{{"--inputs", inputs}, {"--send-result", resultFile}} {
		stderr.Reset()
		if code := PodMain(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr.String())
		}
	}
}

// TestPodMainFailsWhenTheOOMKillerStruck: when the OOM killer killed a
// process of the tofu container while tofu ran, the step exits non-zero
// (the kubelet would never start the result container after it, and the
// Job would never end), its result still written.
func TestPodMainFailsWhenTheOOMKillerStruck(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "memory.events")
	write(t, dir, map[string]string{"memory.events": "oom 0\noom_kill 0\n"})
	saved := oomCounters
	oomCounters = []string{counter}
	t.Cleanup(func() { oomCounters = saved })
	for _, tc := range []struct {
		name, script string
		want         int
	}{
		{"no kill", "#!/bin/sh\nexit 0\n", 0},
		{"tofu failed, no kill", "#!/bin/sh\nexit 1\n", 0},
		{"a provider killed", "#!/bin/sh\nprintf 'oom 1\\noom_kill 1\\n' > " + counter + "\nexit 1\n", exitOutOfMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(t, dir, map[string]string{"memory.events": "oom 0\noom_kill 0\n"})
			tofu := filepath.Join(t.TempDir(), "tofu")
			if err := os.WriteFile(tofu, []byte(tc.script), 0o755); err != nil {
				t.Fatal(err)
			}
			inputs, work := podInputsOf(t, map[string]string{"main.tf": "\n"}), t.TempDir()
			resultFile := filepath.Join(work, "result.tar.gz")
			var stdout, stderr bytes.Buffer
			code := PodMain([]string{"--inputs", inputs, "--parts", "1", "--work", work, "--plugin-cache", t.TempDir(), "--tofu", tofu, "--result-file", resultFile}, &stdout, &stderr)
			if code != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.want, stderr.String())
			}
			if _, err := os.Stat(resultFile); err != nil {
				t.Errorf("no result written: %v", err)
			}
		})
	}
}

// podInputsOf is the inputs directory a runner pod gets for `tofu apply`
// in a workspace of files.
func podInputsOf(t *testing.T, files map[string]string) string {
	t.Helper()
	src, inputs := t.TempDir(), t.TempDir()
	write(t, src, files)
	a := newArchive()
	if err := a.addDir(src); err != nil {
		t.Fatal(err)
	}
	if err := newRequest(a, src, []string{"apply", "-auto-approve", "-no-color"}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	write(t, inputs, map[string]string{partFile(0): string(b)})
	return inputs
}
