package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/lbhost/mirror"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// lbhostModule is a load balancer module that starts the lbhost provider
// (configured, never called) and records the Service's first port.
const lbhostModule = `terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

provider "lbhost" {
  netns = "tfccm-none"
}

variable "service" {
  type = object({ ports = list(object({ port = number })) })
}

resource "terraform_data" "port" {
  input = var.service.ports[0].port
}

output "ingress" {
  value = [{ ip = "203.0.113.82", hostname = null, ip_mode = "VIP" }]
}
`

// TestProviderChecksumMismatchOnService: the CCM runs a Service's
// workspace with the lbhost provider from a mirror and the lock file
// written from it (terraform.provider_lock_file). One byte changed in the
// mirrored provider: the Service's next update is refused, visibly — a
// Warning Event TerraformProviderChecksumMismatch naming the provider,
// Programmed False with reason ProviderChecksumMismatch, the metric — and
// the workspace's lock file is still there; the byte restored, the retry
// applies the update.
func TestProviderChecksumMismatchOnService(t *testing.T) {
	built, err := os.ReadFile(mirror.BinaryPath(filepath.Join(repoRoot(t), "bin", "providers"), mirror.Source, mirror.Version))
	if err != nil {
		t.Fatalf("the lbhost provider (make build): %v", err)
	}
	base := t.TempDir()
	mirrorDir := filepath.Join(base, "providers")
	plugin := mirror.BinaryPath(mirrorDir, mirror.Source, mirror.Version)
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, built, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(base, "providers.lock.hcl")
	if err := providerlock.WriteMirrorLock(mirrorDir, lock); err != nil {
		t.Fatal(err)
	}
	cli := writeFile(t, base, "lbhost.tfrc", mirror.CLIConfig(mirrorDir))
	override := filepath.Join(base, "templates")
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(override, "loadbalancer"), "main.tf", lbhostModule)

	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`template_set = "local"
override_dir = %q
`, override), fmt.Sprintf("cli_config_file = %q", cli), fmt.Sprintf("provider_lock_file = %q", lock))
	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"192.0.2.10"}})
	ccm := startCCM(t, cluster, cfg, "--leader-elect=false")
	createHTTPService(t, client, "web", 80)
	if vip := waitVIP(t, client, "web"); vip != "203.0.113.82" {
		t.Fatalf("VIP %s", vip)
	}
	locks, _ := filepath.Glob(filepath.Join(workDir, "lb-*", ".terraform.lock.hcl"))
	if len(locks) != 1 {
		t.Fatalf("workspace lock files %v, want one", locks)
	}
	wsLock := locks[0]

	flip := func() {
		t.Helper()
		b, err := os.ReadFile(plugin)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(plugin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	flip()
	setPort(t, client, "web", 81)
	const provider = "registry.opentofu.org/tfccm/lbhost " + mirror.Version
	waitEvent(t, client, "web", "TerraformProviderChecksumMismatch", "refused provider "+provider)
	eventually(t, time.Minute, "Programmed False for the provider", func(context.Context) error {
		if _, c := conditionOf(t, client, "web", "tfccm.io/Programmed"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ProviderChecksumMismatch" {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	m := regexp.MustCompile(`(?m)^tfccm_workspace_provider_checksum_mismatches_total\{provider="` + regexp.QuoteMeta(mirror.Source) + `"\} (\d+)`).FindStringSubmatch(ccmMetrics(t, cluster, ccm))
	if m == nil {
		t.Fatal("no tfccm_workspace_provider_checksum_mismatches_total for the lbhost provider on /metrics")
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Fatalf("tfccm_workspace_provider_checksum_mismatches_total = %d", n)
	}
	if _, err := os.Stat(wsLock); err != nil {
		t.Fatalf("the workspace's lock file after the refusal: %v", err)
	}

	flip() // restored: the retry applies the update
	eventually(t, 2*time.Minute, "Programmed again", func(context.Context) error {
		if _, c := conditionOf(t, client, "web", "tfccm.io/Programmed"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}
