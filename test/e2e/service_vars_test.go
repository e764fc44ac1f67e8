package e2e

import (
	"context"
	"fmt"
	"net/netip"
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

// secretMarker is the content of a file the admin's settings or a tenant's
// tfccm.io/vars name: it must appear in no Event and no line of the CCM's
// log.
const secretMarker = "root:$6$TFCCM-SECRET-MARKER-44:19000:0:99999:7:::"

// adminVars is a tenant's tfccm.io/vars reaching for the admin's settings:
// the VIP pool (a VIP on the nodes' own network), the LB hosts, a host's
// config directory and keepalived's pid file (a file of the tenant's
// choosing, read as root).
func adminVars(pidFile string) string {
	return fmt.Sprintf(`{"vip_pool": "10.250.0.0/24", "hosts": {"evil": {"address": "10.250.0.1", "host_key": "ssh-ed25519 AAAA"}}, "config_dir": "/etc", "keepalived_pid_file": %q}`, pidFile)
}

// refusedVars is the Event and condition text of adminVars with the
// default load_balancer.service_vars (none).
const refusedVars = `annotation tfccm.io/vars: keys "config_dir", "hosts", "keepalived_pid_file", "vip_pool" are not a setting a Service may set (load_balancer.service_vars of the cloud config allows none); nothing is applied`

// createServiceWithVars creates a LoadBalancer Service on port 80 /
// nodePort with tfccm.io/vars set to vars ("" for none).
func createServiceWithVars(t *testing.T, client kubernetes.Interface, name string, nodePort int32, vars string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if vars != "" {
		svc.Annotations["tfccm.io/vars"] = vars
	}
	if _, err := client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// refused waits until the Service has the Warning Event and the
// tfccm.io/Accepted=False condition with want.
func refused(t *testing.T, client kubernetes.Interface, name, want string) {
	t.Helper()
	eventually(t, time.Minute, name+": Warning Event and Accepted=False naming the keys", func(ctx context.Context) error {
		if ev := harness.Events(ctx, client, "default", name); !strings.Contains(ev, "Warning "+lbcontroller.ReasonRenderFailed+": "+want) {
			return fmt.Errorf("events: %s", ev)
		}
		if _, c := conditionOf(t, client, name, lbcontroller.ConditionAccepted); c == nil || c.Status != metav1.ConditionFalse ||
			c.Reason != lbcontroller.CondReasonInvalidInput || !strings.Contains(c.Message, want) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// refusedNoAddress fails if the refused Service got an address.
func refusedNoAddress(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if svc, _ := conditionOf(t, client, name, lbcontroller.ConditionAccepted); len(svc.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("%s was refused but got %v", name, svc.Status.LoadBalancer.Ingress)
	}
}

// noMarker fails if any Event of any namespace or any line of the CCM's
// log holds the planted file's content.
func noMarker(t *testing.T, client kubernetes.Interface, ccmLog string) {
	t.Helper()
	evs, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "TFCCM-SECRET-MARKER") {
			t.Errorf("Event %s/%s %s carries the planted file's content: %s", e.Namespace, e.Name, e.Reason, e.Message)
		}
	}
	for _, line := range strings.Split(ccmLog, "\n") {
		if strings.Contains(line, "TFCCM-SECRET-MARKER") {
			t.Errorf("the CCM log carries the planted file's content: %s", line)
		}
	}
	if !t.Failed() {
		t.Logf("%d Events and %d lines of CCM log hold no content of the planted file", len(evs.Items), strings.Count(ccmLog, "\n"))
	}
}

// plantSecret writes a root-only file holding secretMarker.
func plantSecret(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "shadow")
	if err := os.WriteFile(p, []byte(secretMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServiceVarsLocal: on the local set, with the real CCM and tofu, a
// Service whose tfccm.io/vars sets the admin's settings (vip_pool, hosts,
// config_dir, keepalived_pid_file) is refused: a Warning Event and
// Accepted=False name every key and the allow-list, no workspace is
// written and no address given. Without the annotation it gets a VIP from
// the admin's pool; set again on the running load balancer, it is refused
// and the load balancer keeps serving as last applied. No Event and no
// line of the CCM's log holds the file the tenant named.
func TestServiceVarsLocal(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	dir := t.TempDir()
	secret := plantSecret(t, dir)
	cfg, workDir := writeCloudConfig(t, dir, harness.Block("load_balancer", cloud.LBSettings()))
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	proc := startCCM(t, cluster, cfg)

	createServiceWithVars(t, client, "web", 30080, adminVars(secret))
	refused(t, client, "web", refusedVars)
	refusedNoAddress(t, client, "web")
	if ws, _ := filepath.Glob(filepath.Join(workDir, "lb-*")); len(ws) != 0 {
		t.Errorf("a refused Service has workspaces %v", ws)
	}

	updateService(t, client, func(s *corev1.Service) { delete(s.Annotations, "tfccm.io/vars") })
	vip := waitVIP(t, client, "web")
	if !netip.MustParsePrefix(cloud.VIPPool).Contains(netip.MustParseAddr(vip)) {
		t.Fatalf("VIP %s is not from the admin's pool %s", vip, cloud.VIPPool)
	}
	backendsAre(t, vip, 80, "node-a")
	eventually(t, time.Minute, "Accepted=True", func(context.Context) error {
		if _, c := conditionOf(t, client, "web", lbcontroller.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})

	lbDir := lbWorkspaceDir(t, workDir)
	before := settledTree(t, lbDir)
	updateService(t, client, func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["tfccm.io/vars"] = `{"vip_pool": "10.250.0.0/24"}`
	})
	refused(t, client, "web", `annotation tfccm.io/vars: key "vip_pool" is not a setting a Service may set (load_balancer.service_vars of the cloud config allows none)`)
	backendsAre(t, vip, 80, "node-a")
	if svc, _ := conditionOf(t, client, "web", lbcontroller.ConditionAccepted); len(svc.Status.LoadBalancer.Ingress) != 1 || svc.Status.LoadBalancer.Ingress[0].IP != vip {
		t.Errorf("ingress %v, want the last applied %s", svc.Status.LoadBalancer.Ingress, vip)
	}
	if after := readTree(t, lbDir); after != before {
		t.Errorf("the workspace changed after a refused tfccm.io/vars")
	}
	noMarker(t, client, proc.Log())
}

// TestServiceVarsBaremetal: on the baremetal set with two real LB hosts
// (sshd, HAProxy, keepalived each), a Service whose tfccm.io/vars sets the
// admin's settings is refused and nothing reaches the hosts. Then the
// admin points keepalived_pid_file at a root-only file (as only the admin
// can): the apply that reloads keepalived fails with an Event naming the
// file, and no Event of any namespace and no line of the CCM's log holds
// its content.
func TestServiceVarsBaremetal(t *testing.T) {
	b := newBaremetal(t, "")
	serveNodes(t, b.cloud, 30080, 30081)
	createNode(t, b.client, b.cloud, "node-a")
	b.startCCM(t)
	secret := plantSecret(t, b.dir)

	createServiceWithVars(t, b.client, "evil", 30080, adminVars(secret))
	refused(t, b.client, "evil", refusedVars)
	refusedNoAddress(t, b.client, "evil")
	if objs := b.objects(); len(objs) != 0 {
		t.Errorf("a refused Service left objects on the hosts: %v", objs)
	}

	lb := b.hosts.LBSettings()
	for _, h := range lb["hosts"].(map[string]any) {
		h.(map[string]any)["keepalived_pid_file"] = secret
	}
	b.reconfigure(t, t, lb)
	createServiceWithVars(t, b.client, "web", 30081, "")
	eventually(t, 3*time.Minute, "web: the keepalived reload fails naming the pid file, not its content", func(ctx context.Context) error {
		if ev := harness.Events(ctx, b.client, "default", "web"); !strings.Contains(ev, "does not hold a process id (its content is not shown)") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	noMarker(t, b.client, b.ccm.Log())
}
