package nodes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/localcloud"
)

// The dual-stack pool on the nodes' segment (both families of
// NodeNetwork and NodeNetwork6) and the client's addresses there.
const (
	nodesPool6      = "fd00:250::f0-fd00:250::fa"
	dualClientAddr  = "10.250.0.200"
	dualClientAddr6 = "fd00:250::200"
)

// nodeModeDualStackValues: the nodes set with one pool of both families on
// the nodes' segment, the agents on every node with /metrics.
var nodeModeDualStackValues = fmt.Sprintf(`cloudConfig:
  clusterName: dual
  templateSet: nodes
  inline: |
    load_balancer {
      settings = {
        namespace = "tfccm-system"
      }
      address_pool "lan" {
        addresses = [%q, %q]
      }
    }
nodeAgent:
  enabled: true
  metricsPort: %d
`, nodesPool, nodesPool6, benchAgentMetricsPort)

// TestNodeModeDualStackUDP: node mode installed by the chart on three
// dual-stack real nodes (containerd, kubelet, kube-proxy serving both
// families), agnhost netexec on two of them (node-a, node-b) behind one
// `RequireDualStack` LoadBalancer Service with TCP and UDP on port 80 and
// externalTrafficPolicy Local, asked from a client of the nodes' segment
// (its own network namespace on the cloud's node bridge: ARP and NDP
// decide where its packets go). It shows: TCP and UDP answered through the
// IPv4 and the IPv6 VIP; the pod sees the client's own address on both
// families and protocols; only the nodes with an endpoint are candidates
// and hold the VIPs (node-c never); the IPv6 VIP's holder's agent killed
// (SIGKILL), then the IPv4 VIP's holder's kubelet stopped, moves every VIP
// that node held to the other node with an endpoint within 3 s (≤ 2
// requests lost at 20/s), with the client's neighbour entry following the
// announcement to the new holder's hardware address, and UDP answered from
// there; a node that returns takes nothing back; the Service
// removed leaves neither VIP on any node's interfaces nor in its
// iptables/nftables rules. The lines to read start NODEMODE-DUAL.
func TestNodeModeDualStackUDP(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t)
	c := ForTest(t, Options{Nodes: 3, DualStack: true})
	client := c.Client()
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts := routerWithKey(t, c)
	cl := segmentClient(t, c)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "values.yaml"), []byte(nodeModeDualStackValues), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := quickstartNodesEnv(root, work, c, hosts, ref, nodeModeDualStackValues)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := runBlock(work, env, `set +e
kubectl get nodes -o wide
kubectl get pods -A -o wide
kubectl get service echo -o yaml
kubectl -n tfccm-system get nodevips -o yaml
kubectl get events -A --sort-by=.lastTimestamp | tail -30`)
			t.Logf("diagnostics:\n%s\nclient's neighbours:\n%s\n%s", out, cl.sh(t, "neigh"), podLogTails(c, "tfccm-system", 40))
		}
		for _, cmd := range []string{
			"kubectl delete service echo --ignore-not-found --wait --timeout=2m",
			"helm uninstall tfccm -n tfccm-system --wait --timeout 2m || true",
		} {
			if out, err := runBlock(work, env, cmd); err != nil {
				t.Errorf("cleanup %q: %v: %s", cmd, err, out)
			}
		}
	})
	if out, err := runBlock(work, env, "helm install tfccm deploy/helm/tfccm --namespace tfccm-system -f values.yaml --wait --timeout 5m"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	withEndpoints := []string{"node-a", "node-b"}
	podNode := startEchoDaemonSetOn(t, c, withEndpoints)
	dual := corev1.IPFamilyPolicyRequireDualStack
	if _, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "echo"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			IPFamilyPolicy:        &dual, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "udp", Port: 80, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolUDP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var vips []string // IPv4, IPv6
	if err := waitFor(ctx, 3*time.Minute, func() error {
		s, err := client.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		vips = nil
		for _, ing := range s.Status.LoadBalancer.Ingress {
			vips = append(vips, ing.IP)
		}
		if len(vips) != 2 || strings.Contains(vips[0], ":") || !strings.Contains(vips[1], ":") {
			return fmt.Errorf("ingress %v, want an IPv4 and an IPv6 address", s.Status.LoadBalancer.Ingress)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("NODEMODE-DUAL the Service's VIPs: %v", vips)

	dyn := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(vipapi.GVR).Namespace("tfccm-system")
	status := func(vip string) (vipapi.NodeVIP, error) {
		list, err := dyn.List(ctx, metav1.ListOptions{})
		if err != nil {
			return vipapi.NodeVIP{}, err
		}
		for i := range list.Items {
			v, err := vipapi.FromUnstructured(&list.Items[i])
			if err != nil {
				return vipapi.NodeVIP{}, err
			}
			if v.Spec.Address == vip {
				return *v, nil
			}
		}
		return vipapi.NodeVIP{}, fmt.Errorf("no NodeVIP of %s among %d", vip, len(list.Items))
	}
	// settled: the VIP's status, the agents' metrics and the answer name
	// one holder, a node with an endpoint.
	settled := func(vip string) string {
		t.Helper()
		var last error
		if err := waitFor(ctx, 2*time.Minute, func() error {
			v, err := status(vip)
			if err != nil {
				last = err
				return err
			}
			st := v.Status
			if c := st.Announced(); c == nil || c.Status != metav1.ConditionTrue || !slices.Equal(st.Candidates, withEndpoints) {
				last = fmt.Errorf("%s: holder %q, candidates %v (want %v), Announced %+v", vip, st.Holder, st.Candidates, withEndpoints, c)
				return last
			}
			if !slices.Contains(v.Spec.Ports, vipapi.Port{Protocol: "UDP", Port: 80}) || !slices.Contains(v.Spec.Ports, vipapi.Port{Protocol: "TCP", Port: 80}) {
				last = fmt.Errorf("%s: ports %v, want TCP and UDP 80", vip, v.Spec.Ports)
				return last
			}
			held, err := agentsHoldingVIP(c, cl, vip)
			if err != nil || !slices.Equal(held, []string{st.Holder}) {
				last = fmt.Errorf("%s: status names %s, the agents' tfccm_node_vip_held %v (%v)", vip, st.Holder, held, err)
				return last
			}
			if got, err := cl.askTCP(vip, "/hostname", podNode); err != nil || got != st.Holder {
				last = fmt.Errorf("%s: status names %s, TCP answered from %q (%v)", vip, st.Holder, got, err)
				return last
			}
			return nil
		}); err != nil {
			t.Fatalf("the VIP did not settle: %v", last)
		}
		v, _ := status(vip)
		return v.Status.Holder
	}

	// Both families, both protocols, the client's own address kept.
	for _, vip := range vips {
		h := settled(vip)
		t.Logf("NODEMODE-DUAL %s held by %s (candidates %v)", vip, h, withEndpoints)
		if got, err := cl.askUDP(vip, "hostname", podNode); err != nil || got != h {
			t.Errorf("UDP through %s answered from %q (%v), want the holder %s", vip, got, err, h)
		}
		want := dualClientAddr
		if strings.Contains(vip, ":") {
			want = dualClientAddr6
		}
		for _, proto := range []string{"tcp", "udp"} {
			seen, err := cl.clientIP(proto, vip)
			if err != nil {
				t.Errorf("%s clientip through %s: %v", proto, vip, err)
				continue
			}
			if host, _, err := net.SplitHostPort(seen); err != nil || host != want {
				t.Errorf("over %s through %s the pod saw the client as %q, want %s (externalTrafficPolicy Local keeps it)", proto, vip, seen, want)
			}
		}
	}

	// Failover: the IPv6 VIP's holder's agent killed, then the IPv4 VIP's
	// holder's kubelet stopped; every VIP that node held is measured.
	nodes := map[string]*Node{}
	for _, n := range c.Nodes {
		nodes[n.Name] = n
	}
	family := func(vip string) string {
		if strings.Contains(vip, ":") {
			return "IPv6"
		}
		return "IPv4"
	}
	for _, round := range []struct{ fault, target string }{{faultAgent, vips[1]}, {faultKubelet, vips[0]}} {
		h := settled(round.target)
		loads := map[string]*vipLoad{}
		for _, vip := range vips {
			if vip == round.target || settled(vip) == h {
				loads[vip] = startAskLoad(func() (string, error) { return cl.askTCP(vip, "/hostname", podNode) })
			}
		}
		time.Sleep(time.Second)
		t0 := time.Now()
		switch round.fault {
		case faultAgent:
			if killed, err := nodes[h].KillProcesses("tfccm", "node-agent"); err != nil || killed != 1 {
				t.Fatalf("kill %s's agent: killed %d, %v", h, killed, err)
			}
		case faultKubelet:
			if err := nodes[h].StopKubelet(); err != nil {
				t.Fatal(err)
			}
		}
		for _, vip := range vips {
			ld := loads[vip]
			if ld == nil {
				continue
			}
			to, took, lost := ld.moved(t, t0, h, 10*time.Second)
			close(ld.stop)
			<-ld.done
			t.Logf("NODEMODE-DUAL failover %s (%s): %s -> %s in %v, %d requests lost at 20/s", family(vip), round.fault, h, to, took.Round(time.Millisecond), lost)
			if took > 3*time.Second || lost > 2 {
				t.Errorf("%s failover (%s) took %v and lost %d requests (want ≤ 3 s, ≤ 2)", family(vip), round.fault, took, lost)
			}
			if to == "node-c" {
				t.Errorf("%s moved to node-c, which has no endpoint", vip)
			}
			if mac, want := cl.neighbour(t, vip), nodeMAC(t, nodes[to]); mac != want {
				t.Errorf("the client's neighbour entry of %s is %q, want %s's %s (moved by the announcement)", vip, mac, to, want)
			}
			if got, err := cl.askUDP(vip, "hostname", podNode); err != nil || got != to {
				t.Errorf("after the failover UDP through %s answered from %q (%v), want %s", vip, got, err, to)
			}
		}
		// The killed agent's container is restarted by its kubelet, the
		// stopped kubelet started again; the VIPs stay with their new
		// holders.
		if round.fault == faultKubelet {
			if err := nodes[h].StartKubelet(); err != nil {
				t.Fatal(err)
			}
		}
		for _, vip := range vips {
			if loads[vip] != nil {
				if now := settled(vip); now == h {
					t.Errorf("%s moved back to %s when it returned", vip, h)
				}
			}
		}
	}

	// Removed: nothing of either VIP stays on the nodes, nothing answers.
	if out, err := runBlock(work, env, "kubectl delete service echo --wait --timeout=2m"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	if err := waitFor(ctx, time.Minute, func() error {
		list, err := dyn.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d NodeVIPs left", len(list.Items))
		}
		for _, n := range c.Nodes {
			for _, vip := range vips {
				if where := nodeMentions(n, vip); where != "" {
					return fmt.Errorf("node %s still has %s in %s", n.Name, vip, where)
				}
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	cl.sh(t, "neigh", "flush", "dev", "eth0")
	for _, vip := range vips {
		if got, err := cl.askTCP(vip, "/hostname", podNode); err == nil {
			t.Errorf("%s answered by %s after the Service was deleted", vip, got)
		}
	}
}

// podLogTails are the last lines of the logs of namespace's containers,
// read from the nodes' pod log directories (kubectl logs needs the host
// route to the kubelets).
func podLogTails(c *Cluster, namespace string, lines int) string {
	var b strings.Builder
	for _, n := range c.Nodes {
		logs, _ := filepath.Glob(filepath.Join(n.Dir, "pod-logs", namespace+"_*", "*", "*.log"))
		for _, l := range logs {
			fmt.Fprintf(&b, "%s %s:\n%s\n", n.Name, strings.TrimPrefix(l, filepath.Join(n.Dir, "pod-logs")+"/"), logTail(l, lines))
		}
	}
	return b.String()
}

// segClient is a client on the nodes' segment: its own network namespace
// with a veth on the cloud's node bridge, dualClientAddr and
// dualClientAddr6.
type segClient struct {
	netns string
	http  *http.Client
}

// segmentClient attaches a client to c's node bridge; it goes with the test.
func segmentClient(t *testing.T, c *Cluster) *segClient {
	t.Helper()
	cl := &segClient{netns: c.Cloud.Prefix + "-client"}
	veth := c.Cloud.Prefix + "-vcl"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "netns", "add", cl.netns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", cl.netns).Run() })
	run("ip", "-n", c.Cloud.CloudNetns, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", cl.netns)
	run("ip", "-n", c.Cloud.CloudNetns, "link", "set", veth, "master", c.Cloud.Prefix+"-br", "up")
	run("ip", "netns", "exec", cl.netns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	run("ip", "-n", cl.netns, "link", "set", "lo", "up")
	run("ip", "-n", cl.netns, "addr", "add", dualClientAddr+"/24", "dev", "eth0")
	run("ip", "-n", cl.netns, "addr", "add", dualClientAddr6+"/64", "dev", "eth0", "nodad")
	run("ip", "-n", cl.netns, "link", "set", "eth0", "up")
	cl.http = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return localcloud.Dial(ctx, cl.netns, network, addr)
		}}}
	return cl
}

func (cl *segClient) sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", cl.netns}, args...)...).CombinedOutput()
	if err != nil {
		t.Errorf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// get GETs path of vip:80 over TCP and returns the body.
func (cl *segClient) get(vip, path string) (string, error) {
	resp, err := cl.http.Get("http://" + net.JoinHostPort(vip, "80") + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

// askTCP asks netexec's path (/hostname) through vip and returns the node
// of the pod that answered.
func (cl *segClient) askTCP(vip, path string, podNode map[string]string) (string, error) {
	b, err := cl.get(vip, path)
	if err != nil {
		return "", err
	}
	if n, ok := podNode[b]; ok {
		return n, nil
	}
	return "", fmt.Errorf("answered by %q, no pod of the DaemonSet", b)
}

// udp sends netexec's UDP command to vip:80 (up to 5 tries, 2 s each) and
// returns the answer.
func (cl *segClient) udp(vip, cmd string) (string, error) {
	var last error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := localcloud.Dial(ctx, cl.netns, "udp", net.JoinHostPort(vip, "80"))
		cancel()
		if err != nil {
			return "", err
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 256)
		var n int
		if _, err = conn.Write([]byte(cmd)); err == nil {
			n, err = conn.Read(buf)
		}
		conn.Close()
		if err == nil {
			return strings.TrimSpace(string(buf[:n])), nil
		}
		last = err
	}
	return "", last
}

// askUDP asks netexec's UDP command (hostname) through vip and returns the
// node of the pod that answered.
func (cl *segClient) askUDP(vip, cmd string, podNode map[string]string) (string, error) {
	b, err := cl.udp(vip, cmd)
	if err != nil {
		return "", err
	}
	if n, ok := podNode[b]; ok {
		return n, nil
	}
	return "", fmt.Errorf("answered %q, no pod of the DaemonSet", b)
}

// clientIP is the client's address as the pod saw it, over proto (tcp:
// /clientip, udp: clientip), "host:port".
func (cl *segClient) clientIP(proto, vip string) (string, error) {
	if proto == "udp" {
		return cl.udp(vip, "clientip")
	}
	return cl.get(vip, "/clientip")
}

// neighbour is the hardware address of the client's neighbour entry of ip.
func (cl *segClient) neighbour(t *testing.T, ip string) string {
	t.Helper()
	f := strings.Fields(cl.sh(t, "neigh", "show", ip))
	if i := slices.Index(f, "lladdr"); i >= 0 && i+1 < len(f) {
		return f[i+1]
	}
	return ""
}

// nodeMAC is the hardware address of n's interface on the segment.
func nodeMAC(t *testing.T, n *Node) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", n.Netns, "-br", "link", "show", "eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("%s's eth0: %v %s", n.Name, err, out)
	}
	return strings.Fields(string(out))[2]
}

// nodeMentions says where n still has vip: an interface address, or its
// iptables, ip6tables or nftables rules; "" when nowhere.
func nodeMentions(n *Node, vip string) string {
	for _, cmd := range [][]string{
		{"ip", "-n", n.Netns, "addr"},
		{"ip", "netns", "exec", n.Netns, "iptables-save"},
		{"ip", "netns", "exec", n.Netns, "ip6tables-save"},
		{"ip", "netns", "exec", n.Netns, "nft", "list", "ruleset"},
	} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s (failed: %v)", strings.Join(cmd, " "), err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if containsAddr(sc.Text(), vip) {
				return fmt.Sprintf("%s: %s", strings.Join(cmd[3:], " "), sc.Text())
			}
		}
	}
	return ""
}

// containsAddr: line holds addr as a whole address (fd00:250::f0 is not in
// fd00:250::f01).
func containsAddr(line, addr string) bool {
	for i := 0; ; {
		j := strings.Index(line[i:], addr)
		if j < 0 {
			return false
		}
		end := i + j + len(addr)
		if end == len(line) || !strings.ContainsRune("0123456789abcdefABCDEF:.", rune(line[end])) {
			return true
		}
		i = end
	}
}

// agentsHoldingVIP are the nodes whose agent's tfccm_node_vip_held says it
// holds vip (each node's /metrics read from the client), sorted.
func agentsHoldingVIP(c *Cluster, cl *segClient, vip string) ([]string, error) {
	var out []string
	for _, n := range c.Nodes {
		resp, err := cl.http.Get(fmt.Sprintf("http://%s:%d/metrics", n.Address, benchAgentMetricsPort))
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(b), fmt.Sprintf("tfccm_node_vip_held{address=%q,node=%q} 1", vip, n.Name)) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
