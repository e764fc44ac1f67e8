package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// TestCCMLeaderElectionAndHealthz runs the CCM binary against a real control
// plane: it must take the leader Lease and answer /healthz and /metrics.
func TestCCMLeaderElectionAndHealthz(t *testing.T) {
	cluster := devcluster.ForTest(t)
	cfg, _ := writeCloudConfig(t, t.TempDir(), "")
	ccm := startCCM(t, cluster, cfg)
	client := cluster.Client()

	eventually(t, 60*time.Second, "leader Lease taken", func(ctx context.Context) error {
		if ccm.Exited() {
			return fmt.Errorf("CCM exited: %s", ccm.LogTail(20))
		}
		lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
	eventually(t, 30*time.Second, "/healthz ok", func(context.Context) error {
		code, body, err := ccm.Get("/healthz")
		if err != nil {
			return err
		}
		if code != 200 || strings.TrimSpace(body) != "ok" {
			return fmt.Errorf("/healthz: %d %q", code, body)
		}
		return nil
	})
	// /metrics is protected by delegated authorization: an anonymous
	// request is refused rather than served.
	code, _, err := ccm.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if code != 401 && code != 403 {
		t.Errorf("anonymous /metrics: got %d, want 401/403", code)
	}
	// An authorized client (the admin certificate, via delegated authn/z)
	// gets the metrics, including the leader-election gauge. The client CA
	// comes from kube-system/extension-apiserver-authentication, loaded
	// asynchronously: until then the certificate is not checked and the
	// request is anonymous (403).
	cert, key := cluster.AdminCert()
	eventually(t, 30*time.Second, "authorized /metrics", func(context.Context) error {
		code, body, err := ccm.Get("/metrics", cert, key)
		if err != nil {
			return err
		}
		if code != 200 || !strings.Contains(body, "leader_election_master_status") {
			return fmt.Errorf("%d, leader_election_master_status present: %v", code, strings.Contains(body, "leader_election_master_status"))
		}
		return nil
	})
}

// TestCCMBrokenConfigExits checks that a mistake in the cloud config stops
// the binary with a non-zero exit and a message naming file:line and the field.
func TestCCMBrokenConfigExits(t *testing.T) {
	cluster := devcluster.ForTest(t)
	cases := []struct {
		name, config, want string
	}{
		{"unknown field", "cluster_name = \"e2e\"\nbogus_field = 1\n", `cloud.hcl:2,1-12: Unsupported argument; An argument named "bogus_field" is not expected here.`},
		{"wrong type", "cluster_name = \"e2e\"\nterraform {\n  parallelism = \"many\"\n}\n", "cloud.hcl:3,18-22: Unsuitable value type"},
		{"invalid value", "cluster_name = \"E2E_bad\"\n", "cloud.hcl:1,16-25: Invalid cluster_name"},
		{"syntax error", "cluster_name = \"e2e\n", "cloud.hcl:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "cloud.hcl", tc.config)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, ccmBinary(t), append(harness.Flags(cluster.Kubeconfig(), cfg),
				"--leader-elect=false", "--secure-port=0", "--cert-dir="+t.TempDir())...)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("CCM did not exit on a broken config:\n%s", out)
			}
			if err == nil {
				t.Fatalf("CCM exited 0 on a broken config:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not name the problem %q:\n%s", tc.want, out)
			}
		})
	}
}
