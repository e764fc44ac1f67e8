package nodes

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/l2seg"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestMigrateFromMetalLBNodes walks the prepare-then-take-over migration
// of docs/migrate-from-metallb.md into node mode (the nodes set) beside
// MetalLB's real L2 speakers. Two namespace nodes of one L2 segment
// (l2seg, as TestNodeModeFailover: a real kube-apiserver, Ready Nodes,
// tfccm's node agents, each node taking its VIPs' packets to its own
// server as kube-proxy would) run MetalLB's speaker each (bin/metallb-
// speaker, memberlist off), MetalLB's controller runs on the host; they
// give four class-less Services addresses (picked, chosen, two sharing one
// on two ports) and announce them by ARP. tfccm starts with the nodes set
// and compat { metallb = true, metallb_takeover = "prepare" }: every
// Service is prepared (its NodeVIPs on standby: held by no node, reason
// Standby), `tfccm takeover` takes each address over (a holder announces
// it), then the speakers stop. Each Service's interruption (the longest run
// without an answer from the segment's client, probed every 100 ms) is at
// most 3 s, every address is kept, and deleting the take-over list then
// withdraws none (the take-over is one-way).
func TestMigrateFromMetalLBNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	speaker := filepath.Join(root, "bin", "metallb-speaker")
	if _, err := os.Stat(speaker); err != nil {
		t.Fatalf("MetalLB's speaker: %v (make tools-metallb)", err)
	}
	nodes := []string{"a", "b"}
	seg := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("mn%d", os.Getpid()%100000), Net: fmt.Sprintf("10.95.%d", os.Getpid()%250), Nodes: nodes, Host: true})
	at := seg.Addr
	var pool []string
	for i := 120; i <= 127; i++ { // .200 is the segment's client
		pool = append(pool, at(i))
	}
	seg.AddVIPs(t, pool...)
	for i, n := range nodes { // the second port of the shared address
		l2seg.Sh(t, "ip", "netns", "exec", seg.Netns(n), "nft", "add", "rule", "inet", "l2seg", "pre",
			"ip", "daddr", at(126), "tcp", "dport", "8080", "dnat", "ip", "to", seg.Addr(i+1)+":8080")
	}
	nm := seg.StartNodeMode(t)
	cluster, client := nm.Cluster, nm.Cluster.Client()
	kubectl := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// MetalLB: its controller on the host, a speaker in each node.
	mlbLog, stopController := startMetalLBAt(t, cluster.Kubeconfig(), "")
	kubectl("", "-n", "metallb-system", "delete", "ipaddresspool", "test")
	mlbRange := at(120) + "-" + at(127)
	kubectl(fmt.Sprintf(`apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: migrate
  namespace: metallb-system
spec:
  addresses: [%q]
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: migrate
  namespace: metallb-system
spec:
  ipAddressPools: [migrate]
`, mlbRange), "apply", "-f", "-")
	logs := t.TempDir()
	speakers := map[string]*exec.Cmd{}
	// Each speaker reads its own Pod (the owner of its status objects):
	// one per node as MetalLB's DaemonSet makes them, run by no kubelet.
	kubectl("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: metallb-system\n", "apply", "-f", "-")
	for _, n := range nodes {
		kubectl(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: speaker-%[1]s
  namespace: metallb-system
  labels: {app: metallb, component: speaker}
spec:
  nodeName: %[1]s
  hostNetwork: true
  automountServiceAccountToken: false
  containers: [{name: speaker, image: quay.io/metallb/speaker:v0.15.2}]
`, n), "apply", "-f", "-")
		speakers[n] = startSpeaker(t, seg, speaker, n, nm.AgentKubeconfig, logs)
	}
	stopSpeakers := func() {
		for _, cmd := range speakers {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("MetalLB speaker %s:\n%s", n, logTail(filepath.Join(logs, "speaker-"+n+".log"), 30))
			}
			t.Logf("MetalLB controller:\n%s", mlbLog())
		}
	})

	specs := []svcSpec{
		{"picked", 80, nil},
		{"chosen", 80, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(125)}},
		{"shared-http", 80, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(126), "metallb.universe.tf/allow-shared-ip": "front"}},
		{"shared-alt", 8080, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(126), "metallb.universe.tf/allow-shared-ip": "front"}},
	}
	ready, onA := true, "a"
	for _, s := range specs {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "default", Annotations: s.ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "http", Port: s.port, Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No kubelet here: the Service's endpoint (node a's server), as the
		// EndpointSlice controller would write it; MetalLB's L2 speakers
		// announce only a Service with a ready endpoint.
		port, proto, name := int32(8080), corev1.ProtocolTCP, "http"
		es := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: s.name + "-a", Namespace: "default",
				Labels: map[string]string{discoveryv1.LabelServiceName: s.name, discoveryv1.LabelManagedBy: "test"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{seg.NodeAddr("a")}, NodeName: &onA, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}
		if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, es, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	for _, s := range specs {
		ip, err := harness.WaitForIngress(ctx, client, "default", s.name, 2*time.Minute)
		if err != nil {
			t.Fatalf("%v\nMetalLB log:\n%s", err, mlbLog())
		}
		ips[s.name] = ip
	}
	if ips["shared-http"] != at(126) || ips["shared-alt"] != at(126) || ips["chosen"] != at(125) {
		t.Fatalf("MetalLB's addresses %v: want chosen at %s, both shared ones at %s", ips, at(125), at(126))
	}
	probes := map[string]*prober{}
	for _, s := range specs {
		ip, port := ips[s.name], s.port
		p := &prober{url: fmt.Sprintf("tcp://%s:%d", ip, port), ask: func() bool {
			_, err := askPort(seg, ip, port, time.Second)
			return err == nil
		}}
		if err := p.waitUp(2 * time.Minute); err != nil {
			t.Fatalf("%s before the migration (announced by MetalLB's speakers): %v\nthe client's neighbours:\n%s", s.name, err, seg.Neighbours(t))
		}
		probes[s.name] = p
		p.start()
		t.Cleanup(p.stop)
	}
	t.Logf("MetalLB's speakers announce %v", ips)

	// tfccm prepares: the nodes set, the pool mirrored, compat prepare.
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(vipapi.GVR).Namespace(l2seg.Namespace)
	vipsOf := func(ip string) []*vipapi.NodeVIP {
		list, err := dyn.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		var out []*vipapi.NodeVIP
		for i := range list.Items {
			if v, err := vipapi.FromUnstructured(&list.Items[i]); err == nil && v.Spec.Address == ip {
				out = append(out, v)
			}
		}
		return out
	}
	held := func(ip string) bool {
		for _, v := range vipsOf(ip) {
			if c := v.Status.Announced(); c != nil && c.Status == metav1.ConditionTrue && v.Status.Holder != "" {
				return true
			}
		}
		return false
	}
	start := time.Now()
	for _, p := range probes {
		p.reset()
	}
	ccm := startTfccmNodes(t, cluster.Kubeconfig(), fmt.Sprintf(`load_balancer {
  settings = { namespace = %q }
  address_pool "migrate" {
    addresses = [%q]
  }
}
compat {
  metallb          = true
  metallb_takeover = "prepare"
}
`, l2seg.Namespace, mlbRange))
	t.Logf("tfccm started beside MetalLB (its log: %s)", ccm.LogPath)
	for _, s := range specs {
		err := harness.Eventually(ctx, 4*time.Minute, s.name+" prepared", func(ctx context.Context) error {
			return programmedReasonOf(ctx, client, s.name, "Prepared")
		})
		if err != nil {
			t.Fatalf("%v\nServices' events: %s\nCCM log:\n%s", err, harness.Events(ctx, client, "default", s.name), ccm.LogTail(40))
		}
	}
	t.Logf("every Service prepared %s after tfccm started", time.Since(start).Round(10*time.Millisecond))
	for _, s := range specs {
		err := harness.Eventually(ctx, time.Minute, s.name+"'s NodeVIP on standby", func(context.Context) error {
			vs := vipsOf(ips[s.name])
			if len(vs) == 0 {
				return fmt.Errorf("no NodeVIP of %s", ips[s.name])
			}
			for _, v := range vs {
				c := v.Status.Announced()
				if !v.Spec.Standby || c == nil || c.Reason != vipapi.ReasonStandby || v.Status.Holder != "" {
					return fmt.Errorf("NodeVIP %s: standby %t, status %+v", v.Name, v.Spec.Standby, v.Status)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got := getService(t, client, s.name)
		if len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].IP != ips[s.name] {
			t.Errorf("%s: status %+v while prepared, want MetalLB's %s", s.name, got.Status.LoadBalancer.Ingress, ips[s.name])
		}
	}

	// The take-over, address by address, then the speakers stop.
	cli := repo.Build(t, "./cmd/tfccm")
	for _, group := range [][]string{{"picked"}, {"chosen"}, {"shared-http", "shared-alt"}} {
		ip := ips[group[0]]
		t0 := time.Now()
		args := []string{"takeover", "--kubeconfig", cluster.Kubeconfig()}
		for _, n := range group {
			args = append(args, "default/"+n)
		}
		if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
			t.Fatalf("tfccm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if err := harness.Eventually(ctx, 2*time.Minute, ip+" held by a node", func(context.Context) error {
			if !held(ip) {
				return fmt.Errorf("no NodeVIP of %s announced yet", ip)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\nServices' events: %s\nCCM log:\n%s", err, harness.Events(ctx, client, "default", group[0]), ccm.LogTail(40))
		}
		t.Logf("%s (%s): held by a node %s after tfccm takeover", strings.Join(group, ", "), ip, time.Since(t0).Round(10*time.Millisecond))
	}
	stopSpeakers()
	stopController()
	t.Logf("MetalLB's speakers and controller stopped %s after tfccm started", time.Since(start).Round(10*time.Millisecond))
	for _, s := range specs {
		if err := harness.Eventually(ctx, 2*time.Minute, s.name+" programmed", func(ctx context.Context) error {
			return programmedReasonOf(ctx, client, s.name, "Applied")
		}); err != nil {
			t.Errorf("%v\nServices' events: %s", err, harness.Events(ctx, client, "default", s.name))
		}
	}
	checkTakeoverOneWay(t, client, ccm, specs, ips, held)
	time.Sleep(2 * time.Second) // answers after the last change
	for _, p := range probes {
		p.stop()
	}
	// The client's neighbour cache forgets MetalLB's speakers: every
	// address is asked again through the holder's announcement alone.
	l2seg.Sh(t, "ip", "-n", seg.Netns(l2seg.Client), "neigh", "flush", "dev", "eth0")
	for _, s := range specs {
		p := probes[s.name]
		got := getService(t, client, s.name)
		ip := ""
		if len(got.Status.LoadBalancer.Ingress) > 0 {
			ip = got.Status.LoadBalancer.Ingress[0].IP
		}
		if ip != ips[s.name] {
			t.Errorf("%s: address %s after the migration, was %s", s.name, ip, ips[s.name])
		}
		if !held(ips[s.name]) {
			t.Errorf("%s: %s held by no node after the take-over", s.name, ips[s.name])
		}
		if _, err := askPort(seg, ips[s.name], s.port, time.Second); err != nil {
			t.Errorf("%s: %s:%d does not answer after the migration: %v", s.name, ips[s.name], s.port, err)
		}
		gap := p.longest()
		t.Logf("%s (%s:%d): interruption %s (no answer from %s to %s after tfccm started)",
			s.name, ips[s.name], s.port, gap.Round(10*time.Millisecond), p.gapFrom().Sub(start).Round(10*time.Millisecond), p.gapTo().Sub(start).Round(10*time.Millisecond))
		if gap > 3*time.Second {
			t.Errorf("%s: interruption %s, want at most 3 s", s.name, gap.Round(10*time.Millisecond))
		}
	}
	for _, s := range specs {
		taken := 0
		for _, ev := range strings.Split(harness.Events(ctx, client, "default", s.name), " | ") {
			if strings.HasPrefix(ev, "Warning ") && !notTheLoadBalancers(ev) {
				t.Errorf("%s: Event during the migration: %s", s.name, ev)
			}
			if strings.Contains(ev, "LoadBalancerTakenOver") {
				taken++
			}
		}
		if taken != 1 {
			t.Errorf("%s: %d LoadBalancerTakenOver Events, want 1", s.name, taken)
		}
	}
}

// startSpeaker runs MetalLB's speaker for node in its network namespace
// (its host network, as MetalLB's DaemonSet runs it), memberlist off (no
// --ml-bindaddr: every speaker computes the same owner from the Nodes),
// against the cluster of kubeconfig (reachable from the segment).
func startSpeaker(t *testing.T, seg *l2seg.Segment, bin, node, kubeconfig, logs string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", seg.Netns(node), bin,
		"--kubeconfig="+kubeconfig, "--namespace=metallb-system", "--node-name="+node, "--pod-name=speaker-"+node, "--port=7472", "--log-level=info")
	log, err := os.Create(filepath.Join(logs, "speaker-"+node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	return cmd
}

// askPort connects from the segment's client to vip:port and returns the
// node that answered.
func askPort(seg *l2seg.Segment, vip string, port int32, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := localcloud.Dial(ctx, seg.Netns(l2seg.Client), "tcp", net.JoinHostPort(vip, strconv.Itoa(int(port))))
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// startTfccmNodes runs the CCM (built from this tree) with the nodes set
// against the cluster of kubeconfig, blocks its cloud config; no routes
// (the segment's nodes need none), and its tofu's lbhost provider reaches
// the cluster through ~/.kube/config (tofu gets the CCM's HOME, and no
// other variable of its environment).
func startTfccmNodes(t *testing.T, kubeconfig, blocks string) *harness.CCM {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := harness.CloudConfig{ClusterName: "mignodes", WorkDir: filepath.Join(dir, "work"), TemplateSet: "nodes", Tofu: repo.Tofu(t),
		Terraform: []string{fmt.Sprintf("cli_config_file = %q", repo.LBHost(t))}, Blocks: blocks}
	path := filepath.Join(dir, "cloud.hcl")
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	kc, err := os.ReadFile(kubeconfig)
	if err == nil {
		err = os.MkdirAll(filepath.Join(home, ".kube"), 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(home, ".kube", "config"), kc, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Binary: ccmBinary(t), Kubeconfig: kubeconfig, CloudConfig: path, Dir: dir,
		Flags: []string{"--configure-cloud-routes=false", "--concurrent-service-syncs=4"},
		Env:   []string{"PATH=" + filepath.Join(root, "bin") + ":" + os.Getenv("PATH"), "HOME=" + home},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ccm.Stop()
		if t.Failed() {
			t.Logf("CCM log, last 60 lines:\n%s", ccm.LogTail(60))
		}
	})
	return ccm
}
