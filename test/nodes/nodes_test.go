package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// needNodes skips unless the real-node parts are wanted (make test-nodes
// sets TFCCM_NODES=1 after make tools-nodes built them).
func needNodes(t *testing.T) {
	t.Helper()
	if os.Getenv("TFCCM_NODES") == "" {
		t.Skip("real nodes: run `make test-nodes` (builds their parts with make tools-nodes)")
	}
}

// TestRealNodesWithTfccm brings up two real nodes and tfccm as their CCM
// (local template set: instances from the cloud's state, routes as kernel
// routes in the cloud's router) and shows: tfccm initializes the nodes
// (providerID, zone, no uninitialized taint), a pod runs on each node, and
// pods reach each other across nodes, unmasqueraded, through the pod-range
// routes tfccm's routes workspace applied.
func TestRealNodesWithTfccm(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	c := ForTest(t, Options{Nodes: 2, HostRoute: true})
	client := c.Client()
	ccm := startTfccm(t, c)

	nodes := checkNodesInitialized(t, c, func() string { return ccm.LogTail(40) })
	waitNodesReady(t, client)

	// One netexec server pod per node, placed by the scheduler.
	pods := map[string]*corev1.Pod{}
	for _, n := range nodes {
		pods[n.Name] = runPod(t, client, "netexec-"+n.Name, n.Name)
	}
	a, b := pods["node-a"], pods["node-b"]
	if a.Status.PodIP == b.Status.PodIP || a.Status.PodIP == "" {
		t.Fatalf("pod IPs %q and %q", a.Status.PodIP, b.Status.PodIP)
	}

	// The apiserver reaches the kubelets (kubectl logs) through the host's
	// route to the node network.
	for _, p := range []*corev1.Pod{a, b} {
		// A just-started container's first line can take a moment to reach its log.
		err := harness.Eventually(ctx, 20*time.Second, "logs of "+p.Name+" through its kubelet", func(ctx context.Context) error {
			logs, err := client.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil || !strings.Contains(string(logs), "8080") {
				return fmt.Errorf("logs %q, %v", logs, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("on %s: %v", p.Spec.NodeName, err)
		}
	}

	// The router's pod-range routes come from tfccm's routes workspace.
	waitPodRoutes(t, c, nodes)

	// From inside pod A to pod B (another node) and back: the reply names
	// the pod that answered, and the client address it saw is the calling
	// pod's own (no masquerade on the way).
	for _, pair := range [][2]*corev1.Pod{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		netns, err := c.PodNetns(from)
		if err != nil {
			t.Fatal(err)
		}
		var host, clientIP string
		err = harness.Eventually(ctx, 30*time.Second, "pod to pod across nodes", func(ctx context.Context) error {
			var err error
			if host, err = HTTPGetFrom(ctx, netns, "http://"+to.Status.PodIP+":8080/hostname"); err != nil {
				return err
			}
			clientIP, err = HTTPGetFrom(ctx, netns, "http://"+to.Status.PodIP+":8080/clientip")
			return err
		})
		if err != nil {
			t.Fatalf("%s -> %s: %v", from.Name, to.Name, err)
		}
		if host != to.Name {
			t.Errorf("%s -> %s: answered by %q", from.Name, to.Name, host)
		}
		if ip, _, _ := strings.Cut(clientIP, ":"); ip != from.Status.PodIP {
			t.Errorf("%s -> %s: client address seen %q, want the pod's own %s", from.Name, to.Name, clientIP, from.Status.PodIP)
		}
	}
}

// checkNodesInitialized waits until the CCM has initialized both nodes and
// checks what it set from the cloud's infra state: providerID, zone label,
// InternalIP. ccmLog gives the CCM's log for a failure message.
func checkNodesInitialized(t *testing.T, c *Cluster, ccmLog func() string) []corev1.Node {
	t.Helper()
	ctx := context.Background()
	client := c.Client()
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes registered, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if want := "terraform://local/" + n.Name; n.Spec.ProviderID != want {
			t.Errorf("node %s: providerID %q, want %q", n.Name, n.Spec.ProviderID, want)
		}
		if z := n.Labels[corev1.LabelTopologyZone]; z != "local-a" {
			t.Errorf("node %s: zone label %q, want local-a", n.Name, z)
		}
		if want := c.Cloud.Node(n.Name).Address; !hasAddress(n, want) {
			t.Errorf("node %s: addresses %v, want InternalIP %s", n.Name, n.Status.Addresses, want)
		}
	}
	return nodes.Items
}

// waitPodRoutes waits until the cloud's router (the nodes' gateway) routes
// every node's pod CIDR to that node.
func waitPodRoutes(t *testing.T, c *Cluster, nodes []corev1.Node) {
	t.Helper()
	err := harness.Eventually(context.Background(), time.Minute, "pod-range routes in the cloud's router", func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "ip", "-n", c.Cloud.CloudNetns, "-4", "route", "show").CombinedOutput()
		if err != nil {
			return fmt.Errorf("router routes: %v: %s", err, out)
		}
		for _, n := range nodes {
			want := fmt.Sprintf("%s via %s", n.Spec.PodCIDR, c.Cloud.Node(n.Name).Address)
			if n.Spec.PodCIDR == "" || !strings.Contains(string(out), want) {
				return fmt.Errorf("no route %q:\n%s", want, out)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func hasAddress(n corev1.Node, ip string) bool {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address == ip {
			return true
		}
	}
	return false
}

// startTfccm runs the CCM (built from this tree) with the local set against
// the cluster: instances from the cloud's infra state, routes for the pod
// ranges, load balancers in the cloud.
func startTfccm(t *testing.T, c *Cluster) *harness.CCM {
	t.Helper()
	return startTfccmWith(t, c, "")
}

// startTfccmWith is startTfccm with extra HCL in the cloud config.
func startTfccmWith(t *testing.T, c *Cluster, extra string) *harness.CCM {
	t.Helper()
	return startTfccmEdit(t, c, func(cfg *harness.CloudConfig) { cfg.Blocks += extra })
}

// startTfccmEdit is startTfccm with the cloud config changed by edit.
func startTfccmEdit(t *testing.T, c *Cluster, edit func(*harness.CloudConfig)) *harness.CCM {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := ccmBinary(t)
	cfg := CCMConfig(c, "nodes", filepath.Join(dir, "work"), repo.Tofu(t), repo.LBHost(t), "")
	edit(&cfg)
	path := filepath.Join(dir, "cloud.hcl")
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Binary: bin, Kubeconfig: c.Kubeconfig(), CloudConfig: path, Dir: dir,
		Flags: CCMFlags,
		Env:   []string{"PATH=" + filepath.Join(root, "bin") + ":" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ccm.Stop()
		if t.Failed() {
			t.Logf("CCM log, last 40 lines:\n%s", ccm.LogTail(40))
		}
	})
	return ccm
}

// ccmBins are the CCM binaries built for each running test: a second
// start within a test (a restart, the migration's) starts at once instead
// of after a go build, which TestMigrateFromMetalLB would count in every
// Service's interruption.
var ccmBins sync.Map // *testing.T -> path

func ccmBinary(t *testing.T) string {
	t.Helper()
	if b, ok := ccmBins.Load(t); ok {
		return b.(string)
	}
	b := repo.Build(t, "./cmd/terraform-cloud-controller-manager")
	ccmBins.Store(t, b)
	t.Cleanup(func() { ccmBins.Delete(t) })
	return b
}

func waitNodesReady(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	err := harness.Eventually(context.Background(), 2*time.Minute, "nodes Ready", func(ctx context.Context) error {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
					return fmt.Errorf("node %s not Ready: %s", n.Name, cond.Message)
				}
				if cond.Type == corev1.NodeNetworkUnavailable && cond.Status != corev1.ConditionFalse {
					return fmt.Errorf("node %s: network unavailable: %s", n.Name, cond.Message)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runPod runs agnhost netexec (HTTP on 8080) on node and waits until it runs.
func runPod(t *testing.T, client kubernetes.Interface, name, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "netexec"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers: []corev1.Container{{
				Name: "netexec", Image: AgnhostImage, Args: []string{"netexec", "--http-port=8080", "--udp-port=8081"},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8081, Protocol: corev1.ProtocolUDP}},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	err := harness.Eventually(ctx, 2*time.Minute, "pod "+name+" running", func(ctx context.Context) error {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			return fmt.Errorf("phase %s, conditions %v, containers %v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		got = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != node {
		t.Fatalf("pod %s scheduled on %s, want %s", name, got.Spec.NodeName, node)
	}
	return got
}

// TestRoutedLoadBalancerOnRealNodes: a LoadBalancer Service of the local
// set's `routed` variant with externalTrafficPolicy: Local and no node
// ports, served by one pod. tfccm claims a VIP, the cloud's router routes
// it only to the node whose kube-proxy reports a local endpoint (the
// Service's healthCheckNodePort), kube-proxy on that node serves it, and
// the pod sees the caller's own address.
func TestRoutedLoadBalancerOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	startTfccm(t, c)
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitNodesReady(t, client)
	pod := runPod(t, client, "web", "node-b")

	noNodePorts := false
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"tfccm.io/template": "routed"}},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			Selector:                      map[string]string{"app": "netexec"},
			ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicyLocal,
			AllocateLoadBalancerNodePorts: &noNodePorts,
			Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip, err := harness.WaitForIngress(ctx, client, "default", "web", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ingress ipMode %v, want VIP", m)
	}
	if got.Spec.Ports[0].NodePort != 0 {
		t.Errorf("node port %d allocated", got.Spec.Ports[0].NodePort)
	}
	var host, clientIP string
	err = harness.Eventually(ctx, time.Minute, "GET the VIP from the host", func(ctx context.Context) error {
		var err error
		if host, err = httpGet(ctx, "http://"+vip+"/hostname"); err != nil {
			return err
		}
		clientIP, err = httpGet(ctx, "http://"+vip+"/clientip")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if host != pod.Name {
		t.Errorf("answered by %q, want %s", host, pod.Name)
	}
	if ip, _, _ := strings.Cut(clientIP, ":"); ip != c.Cloud.HostAddress {
		t.Errorf("the pod saw client %q, want the host's own address %s", clientIP, c.Cloud.HostAddress)
	}
	out, err := exec.Command("ip", "-n", c.Cloud.CloudNetns, "-4", "route", "show", vip+"/32").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if want := "via " + c.Cloud.Node("node-b").Address; !strings.Contains(string(out), want) || strings.Contains(string(out), c.Cloud.Node("node-a").Address) {
		t.Errorf("route to the VIP %q, want only %s (node-a has no endpoint)", strings.TrimSpace(string(out)), want)
	}

	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitServiceDeleted(ctx, client, "default", "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.Eventually(ctx, 10*time.Second, "VIP route removed", func(context.Context) error {
		out, err := exec.Command("ip", "-n", c.Cloud.CloudNetns, "-4", "route", "show", vip+"/32").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			return fmt.Errorf("route %q (%v)", out, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// httpGet fetches url from the host.
func httpGet(ctx context.Context, url string) (string, error) {
	return HTTPGetFrom(ctx, "/proc/self/ns/net", url)
}

// TestDemoOnRealNodes runs `make demo NODES=2`'s program once and checks
// what a user sees: Ready nodes, a pod on each, both load balancers with
// an EXTERNAL-IP, the routed VIP routed to both nodes, replies from the
// pods through both VIPs, the routed one seeing the host's own address.
func TestDemoOnRealNodes(t *testing.T) {
	needNodes(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	testSeq++
	prefix := fmt.Sprintf("t%05x%x", os.Getpid()&0xfffff, 8+testSeq%8)
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/demo", "--nodes", "2", "--once", "--dir", t.TempDir(), "--prefix", prefix)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^node-a\s+Ready\s`),
		regexp.MustCompile(`(?m)^node-b\s+Ready\s`),
		regexp.MustCompile(`(?m)^hello-\S+\s+1/1\s+Running\s.*\snode-a\s`),
		regexp.MustCompile(`(?m)^hello-\S+\s+1/1\s+Running\s.*\snode-b\s`),
		regexp.MustCompile(`(?m)^hello\s+LoadBalancer\s+\S+\s+10\.252\.\d+\.\d+\s`),
		regexp.MustCompile(`(?m)^hello-routed\s+LoadBalancer\s+\S+\s+10\.252\.\d+\.\d+\s`),
		regexp.MustCompile(`(?m)^10\.252\.\d+\.\d+ proto 77 \n\s+nexthop via 10\.250\.0\.11 .*\n\s+nexthop via 10\.250\.0\.12 `),
		regexp.MustCompile(`\(hello\)\n(hello-\S+)\n`),
		regexp.MustCompile(`\(hello-routed\)\n10\.251\.\d+\.1:\d+\n`),
	} {
		if !want.MatchString(text) {
			t.Errorf("demo output lacks %s:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "tearing down") {
		t.Errorf("demo did not tear down:\n%s", text)
	}
}
