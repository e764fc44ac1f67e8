package jobrunner

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// requestFrame is the request frame for `tofu apply` in a workspace of
// files.
func requestFrame(t *testing.T, files map[string]string) []byte {
	t.Helper()
	src := t.TempDir()
	write(t, src, files)
	a := newArchive()
	if err := a.addDir(src); err != nil {
		t.Fatal(err)
	}
	if err := newRequest(a, src, []string{"apply", "-auto-approve", "-no-color"}, []string{"TF_VAR_secret=s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	b, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeFrame(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExecMainRunsOneRequest: a pooled pod's `tfccm run --exec` reads the
// request frame from stdin (held open, as the CCM's exec does), runs tofu
// and writes the result frame to stdout, and nothing else; a second
// request while one runs is told busy; a truncated request fails without
// a frame; the run's directory is gone afterwards.
func TestExecMainRunsOneRequest(t *testing.T) {
	tofu := repo.Tofu(t)
	work, cache := t.TempDir(), t.TempDir()
	req := requestFrame(t, map[string]string{"main.tf": "variable \"secret\" {\n  sensitive = true\n}\noutput \"x\" {\n  value = \"y\"\n}\n"})

	stdinR, stdinW := io.Pipe()
	go func() { _, _ = stdinW.Write(req) }()
	var stdout, stderr bytes.Buffer
	code := execMain(stdinR, &stdout, &stderr, work, cache, tofu)
	_ = stdinW.Close()
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	out, err := readFrame(&stdout, maxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Errorf("%d bytes after the result frame", stdout.Len())
	}
	dst := t.TempDir()
	res, err := decodeResult(out, dst)
	if err != nil || res.Exit != 0 || !strings.Contains(res.Stdout, "Apply complete") {
		t.Fatalf("result %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "terraform.tfstate")); err != nil {
		t.Errorf("the state did not come back: %v", err)
	}
	if strings.Contains(stderr.String(), "s3cr3t") {
		t.Errorf("the request's environment reached stderr: %q", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(work, "run")); !os.IsNotExist(err) {
		t.Errorf("the run's directory is left: %v", err)
	}

	// Busy: the lock held (a request running).
	held, ok, err := lockBusy(work)
	if err != nil || !ok {
		t.Fatalf("lockBusy: %v, %v", ok, err)
	}
	stdout.Reset()
	if code := execMain(bytes.NewReader(req), &stdout, &stderr, work, cache, tofu); code != exitBusy || stdout.Len() != 0 {
		t.Errorf("busy pod: exit %d with %d bytes out, want %d and none", code, stdout.Len(), exitBusy)
	}
	_ = held.Close()

	// A truncated request.
	stderr.Reset()
	if code := execMain(bytes.NewReader(req[:len(req)/2]), &stdout, &stderr, work, cache, tofu); code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "truncated") {
		t.Errorf("truncated request: exit %d, %d bytes out, stderr %q", code, stdout.Len(), stderr.String())
	}
}
