package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tfccm/tfccm/deploy/gitops"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// editSleepModule is a load balancer template over the local set whose
// apply takes %d seconds for a new load balancer and again for every change
// of the Service's ports (the resource is replaced), and that, like the
// local set, refuses any port but TCP.
const editSleepModule = `variable "load_balancer_name" {
  type = string
}

variable "service" {
  type = any

  validation {
    condition     = alltrue([for p in var.service.ports : p.protocol == "TCP"])
    error_message = "This load balancer supports only TCP ports; unsupported: ${join(", ", [for p in var.service.ports : "port ${p.port}/${p.protocol}" if p.protocol != "TCP"])}."
  }
}

resource "terraform_data" "lb" {
  triggers_replace = [for p in var.service.ports : "${p.port}/${p.protocol}"]
  provisioner "local-exec" {
    command = "sleep %d"
  }
}

output "ingress" {
  value = [{ ip = "192.0.2.10", hostname = null, ip_mode = "VIP" }]
}
`

// liveHealth is what the shipped Argo CD and Flux health checks say of a
// Service as the apiserver has it now.
type liveHealth struct {
	argo, message, flux string
	svc                 *corev1.Service
}

func (h liveHealth) String() string {
	return fmt.Sprintf("Argo CD %s %q, Flux %s, conditions %+v", h.argo, h.message, h.flux, h.svc.Status.Conditions)
}

// healthOf evaluates deploy/gitops's health checks on the Service name.
func healthOf(ctx context.Context, client kubernetes.Interface, flux *gitops.FluxCheck, name string) (liveHealth, error) {
	svc, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return liveHealth{}, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		return liveHealth{}, err
	}
	obj["apiVersion"], obj["kind"] = "v1", "Service"
	h := liveHealth{svc: svc}
	if h.argo, h.message, err = gitops.ArgoCDHealth(obj); err != nil {
		return h, err
	}
	if h.flux, err = flux.Status(obj); err != nil {
		return h, err
	}
	return h, nil
}

// waitHealth waits until the health checks say argo and flux of the
// Service name and returns that health.
func waitHealth(t *testing.T, client kubernetes.Interface, flux *gitops.FluxCheck, name, argo, fluxStatus string, timeout time.Duration) liveHealth {
	t.Helper()
	var last liveHealth
	eventually(t, timeout, fmt.Sprintf("%s: Argo CD %s, Flux %s", name, argo, fluxStatus), func(ctx context.Context) error {
		h, err := healthOf(ctx, client, flux, name)
		if err != nil {
			return err
		}
		last = h
		if h.argo != argo || h.flux != fluxStatus {
			return fmt.Errorf("%v", h)
		}
		return nil
	})
	return last
}

// TestGitOpsHealthOfLiveServices: the Argo CD and Flux health checks of
// deploy/gitops, evaluated on Services a running CCM wrote (the real
// apiserver, the CCM, tofu, a template over the local set whose applies
// take 10 s): an applied Service is Healthy/Current; an edit is
// Progressing/InProgress while its apply is in flight (Programmed=False
// Applying, the old address kept) and Healthy/Current once applied; a
// Service the template refuses and an edit that does not render are
// Degraded/Failed, naming what was refused; the refused Service gets its
// address once a template change accepts it.
func TestGitOpsHealthOfLiveServices(t *testing.T) {
	const sleep = 10 * time.Second
	flux, err := gitops.NewFluxCheck()
	if err != nil {
		t.Fatal(err)
	}
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	module := fmt.Sprintf(editSleepModule, int(sleep.Seconds()))
	if err := os.WriteFile(filepath.Join(override, "loadbalancer", "main.tf"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("override_dir = %q\n", override), "parallelism = 4")
	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"10.250.0.2"}})
	startCCM(t, cluster, cfg)

	createLBService(t, client, "web", corev1.ProtocolTCP)
	createLBService(t, client, "udp", corev1.ProtocolUDP)
	h := waitHealth(t, client, flux, "web", "Healthy", "Current", 2*time.Minute)
	if len(h.svc.Status.LoadBalancer.Ingress) == 0 {
		t.Errorf("web Healthy without an address: %v", h)
	}
	h = waitHealth(t, client, flux, "udp", "Degraded", "Failed", time.Minute)
	if !strings.Contains(h.message, "port 53/UDP") {
		t.Errorf("udp: message %q, want the refused port", h.message)
	}

	t.Run("an edit in flight is Progressing, then Healthy", func(t *testing.T) {
		editService(t, client, "web", func(svc *corev1.Service) {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "q", Port: 443, Protocol: corev1.ProtocolTCP})
		})
		start := time.Now()
		h := waitHealth(t, client, flux, "web", "Progressing", "InProgress", sleep)
		if _, c := conditionOf(t, client, "web", "tfccm.io/Programmed"); c == nil || c.Reason != "Applying" {
			t.Errorf("Progressing on %+v, want Programmed=False Applying", c)
		}
		if len(h.svc.Status.LoadBalancer.Ingress) == 0 {
			t.Errorf("the old address is gone while the edit applies: %v", h)
		}
		waitHealth(t, client, flux, "web", "Healthy", "Current", 2*time.Minute)
		if took := time.Since(start); took < sleep/2 {
			t.Errorf("Healthy again %s after the edit, before its %s apply could end", took, sleep)
		}
		t.Logf("the edit was Progressing for %s", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("an edit that does not render is Degraded", func(t *testing.T) {
		editService(t, client, "web", func(svc *corev1.Service) {
			svc.Annotations = map[string]string{"tfccm.io/vars": "{"}
		})
		h := waitHealth(t, client, flux, "web", "Degraded", "Failed", time.Minute)
		if !strings.Contains(h.message, "tfccm.io/vars") || len(h.svc.Status.LoadBalancer.Ingress) == 0 {
			t.Errorf("refused edit: %v; want the annotation named and the old address kept", h)
		}
		editService(t, client, "web", func(svc *corev1.Service) { svc.Annotations = nil })
		waitHealth(t, client, flux, "web", "Healthy", "Current", time.Minute)
	})

	// The refused Service was answered the service controller's no-op
	// (one Warning); a template change that accepts it is applied by
	// tfccm, which then writes the address the controller would have.
	t.Run("a template change that accepts a refused Service gives it its address", func(t *testing.T) {
		accepting := strings.Replace(module, `p.protocol == "TCP"`, `p.protocol == "TCP" || p.protocol == "UDP"`, 1)
		if err := os.WriteFile(filepath.Join(override, "loadbalancer", "main.tf"), []byte(accepting), 0o644); err != nil {
			t.Fatal(err)
		}
		h := waitHealth(t, client, flux, "udp", "Healthy", "Current", 2*time.Minute)
		if _, err := harness.WaitForIngress(context.Background(), client, "default", "udp", time.Minute); err != nil {
			t.Errorf("udp accepted and applied, but: %v (%v)", err, h)
		}
	})
}

// editService changes the Service name with change, retrying on conflicts.
func editService(t *testing.T, client kubernetes.Interface, name string, change func(*corev1.Service)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(svc)
		_, err = client.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
