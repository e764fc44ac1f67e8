package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
)

// ccmProcess is the CCM binary running against a test apiserver, its
// output collected.
type ccmProcess struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
}

// startCCM builds the CCM and runs it against cluster with a minimal
// cloud config (no Service controller: the tests need none), env added to
// its environment and args; it is killed when the test ends, if still
// running.
func startCCM(t *testing.T, cluster *devcluster.Cluster, env []string, args ...string) *ccmProcess {
	t.Helper()
	bin := repo.Build(t, "./cmd/terraform-cloud-controller-manager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cloud.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("cluster_name = \"ccm\"\nwork_dir = %q\nterraform {\n  binary = %q\n}\n", filepath.Join(dir, "work"), repo.Tofu(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &ccmProcess{}
	p.cmd = exec.Command(bin, append([]string{"--kubeconfig=" + cluster.Kubeconfig(), "--cloud-config=" + cfg,
		"--secure-port=0", "--controllers=-service-lb-controller"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// Write collects the process's output.
func (p *ccmProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.Write(b)
}

// output is what the process wrote so far.
func (p *ccmProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop sends SIGTERM (a pod stopping) and waits for the process to exit.
func (p *ccmProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}
