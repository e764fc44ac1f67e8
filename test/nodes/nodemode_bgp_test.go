package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/frrtest"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/l2seg"
)

// torBGPConfig is the top-of-rack router's FRR: it peers with every node
// (timers 1 3, BFD at 100 ms), installs their routes with ECMP and hashes
// flows by addresses and ports.
func torBGPConfig(seg *l2seg.Segment, nodes []string) string {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, seg.NodeAddr(n))
	}
	return torConfig(seg.Addr(200), addrs)
}

// torConfig is a top-of-rack FRR (AS 64512, router ID routerID) peering
// with the nodes at nodeAddrs (AS 64513, timers 1 3, BFD at 100 ms), ECMP
// over up to 8 paths.
func torConfig(routerID string, nodeAddrs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "frr defaults traditional\nbfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n exit\nexit\nrouter bgp 64512\n bgp router-id %s\n no bgp ebgp-requires-policy\n", routerID)
	for _, a := range nodeAddrs {
		fmt.Fprintf(&b, " neighbor %s remote-as 64513\n neighbor %s timers 1 3\n neighbor %s bfd profile fast\n", a, a, a)
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\nexit\n")
	return b.String()
}

// installCRD creates one of the chart's CRDs and waits until it is served.
func installCRD(t *testing.T, dyn dynamic.Interface, file string, gvr schema.GroupVersionResource) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "tfccm", "crds", file))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := harness.Eventually(ctx, 30*time.Second, file+" served", func(ctx context.Context) error {
		_, err := dyn.Resource(gvr).Namespace(l2seg.Namespace).List(ctx, metav1.ListOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// bgpAgents is node mode over BGP on a segment's nodes, as the agents'
// tests start it: each node's own FRR holding one line of its admin's
// (which must survive tfccm), the agents restarted onto it, the NodeBGP
// CRD served.
type bgpAgents struct {
	nm         *l2seg.NodeMode
	frr        map[string]*frrtest.FRR
	bgps, vips dynamic.ResourceInterface
}

// startBGPAgents starts node mode over BGP on nodes of seg.
func startBGPAgents(t *testing.T, seg *l2seg.Segment, nodes []string, adminLine string) bgpAgents {
	t.Helper()
	frr := map[string]*frrtest.FRR{}
	for _, n := range nodes {
		frr[n] = frrtest.Start(t, seg.Netns(n), "frr defaults traditional\n"+adminLine+"\n")
	}
	nm := seg.StartNodeMode(t)
	dc := dynamic.NewForConfigOrDie(nm.Cluster.RESTConfig())
	installCRD(t, dc, "tfccm.io_nodebgps.yaml", vipapi.BGPGVR)
	for _, n := range nodes {
		nm.Agents[n].Kill()
		nm.Restart(t, n, "--frr-dir", frr[n].RunDir)
	}
	return bgpAgents{nm: nm, frr: frr,
		bgps: dc.Resource(vipapi.BGPGVR).Namespace(l2seg.Namespace), vips: dc.Resource(vipapi.GVR).Namespace(l2seg.Namespace)}
}

// TestNodeModeBGPAgents: BGP mode's node agents (`tfccm node-agent
// --frr-dir`, real processes) on namespace nodes of one segment, each
// with its own FRR (zebra, bgpd, bfdd, staticd), against a real
// kube-apiserver; a top-of-rack FRR (ECMP, BFD) on the segment peers with
// every node, its client namespace sends the flows. Each node takes the
// VIP's packets to its own server as kube-proxy would. Shown: the
// NodeBGP's peering reaches every node's FRR and each agent reports its
// session with the ToR Established in the status; a Cluster NodeVIP with
// announce bgp is announced by every node (status.announcers, the ToR's
// route has one next hop per node) and flows from many client ports reach
// each node; a node's bgpd killed withdraws its path (BFD) while the
// others serve; a node's agent stopped withdraws its path first; a Local NodeVIP whose only endpoint is on one node is
// announced by that node alone; deleting the NodeVIPs withdraws every
// route; deleting the NodeBGP leaves no tfccm object in any node's FRR,
// the admin's own lines intact.
func TestNodeModeBGPAgents(t *testing.T) {
	needNodes(t)
	frrtest.Skip(t)
	nodes := []string{"a", "b", "c"}
	seg := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("nb%d", os.Getpid()%100000), Net: fmt.Sprintf("10.94.%d", os.Getpid()%250), Nodes: nodes, Host: true})
	const vip, vipLocal = "198.51.100.10", "198.51.100.11"
	seg.AddVIPs(t, vip, vipLocal)
	client := seg.Netns(l2seg.Client)
	frrtest.Must(t, "ip", "netns", "exec", client, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1")
	tor := frrtest.Start(t, client, torBGPConfig(seg, nodes))
	// The node's admin's own line, which must survive tfccm.
	const adminLine = "ip prefix-list admin-marker seq 5 permit 203.0.113.0/24"
	ba := startBGPAgents(t, seg, nodes, adminLine)
	nm, frr, bgps, vips := ba.nm, ba.frr, ba.bgps, ba.vips
	ctx := context.Background()

	nb, err := vipapi.BGPToUnstructured(&vipapi.NodeBGP{ObjectMeta: metav1.ObjectMeta{Name: vipapi.BGPName, Namespace: l2seg.Namespace},
		Spec: vipapi.NodeBGPSpec{ASN: 64513,
			Peers:       []vipapi.BGPPeer{{Name: "tor", Address: seg.Addr(200), ASN: 64512, KeepaliveTime: 1, HoldTime: 3, BFDProfile: "fast"}},
			BFDProfiles: []vipapi.BFDProfile{{Name: "fast", ReceiveInterval: 100, TransmitInterval: 100}},
			Pools:       []vipapi.BGPPool{{Name: "default", Prefixes: []string{"198.51.100.0/24"}, Communities: []string{"64513:100"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bgps.Create(ctx, nb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.Eventually(ctx, 2*time.Minute, "every node's FRR holds the peering, its session with tor Established", func(ctx context.Context) error {
		u, err := bgps.Get(ctx, vipapi.BGPName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b, err := vipapi.BGPFromUnstructured(u)
		if err != nil {
			return err
		}
		var ok []string
		for _, n := range b.Status.Nodes {
			// The agent reports its node's sessions (tfccm's peers only).
			if n.Configured && len(n.Sessions) == 1 && n.Sessions[0].Peer == "tor" && n.Sessions[0].State == "Established" && n.Sessions[0].Since != nil {
				ok = append(ok, n.Name)
			}
		}
		if len(ok) != len(nodes) {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	create := func(name, addr, policy string) {
		t.Helper()
		obj, err := vipapi.ToUnstructured(&vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l2seg.Namespace},
			Spec: vipapi.NodeVIPSpec{Address: addr, Service: vipapi.ServiceRef{Namespace: "shop", Name: name}, ExternalTrafficPolicy: policy,
				Ports: []vipapi.Port{{Protocol: "TCP", Port: 80}}, Nodes: nodes, Announce: vipapi.AnnounceBGP}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := vips.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	announcers := func(name string) []string {
		u, err := vips.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			return nil
		}
		if c := v.Status.Announced(); c == nil || c.Status != metav1.ConditionTrue {
			return nil
		}
		return v.Status.Announcers
	}
	// nextHops are the ToR's kernel next hops to addr.
	nextHops := func(addr string) []string {
		out, _ := frrtest.Output("ip", "-n", client, "-4", "route", "show", addr+"/32")
		var hops []string
		for _, f := range strings.Split(out, "\n") {
			fs := strings.Fields(f)
			for i := range fs {
				if fs[i] == "via" && i+1 < len(fs) {
					hops = append(hops, fs[i+1])
				}
			}
		}
		slices.Sort(hops)
		return hops
	}
	addrs := func(ns ...string) []string {
		var out []string
		for _, n := range ns {
			out = append(out, seg.NodeAddr(n))
		}
		slices.Sort(out)
		return out
	}
	waitHops := func(addr string, want []string, what string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := harness.Eventually(ctx, time.Minute, what, func(context.Context) error {
			if got := nextHops(addr); !slices.Equal(got, want) {
				return fmt.Errorf("next hops %v, want %v", got, want)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\nToR:\n%s", err, tor.Vtysh(t, "show bgp ipv4 unicast"))
		}
		return time.Since(start)
	}

	create("web-4", vip, vipapi.PolicyCluster)
	waitHops(vip, addrs(nodes...), "the ToR routes the VIP over every node")
	if err := harness.Eventually(ctx, time.Minute, "every node is an announcer", func(context.Context) error {
		if got := announcers("web-4"); !slices.Equal(got, nodes) {
			return fmt.Errorf("announcers %v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	spread := func(want []string) map[string]int {
		t.Helper()
		count := map[string]int{}
		for i := 0; i < 60; i++ {
			n, err := seg.Ask(vip, 3*time.Second)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			count[n]++
		}
		for _, n := range want {
			if count[n] == 0 {
				t.Fatalf("no flow reached node %s: %v", n, count)
			}
		}
		return count
	}
	t.Logf("60 flows over the nodes: %v", spread(nodes))

	// A node's bgpd crashes: BFD takes its path down, the others serve.
	frr["a"].Kill("bgpd")
	took := waitHops(vip, addrs("b", "c"), "node a's path withdrawn")
	t.Logf("node a's bgpd killed: its path withdrawn in %v", took.Round(time.Millisecond))
	if c := spread([]string{"b", "c"}); c["a"] != 0 {
		t.Fatalf("flows still reach node a: %v", c)
	}
	frr["a"].StartDaemon(t, "bgpd", "")
	waitHops(vip, addrs(nodes...), "node a announces again after its bgpd restarted (the agent reconfigures it)")

	// A node's agent stopped (SIGTERM: a DaemonSet rollout): it withdraws
	// its announcements first; started again, it announces again.
	_ = nm.Agents["c"].Cmd.Process.Signal(syscall.SIGTERM)
	_ = nm.Agents["c"].Cmd.Wait()
	waitHops(vip, addrs("a", "b"), "node c's agent stopped: its path withdrawn")
	nm.Restart(t, "c", "--frr-dir", frr["c"].RunDir)
	waitHops(vip, addrs(nodes...), "node c's agent back: it announces again")

	// Local: only the node with a ready endpoint announces.
	onB, ready, port, proto, pname := "b", true, int32(8080), corev1.ProtocolTCP, "http"
	if _, err := nm.Cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// No kubelet here: the Service's endpoint on node b, as the
	// EndpointSlice controller would write it.
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-local-b", Namespace: "shop",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web-local", discoveryv1.LabelManagedBy: "test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{seg.NodeAddr("b")}, NodeName: &onB, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &port, Protocol: &proto}},
	}
	if _, err := nm.Cluster.Client().DiscoveryV1().EndpointSlices("shop").Create(ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("web-local", vipLocal, vipapi.PolicyLocal)
	waitHops(vipLocal, addrs("b"), "only node b announces the Local VIP")

	// Deleting the NodeVIPs withdraws every route and each node's static route.
	for _, name := range []string{"web-4", "web-local"} {
		if err := vips.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitHops(vip, nil, "the VIP withdrawn everywhere")
	waitHops(vipLocal, nil, "the Local VIP withdrawn")
	// The NodeBGP deleted: nothing of tfccm's stays in any node's FRR.
	if err := bgps.Delete(ctx, vipapi.BGPName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := harness.Eventually(ctx, time.Minute, "no tfccm object in node "+n+"'s FRR", func(context.Context) error {
			cfg := frr[n].Vtysh(t, "show running-config")
			if strings.Contains(cfg, "tfccm") || strings.Contains(cfg, "tag 29798") {
				return fmt.Errorf("left:\n%s", cfg)
			}
			if !strings.Contains(cfg, adminLine) {
				return fmt.Errorf("the admin's line is gone:\n%s", cfg)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
