package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// encryptionBlock is the cloud config's encryption block with a key
// provider of kind ("tfccm_pbkdf2" or OpenTofu's "pbkdf2") reading the
// passphrase from TFCCM_E2E_PASSPHRASE.
func encryptionBlock(kind string) string {
	return fmt.Sprintf(`
encryption {
  key_provider %q "main" {
    passphrase = env.TFCCM_E2E_PASSPHRASE
  }
  method "aes_gcm" "main" {
    keys = key_provider.%s.main
  }
  state {
    method   = method.aes_gcm.main
    enforced = true
  }
  plan {
    method   = method.aes_gcm.main
    enforced = true
  }
}
`, kind, kind)
}

func randomPassphrase(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2e-pass-" + hex.EncodeToString(b)
}

func createEncService(ctx context.Context, client kubernetes.Interface, name string, ports ...int32) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP})
	}
	_, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	return err
}

// TestEncryptionKeyServer: a CCM whose cloud config encrypts with
// key_provider "tfccm_pbkdf2" writes ciphertext state; a restarted CCM
// reads it and applies an edit; a CCM with a wrong passphrase records a
// Warning naming the decryption and leaves the state as it was; the
// passphrase is in no log, Event or file of the work dir.
func TestEncryptionKeyServer(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	serveNodes(t, cloud, 30080)
	for _, name := range cloud.Nodes() {
		createNode(t, client, cloud, name)
	}
	pass := randomPassphrase(t)
	t.Setenv("TFCCM_E2E_PASSPHRASE", pass)
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings())+encryptionBlock("tfccm_pbkdf2"))
	var logs []string
	clean := func(what string) {
		t.Helper()
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(pass)) {
				t.Errorf("%s: the CCM log %s holds the passphrase", what, l)
			}
		}
		_ = filepath.Walk(workDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pass)) {
					t.Errorf("%s: %s holds the passphrase", what, p)
				}
			}
			return nil
		})
		if ev := harness.Events(ctx, client, "default", "enc"); strings.Contains(ev, pass) {
			t.Errorf("%s: an Event holds the passphrase: %s", what, ev)
		}
	}
	stateFile := func() []byte {
		t.Helper()
		states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate"))
		if len(states) != 1 {
			t.Fatalf("state files %v, want one", states)
		}
		b, err := os.ReadFile(states[0])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	ccm := startCCM(t, cluster, cfg)
	logs = append(logs, ccm.LogPath)
	if err := createEncService(ctx, client, "enc", 80); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, client, "enc")
	st := stateFile()
	var doc map[string]any
	if json.Unmarshal(st, &doc) != nil || doc["encrypted_data"] == nil || bytes.Contains(st, []byte(vip)) || !bytes.Contains(st, []byte("key_provider.external.main")) {
		t.Errorf("the state is not ciphertext of the key server's key:\n%.300s", st)
	}
	// Its outputs were read from the state file by the CCM itself (its
	// key), not by a tofu output.
	if _, _, ops := engineApplies(t, cluster, ccm); ops["output"] != 0 {
		t.Errorf("the CCM ran tofu output (%s) to read an encrypted state's outputs", ops["output"])
	}
	ccm.Stop()
	clean("first CCM")

	// A restarted CCM reads the state and applies an edit.
	ccm = startCCM(t, cluster, cfg)
	logs = append(logs, ccm.LogPath)
	patch := []byte(`{"spec":{"ports":[{"name":"p80","port":80,"targetPort":8080,"protocol":"TCP"},{"name":"p81","port":81,"targetPort":8080,"protocol":"TCP"}]}}`)
	if _, err := client.CoreV1().Services("default").Patch(ctx, "enc", "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	applied, err := harness.EventCount(ctx, client, "default", "enc", lbcontroller.ReasonApplied)
	if err != nil {
		t.Fatal(err)
	}
	// Until the apply ended (its Event), not until the state file changed:
	// tofu writes the state as resources change, before the apply ends,
	// and stopping the CCM then interrupts the apply.
	eventually(t, 2*time.Minute, "the restarted CCM applies port 81", func(ctx context.Context) error {
		if b := stateFile(); bytes.Equal(b, st) {
			return fmt.Errorf("state unchanged")
		}
		if n, err := harness.EventCount(ctx, client, "default", "enc", lbcontroller.ReasonApplied); err != nil || n <= applied {
			return fmt.Errorf("no new %s Event (%d before, %d now, %v)", lbcontroller.ReasonApplied, applied, n, err)
		}
		return nil
	})
	if ev := harness.Events(ctx, client, "default", "enc"); strings.Contains(ev, "Warning Terraform") || strings.Contains(ev, "Warning SyncLoadBalancerFailed") {
		t.Errorf("tfccm's Warnings before the wrong passphrase: %s", ev)
	}
	ccm.Stop()
	clean("restarted CCM")
	st = stateFile()

	// A wrong passphrase: a Warning naming the decryption, the state as it was.
	t.Setenv("TFCCM_E2E_PASSPHRASE", "wrong-passphrase-0123456789")
	ccm = startCCM(t, cluster, cfg)
	logs = append(logs, ccm.LogPath)
	patch = []byte(`{"spec":{"ports":[{"name":"p80","port":80,"targetPort":8080,"protocol":"TCP"}]}}`) // port 81 goes
	if _, err := client.CoreV1().Services("default").Patch(ctx, "enc", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, client, "enc", "Warning", "decryption failed")
	if !bytes.Equal(stateFile(), st) {
		t.Error("a CCM with the wrong passphrase changed the state")
	}
	if ev := harness.Events(ctx, client, "default", "enc"); strings.Contains(ev, "wrong-passphrase") {
		t.Errorf("an Event holds the wrong passphrase: %s", ev)
	}
	ccm.Stop()
	clean("wrong passphrase")
}

// TestEncryptionBurst (make bench; TFCCM_BENCH_ENCRYPTION=N Services, e.g.
// 50) creates N LoadBalancer Services at once through a CCM without
// encryption, then through one encrypting with key_provider
// "tfccm_pbkdf2", in the same run (in the order off, on, on, off), and
// fails when the bursts with encryption take more than
// TFCCM_BENCH_ENCRYPTION_MAX (default 1.2) times those without. With
// TFCCM_BENCH_ENCRYPTION_PBKDF2=1 it also runs OpenTofu's own pbkdf2 (a
// key derived in every tofu command: the cost docs/encryption.md states).
func TestEncryptionBurst(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_ENCRYPTION", "TFCCM_BENCH_ENCRYPTION=N runs the encryption burst (make bench)")
	maxRatio := harness.BenchRatio(t, "TFCCM_BENCH_ENCRYPTION_MAX", 1.2)
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	serveNodes(t, cloud, 30080)
	for _, name := range cloud.Nodes() {
		createNode(t, client, cloud, name)
	}
	t.Setenv("TFCCM_E2E_PASSPHRASE", randomPassphrase(t))
	round := 0
	burst := func(kind string) time.Duration {
		t.Helper()
		enc := ""
		if kind != "" {
			enc = encryptionBlock(kind)
		}
		cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings())+enc, fmt.Sprintf("parallelism = %d", burstParallelism))
		ccm := startCCM(t, cluster, cfg)
		round++
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("enc%d-%03d", round, i)
		}
		start := time.Now()
		forEach(t, names, 20, func(ctx context.Context, name string) error { return createEncService(ctx, client, name, 80) })
		waitAllIngress(t, client, names, 30*time.Minute)
		took := time.Since(start)
		_, failed, ops := engineApplies(t, cluster, ccm)
		if failed > 0 {
			t.Errorf("%s: %d applies failed", kind, failed)
		}
		if kind != "" {
			states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate"))
			for _, s := range states {
				if b, _ := os.ReadFile(s); !bytes.Contains(b, []byte("encrypted_data")) {
					t.Errorf("%s: %s is not encrypted", kind, s)
				}
			}
		}
		forEach(t, names, 20, func(ctx context.Context, name string) error {
			return client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{})
		})
		for _, name := range names {
			waitServiceDeleted(t, client, name, 10*time.Minute)
		}
		ccm.Stop()
		t.Logf("ENCRYPTION burst services=%d key_provider=%q to_ingress=%s tofu_per_workspace=%s (%s)", n, kind, took.Round(10*time.Millisecond),
			(sumOps(ops) / time.Duration(n)).Round(time.Millisecond), perWorkspace(ops, n))
		return took
	}
	// ABBA: the machine's drift (caches warming, other load) falls on
	// both sides alike.
	off := burst("")
	on := burst("tfccm_pbkdf2")
	on += burst("tfccm_pbkdf2")
	off += burst("")
	ratio := on.Seconds() / off.Seconds()
	t.Logf("ENCRYPTION services=%d off=%s tfccm_pbkdf2=%s ratio=%.2f (goal <= %.2f)", n, off.Round(10*time.Millisecond), on.Round(10*time.Millisecond), ratio, maxRatio)
	if os.Getenv("TFCCM_BENCH_ENCRYPTION_PBKDF2") != "" {
		slow := burst("pbkdf2")
		t.Logf("ENCRYPTION services=%d pbkdf2=%s ratio=%.2f (OpenTofu's key provider, a key derived in every tofu command)", n, slow.Round(10*time.Millisecond), 2*slow.Seconds()/off.Seconds())
	}
	if ratio > maxRatio {
		t.Errorf("a burst of %d Services with tfccm_pbkdf2 encryption took %.2fx one without (goal <= %.2f)", n, ratio, maxRatio)
	}
}
