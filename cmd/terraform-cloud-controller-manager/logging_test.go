package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestJSONLogs runs the CCM binary with --logging-format=json against a
// real apiserver until it leads: every line it writes, from its flags to
// the leader election through tfccm's own Lease, is one JSON object with
// a message. With the format's registration gone the binary refuses the
// flag, and this test fails. Started with POD_NAME, as the chart starts
// it, the leader also names that pod on its Lease for kubectl tfccm (its
// holder identity names the host, which is not the pod's name here).
func TestJSONLogs(t *testing.T) {
	cluster := devcluster.ForTest(t)
	bin := repo.Build(t, "./cmd/terraform-cloud-controller-manager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cloud.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("cluster_name = \"json\"\nwork_dir = %q\nterraform {\n  binary = %q\n}\n", filepath.Join(dir, "work"), repo.Tofu(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--logging-format=json", "--kubeconfig="+cluster.Kubeconfig(), "--cloud-config="+cfg,
		"--secure-port=0", "--controllers=-service-lb-controller") // the test needs no Service controller
	cmd.Stdout = os.Stderr
	cmd.Env = append(os.Environ(), podNameEnv+"=tfccm-json-pod")
	var logs bytes.Buffer
	cmd.Stderr = &syncWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil { // the test failed before it stopped the CCM
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	testkit.Eventually(t, 60*time.Second, "the CCM leads through kube-system/"+annotations.LeaderLease+" and names its pod there", func(ctx context.Context) error {
		l, err := cluster.Client().CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		if l.Annotations[annotations.LeaderPod] != "tfccm-json-pod" || l.Annotations[annotations.LeaderIdentity] != *l.Spec.HolderIdentity {
			return fmt.Errorf("the leader %s has not named its pod: %v", *l.Spec.HolderIdentity, l.Annotations)
		}
		return nil
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()

	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("only %d log lines:\n%s", len(lines), logs.String())
	}
	for i, line := range lines {
		var entry struct {
			Msg string `json:"msg"`
			TS  any    `json:"ts"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Msg == "" || entry.TS == nil {
			t.Fatalf("line %d of %d is not a JSON log entry (%v): %s", i+1, len(lines), err, line)
		}
	}
	t.Logf("%d JSON lines, from the flags to the hand-over on SIGTERM", len(lines))
}

// syncWriter serializes the writes of the process's output copier.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
