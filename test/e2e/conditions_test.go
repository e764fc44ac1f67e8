package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// sleepModule is a load balancer template whose apply takes %d seconds and
// that, like the local set, refuses any port but TCP (its validation names
// the unsupported ports).
const sleepModule = `variable "load_balancer_name" {
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
  input = var.load_balancer_name
  provisioner "local-exec" {
    command = "sleep %d"
  }
}

output "ingress" {
  value = [{ ip = "192.0.2.10", hostname = null, ip_mode = "VIP" }]
}
`

// staticHealthModule is a health module (templates.HealthDir) reporting
// node-a healthy, LB host lb-a up, holding the IPv4 VIP and with its BGP
// session to peer tor up, whatever the load balancer
// (TestMonitoredMetricsAreExported: the gauges the alerts read).
const staticHealthModule = `output "backends" {
  value = [{ node = "node-a", healthy = true }]
}

output "hosts" {
  value = { lb-a = true }
}

output "vip_holders" {
  value = { IPv4 = ["lb-a"] }
}

output "bgp_sessions" {
  value = { lb-a = [{ peer = "tor", state = "Established" }] }
}
`

// slowCCM starts a control plane with one node and the CCM with an
// override whose apply sleeps for sleep, at parallelism 4.
func slowCCM(t *testing.T, sleep time.Duration, blocks ...string) (*devcluster.Cluster, *harness.CCM) {
	t.Helper()
	return sleepCCM(t, sleep, false, blocks...)
}

// staticAnnouncedHealthModule is staticHealthModule for an active-active
// variant: the holders are nodes announcing over BGP (the
// tfccm_load_balancer_vip_announcers gauge instead of vip_holders).
const staticAnnouncedHealthModule = staticHealthModule + `
output "vip_holder_kind" {
  value = "BGP node"
}
`

// sleepCCM is slowCCM whose override has a health module when health,
// and then also a variant "ecmp" (tfccm.io/template: ecmp) whose health
// module reports its VIP announced over BGP.
func sleepCCM(t *testing.T, sleep time.Duration, health bool, blocks ...string) (*devcluster.Cluster, *harness.CCM) {
	t.Helper()
	cluster := devcluster.ForTest(t)
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	module := fmt.Sprintf(sleepModule, int(sleep.Seconds()))
	if err := os.WriteFile(filepath.Join(override, "loadbalancer", "main.tf"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	if health {
		for dir, files := range map[string]map[string]string{
			"loadbalancer":      {"health/main.tf": staticHealthModule},
			"loadbalancer.ecmp": {"main.tf": module, "health/main.tf": staticAnnouncedHealthModule},
		} {
			for name, content := range files {
				p := filepath.Join(override, dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("override_dir = %q\n", override)+strings.Join(blocks, ""), "parallelism = 4")
	// A node: without one the service controller warns UnAvailableLoadBalancer.
	registerNode(t, cluster.Client(), harness.Node{Name: "node-a", InternalIPs: []string{"10.250.0.2"}})
	return cluster, startCCM(t, cluster, cfg)
}

// portService is a LoadBalancer Service with one port 53 of protocol.
func portService(name string, protocol corev1.Protocol) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "p", Port: 53, Protocol: protocol}}}}
}

func createLBService(t *testing.T, client kubernetes.Interface, name string, protocol corev1.Protocol) {
	t.Helper()
	if _, err := client.CoreV1().Services("default").Create(context.Background(), portService(name, protocol), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubectlWait runs `kubectl wait --for=condition=COND svc/NAME`.
func kubectlWait(t *testing.T, cluster *devcluster.Cluster, name, cond string, timeout time.Duration) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "bin", "kubectl"), "--kubeconfig", cluster.Kubeconfig(), "-n", "default",
		"wait", "--for=condition="+cond, "svc/"+name, "--timeout="+timeout.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl wait --for=condition=%s svc/%s: %v\n%s", cond, name, err, out)
	}
}

// warnings lists the Warning Events in namespace default.
func warnings(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if ipRepair(e) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message))
	}
	return out
}

// ipRepair reports whether e is the apiserver's ClusterIP repair loop
// warning about a Service's address, not tfccm's: it may warn at startup
// about the kubernetes Service, and about a Service whose address it
// found between allocation and the Service's write (a CI run met this
// on a test's own Service).
func ipRepair(e corev1.Event) bool {
	return e.Reason == "ClusterIPNotAllocated"
}

// conditionOf returns the Service's condition of type typ.
func conditionOf(t *testing.T, client kubernetes.Interface, name, typ string) (*corev1.Service, *metav1.Condition) {
	t.Helper()
	svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range svc.Status.Conditions {
		if svc.Status.Conditions[i].Type == typ {
			return svc, &svc.Status.Conditions[i]
		}
	}
	return svc, nil
}

// TestSlowApplyIsNoWarning: an apply of 40 s (four times ensure_wait's old
// default) gives no Warning Event: a Normal TerraformApplying with the plan
// summary when it starts, TerraformApplied when it ends, Programmed=False
// Applying meanwhile and `kubectl wait --for=condition=tfccm.io/Programmed`
// returning once it is applied, with the Service's generation observed. A
// UDP Service the template refuses is Accepted=False naming the port, with
// one Warning (tfccm's).
func TestSlowApplyIsNoWarning(t *testing.T) {
	cluster, _ := slowCCM(t, 40*time.Second)
	client := cluster.Client()
	start := time.Now()
	createLBService(t, client, "slow", corev1.ProtocolTCP)
	eventually(t, time.Minute, "Programmed=False Applying while the apply runs", func(context.Context) error {
		if _, c := conditionOf(t, client, "slow", "tfccm.io/Programmed"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Applying" {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	kubectlWait(t, cluster, "slow", "tfccm.io/Programmed", 3*time.Minute)
	if took := time.Since(start); took < 40*time.Second {
		t.Errorf("Programmed after %s, before the 40 s apply could end", took)
	}
	svc, c := conditionOf(t, client, "slow", "tfccm.io/Programmed")
	if c.Reason != "Applied" || c.ObservedGeneration != svc.Generation {
		t.Errorf("Programmed %+v, generation %d", c, svc.Generation)
	}
	if _, a := conditionOf(t, client, "slow", "tfccm.io/Accepted"); a == nil || a.Status != metav1.ConditionTrue {
		t.Errorf("Accepted %+v", a)
	}
	waitVIP(t, client, "slow")
	ev := harness.Events(context.Background(), client, "default", "slow")
	for _, want := range []string{"Normal TerraformApplying: applying the plan: 1 to add, 0 to change, 0 to destroy", "Normal TerraformApplied"} {
		if !strings.Contains(ev, want) {
			t.Errorf("no %q in the Events: %s", want, ev)
		}
	}

	createLBService(t, client, "udp", corev1.ProtocolUDP)
	kubectlWait(t, cluster, "udp", "tfccm.io/Accepted=false", time.Minute)
	if _, a := conditionOf(t, client, "udp", "tfccm.io/Accepted"); a.Reason != "InvalidInput" || !strings.Contains(a.Message, "port 53/UDP") {
		t.Errorf("Accepted %+v; want InvalidInput naming port 53/UDP", a)
	}
	// The refused Service's one Warning, tfccm's naming the port (the
	// service controller adds none: refusedOnce); the slow one has none.
	// Its result Event may come a moment after the condition.
	eventually(t, 30*time.Second, "the udp Service's TerraformInvalidInput", func(context.Context) error {
		if w := warnings(t, client); len(w) != 1 || !strings.Contains(w[0], "udp TerraformInvalidInput") {
			return fmt.Errorf("Warnings: want the udp Service's one, got %d:\n%s", len(w), strings.Join(w, "\n"))
		}
		return nil
	})
	time.Sleep(5 * time.Second) // a second Warning (the service controller's) would come at once
	if w := warnings(t, client); len(w) != 1 {
		t.Errorf("Warnings: want the udp Service's one, got %d:\n%s", len(w), strings.Join(w, "\n"))
	}
}

// TestBurstNoWarnings: 40 Services at once against 4 engine workers and a
// 3 s apply (the last ones wait ~30 s, past ensure_wait's old default) give
// no Warning Event; every one ends Programmed.
func TestBurstNoWarnings(t *testing.T) {
	cluster, _ := slowCCM(t, 3*time.Second)
	client := cluster.Client()
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("burst-%02d", i)
	}
	forEach(t, names, 20, func(ctx context.Context, name string) error {
		_, err := client.CoreV1().Services("default").Create(ctx, portService(name, corev1.ProtocolTCP), metav1.CreateOptions{})
		return err
	})
	waitAllIngress(t, client, names, 5*time.Minute)
	for _, n := range names {
		if _, c := conditionOf(t, client, n, "tfccm.io/Programmed"); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s: Programmed %+v", n, c)
		}
	}
	if w := warnings(t, client); len(w) != 0 {
		t.Errorf("%d Warning Events, want 0:\n%s", len(w), strings.Join(w, "\n"))
	}
}
