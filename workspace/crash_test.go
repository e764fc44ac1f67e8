package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// crashHelperEnv makes the test binary act as a controller that applies
// the crash workspace and never returns, to be SIGKILLed mid-apply.
const crashHelperEnv = "TFCCM_WORKSPACE_CRASH_HELPER"

func TestMain(m *testing.M) {
	if work := os.Getenv(crashHelperEnv); work != "" {
		os.Exit(crashHelper(work))
	}
	os.Exit(m.Run())
}

func crashHelper(work string) int {
	e, err := New(Options{Binary: os.Getenv("TFCCM_TOFU"), WorkDir: work, Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	e.Start(context.Background())
	if _, err := e.Apply(crashSpec(os.Getenv("TFCCM_KUBECONFIG"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	select {}
}

// crashSpec is the workspace both incarnations apply: the same spec, so
// the second one must finish the first one's work. TFCCM_CRASH_MODULE=leak
// picks leakModule instead of testModule; TFCCM_CRASH_BACKEND a backend.
func crashSpec(kubeconfig string) Spec {
	s := testSpec("crash", 1, 0)
	if os.Getenv("TFCCM_CRASH_MODULE") == "leak" {
		s.Files["main.tf"] = []byte(leakModule)
		s.Files["tfccm.auto.tfvars"] = []byte("n = 1\n")
	}
	if kubeconfig != "" {
		s.Files["backend.tf"] = kubernetesBackendFile("crash", kubeconfig)
		s.Backend = kubernetesBackendInfo("crash", kubeconfig)
	}
	if b := os.Getenv(crashBackendEnv); b != "" {
		var f backendFixture
		if err := json.Unmarshal([]byte(b), &f); err != nil {
			panic(err)
		}
		f.set(&s, "crash")
	}
	return s
}

// crashBackendEnv, when set, is a backendFixture (JSON) the crash
// workspace keeps its state in (backends_test.go).
const crashBackendEnv = "TFCCM_CRASH_BACKEND"

// killMidApply runs a controller process on the crash workspace, waits
// until its apply is inside the local-exec provisioner and SIGKILLs it,
// then ends the provisioner's shell (it outlives tofu) and lets the next
// run go through.
func killMidApply(t *testing.T, work, kubeconfig string, env ...string) {
	t.Helper()
	killHelperMidApply(t, work, kubeconfig, env...)
	killStrays(t, work) // the provisioner's shell outlives tofu
	if err := os.Remove(filepath.Join(work, "hold")); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(work, "crash", ".tfccm", "claim.json")) {
		t.Fatal("the killed controller left no claim")
	}
}

// killHelperMidApply is killMidApply's kill alone: what the killed
// controller left running stays, and work/hold holds it.
func killHelperMidApply(t *testing.T, work, kubeconfig string, env ...string) {
	t.Helper()
	hold := filepath.Join(work, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), crashHelperEnv+"="+work, "TFCCM_TOFU="+repo.Tofu(t), "TFCCM_KUBECONFIG="+kubeconfig), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		killStrays(t, work)
	})
	started := filepath.Join(work, "crash", "applied.log.start")
	deadline := time.Now().Add(time.Minute)
	for !exists(started) {
		if time.Now().After(deadline) {
			t.Fatalf("helper never reached the apply: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

func TestKill9MidApplyRecovers(t *testing.T) {
	work := t.TempDir()
	killMidApply(t, work, "")
	dir := filepath.Join(work, "crash")
	if exists(filepath.Join(dir, "applied.log")) {
		t.Fatal("the apply finished before the kill; the test proves nothing")
	}

	// The next incarnation finishes the work with no manual step.
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work})
	spec := crashSpec("")
	if st := e.Status("crash"); st.AppliedHash != "" {
		t.Fatalf("interrupted workspace reported applied: %+v", st)
	}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if string(st.Outputs["value"]) != "1" {
		t.Fatalf("outputs after recovery: %v", st.Outputs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "applied.log")); strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("provisioner log %q", b)
	}
	if got := calls(); count(got, "force-unlock") != 0 || count(got, "apply") != 1 {
		t.Fatalf("recovery ran %v", got)
	}
	for _, leftover := range []string{planFile, ".tfccm/claim.json", ".terraform.tfstate.lock.info"} {
		if exists(filepath.Join(dir, leftover)) {
			t.Errorf("%s left behind after recovery", leftover)
		}
	}
}

func TestLockHeldByOtherIsReportedNotStolen(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work, Backoff: Backoff{Initial: time.Hour}})
	spec := testSpec("locked", 1, 0)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)

	// Someone else (a human running tofu) holds the state lock.
	hold := filepath.Join(work, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := exec.Command(repo.Tofu(t), "apply", "-no-color", "-input=false", "-auto-approve", "-var", "n=42")
	other.Dir = e.Dir("locked")
	other.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var otherOut strings.Builder
	other.Stdout, other.Stderr = &otherOut, &otherOut
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(readFile(filepath.Join(e.Dir("locked"), "applied.log.start")), "42") {
		if time.Now().After(deadline) {
			t.Fatalf("other apply never started: %s", otherOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	spec2 := testSpec("locked", 2, 0)
	if _, err := e.Apply(spec2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec2.Name, spec2.ContentHash())
	if !errors.Is(err, tofu.ErrLocked) {
		t.Fatalf("Wait = %+v, %v; want tofu.ErrLocked", st, err)
	}
	who := locks.TofuWho()
	if !strings.Contains(err.Error(), who) || !strings.Contains(err.Error(), "Apply") || !strings.Contains(err.Error(), "not taking it over") {
		t.Fatalf("lock error %q does not name the holder %s", err, who)
	}
	// The other apply keeps its lock and completes.
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("the lock holder's apply failed (lock stolen?): %v\n%s", err, otherOut.String())
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// leakModule creates an object outside its state (a file under
// work/objects, as a provisioner-based template writes an HAProxy
// fragment), then blocks while work/hold exists; destroying the resource
// removes the object.
const leakModule = `variable "n" {
  type = number
}

resource "terraform_data" "obj" {
  input = var.n
  provisioner "local-exec" {
    command     = "mkdir -p \"$OBJ\" && touch \"$OBJ/lb-$N\" && echo \"$N\" >> \"$LOG.start\"; while [ -e \"$HOLD\" ]; do sleep 0.05; done; echo \"$N\" >> \"$LOG\""
    environment = { OBJ = "${path.module}/../objects", N = var.n, LOG = "${path.module}/applied.log", HOLD = "${path.module}/../hold" }
  }
  provisioner "local-exec" {
    when        = destroy
    command     = "rm -f \"$OBJ/lb-$N\""
    environment = { OBJ = "${path.module}/../objects", N = self.input }
  }
}

output "value" {
  value = terraform_data.obj.output
}
`

// TestKill9MidApplyThenDestroyLeavesNothing: a controller killed while an
// apply was creating an object its state does not yet record, then a
// destroy by the next incarnation (the Service was deleted meanwhile):
// the object must not outlive the workspace.
func TestKill9MidApplyThenDestroyLeavesNothing(t *testing.T) {
	work := t.TempDir()
	t.Setenv("TFCCM_CRASH_MODULE", "leak")
	killMidApply(t, work, "", "TFCCM_CRASH_MODULE=leak")
	object := filepath.Join(work, "objects", "lb-1")
	if !exists(object) {
		t.Fatal("the killed apply created nothing; the test proves nothing")
	}
	e := newTestEngine(t, Options{WorkDir: work})
	spec := crashSpec("")
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	if exists(object) {
		t.Error("the object the killed apply created outlived the destroyed workspace")
	}
	if exists(e.Dir("crash")) {
		t.Error("workspace directory left")
	}
}
