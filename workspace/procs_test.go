package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace/tofu"
)

// waitNoneMarked fails unless no process of work's runs is left within
// the timeout.
func waitNoneMarked(t *testing.T, work string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for left := tofu.Marked(work); len(left) > 0; left = tofu.Marked(work) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left running: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNewIncarnationEndsLeftovers: a controller killed mid-apply leaves
// the provisioner's shell running (tofu dies with the controller, what tofu
// started does not); the next engine ends it when it starts, before it
// runs anything, and then finishes the work.
func TestNewIncarnationEndsLeftovers(t *testing.T) {
	work := t.TempDir()
	killHelperMidApply(t, work, "")
	if len(tofu.Marked(work)) == 0 {
		t.Fatal("the killed controller left nothing running; the test proves nothing")
	}
	e := newTestEngine(t, Options{WorkDir: work})
	waitNoneMarked(t, work, 5*time.Second)
	if err := os.Remove(filepath.Join(work, "hold")); err != nil {
		t.Fatal(err)
	}
	spec := crashSpec("")
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
}

// sigintProofModule's apply starts a process in tofu's process group that
// ignores SIGINT and SIGTERM and outlives tofu, as a provider stuck in a
// call does.
const sigintProofModule = `resource "terraform_data" "stuck" {
  provisioner "local-exec" {
    command     = "trap '' INT TERM; echo x > \"$START\"; sleep 300"
    environment = { START = "${path.module}/started" }
  }
}
`

// TestTimedOutRunEndedAsAWhole: a command that times out is interrupted,
// then killed after the grace period, and whatever it started (here a
// shell that ignores SIGINT) is killed with its process group.
func TestTimedOutRunEndedAsAWhole(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work, Timeout: 3 * time.Second, GracePeriod: time.Second, Backoff: Backoff{Initial: time.Hour}})
	spec := Spec{Name: "stuck", Files: map[string][]byte{"main.tf": []byte(sigintProofModule)}}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.ContentHash())
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Wait = %+v, %v; want a timeout", st, err)
	}
	if !exists(filepath.Join(e.Dir("stuck"), "started")) {
		t.Fatal("the provisioner never started; the test proves nothing")
	}
	waitNoneMarked(t, work, 2*time.Second)
}
