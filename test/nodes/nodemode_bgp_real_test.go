package nodes

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/frrtest"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/localcloud"
)

// The routed side of TestNodeModeBGPOnRealNodes: the ToR's address on the
// nodes' segment, the client's network behind the ToR (TEST-NET-1), the
// Service pool (TEST-NET-2, on no interface: only BGP routes it).
const (
	bgpTorAddr    = "10.250.0.201"
	bgpClientNet  = "192.0.2.0/24"
	bgpTorSide    = "192.0.2.1"
	bgpClientAddr = "192.0.2.2"
	bgpPool       = "198.51.100.240-198.51.100.250"
	bgpVIP        = "198.51.100.240"
)

// nodeModeBGPValues: the nodes set with settings.bgp (the CCM applies the
// peering itself, workspace bgp-peering) peering with the ToR, a pool
// routed only by BGP, the agents with nodeAgent.bgp (frrGroupID: the group
// of the nodes' FRR vty sockets).
func nodeModeBGPValues(vtyGroup string) string {
	return fmt.Sprintf(`cloudConfig:
  clusterName: bgp
  templateSet: nodes
  inline: |
    load_balancer {
      settings = {
        namespace = "tfccm-system"
        bgp = {
          asn           = 64513
          node_networks = [%q]
          peers         = [{ name = "tor", address = %q, asn = 64512, bfd_profile = "fast", keepalive_time = 1, hold_time = 3 }]
          bfd_profiles  = [{ name = "fast", receive_interval_ms = 100, transmit_interval_ms = 100, detect_multiplier = 3 }]
          pools         = [{ name = "web", prefixes = ["198.51.100.0/24"], communities = ["64513:100"] }]
        }
      }
      address_pool "web" {
        addresses = [%q]
      }
    }
nodeAgent:
  enabled: true
  bgp:
    enabled: true
    frrGroupID: %s
`, NodeNetwork, bgpTorAddr, bgpPool, vtyGroup)
}

// TestNodeModeBGPOnRealNodes: node mode over BGP installed by the chart on
// three real nodes (containerd, kubelet, kube-proxy), each with its own
// FRR (Options.FRR: zebra, bgpd, bfdd, staticd in the node's namespaces,
// its own /var/run/frr that the agent pod's hostPath reaches). A
// top-of-rack FRR (ECMP, L4 hashing, BFD at 100 ms × 3) on the nodes'
// segment peers with them; a client behind it asks. The CCM applies the
// peering itself from settings.bgp (the NodeBGP object; every node's FRR
// holds it), a `tfccm.io/template: bgp` Service with
// externalTrafficPolicy Cluster gets its address, every node announces it
// (status.announcers, one ToR next hop per node) and HTTP through the ToR
// from many client ports enters by every node (the pod sees the entering
// node's address: kube-proxy masquerades Cluster traffic). One node's
// agent pod deleted withdraws that node's path (SIGTERM: the agent
// withdraws first) while the others answer, and its replacement announces
// again; one node's kubelet stopped withdraws its path (its agent's
// kubelet check fails: the node is not eligible) while the others answer.
// The Service deleted leaves no route at the ToR and nothing of the
// address in any node's FRR; the NodeBGP deleted leaves no tfccm object
// in any node's FRR. The lines to read start NODEMODE-BGP.
func TestNodeModeBGPOnRealNodes(t *testing.T) {
	needNodes(t)
	frrtest.Skip(t)
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	vty, err := user.LookupGroup("frrvty")
	if err != nil {
		t.Fatalf("group frrvty: %v (Debian's frr)", err)
	}
	archive := imageArchive(t)
	c := ForTest(t, Options{Nodes: 3, FRR: true})
	client := c.Client()
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts := routerWithKey(t, c)
	nodes := map[string]*Node{}
	var names, addrs []string
	for _, n := range c.Nodes {
		nodes[n.Name] = n
		names = append(names, n.Name)
		addrs = append(addrs, n.Address)
	}
	tor := startSegmentToR(t, c, addrs)
	cl := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return localcloud.Dial(ctx, tor.client, network, addr)
		}}}

	values := nodeModeBGPValues(vty.Gid)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "values.yaml"), []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := quickstartNodesEnv(root, work, c, hosts, ref, values)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := runBlock(work, env, `set +e
kubectl get nodes -o wide
kubectl get pods -A -o wide
kubectl get service web -o yaml
kubectl -n tfccm-system get nodevips,nodebgps -o yaml
kubectl get events -A --sort-by=.lastTimestamp | tail -30`)
			t.Logf("diagnostics:\n%s\nToR:\n%s\n%s", out, tor.frr.Vtysh(t, "show bgp ipv4 unicast"), podLogTails(c, "tfccm-system", 40))
			for _, n := range c.Nodes {
				cfg, _ := n.Vtysh(ctx, "show running-config")
				t.Logf("%s's FRR:\n%s", n.Name, cfg)
			}
		}
		for _, cmd := range []string{
			"kubectl delete service web --ignore-not-found --wait --timeout=2m",
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

	// The CCM applies the peering (bgp-peering): the NodeBGP object, held
	// by every node's FRR.
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	if err := waitFor(ctx, 5*time.Minute, func() error {
		u, err := dyn.Resource(vipapi.BGPGVR).Namespace("tfccm-system").Get(ctx, vipapi.BGPName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b, err := vipapi.BGPFromUnstructured(u)
		if err != nil {
			return err
		}
		var ok []string
		for _, n := range b.Status.Nodes {
			if n.Configured {
				ok = append(ok, n.Name)
			}
		}
		slices.Sort(ok)
		if !slices.Equal(ok, names) {
			return fmt.Errorf("NodeBGP status %+v", b.Status)
		}
		return nil
	}); err != nil {
		t.Fatalf("the CCM's peering on every node's FRR: %v", err)
	}
	for _, n := range c.Nodes {
		if cfg, err := n.Vtysh(ctx, "show running-config"); err != nil || !strings.Contains(cfg, "neighbor "+bgpTorAddr+" remote-as 64512") {
			t.Fatalf("%s's own FRR has no peer %s: %v\n%s", n.Name, bgpTorAddr, err, cfg)
		}
	}

	podNode := startEchoDaemonSetOn(t, c, nil)
	t.Logf("NODEMODE-BGP echo pods: %v", podNode)
	if _, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"tfccm.io/template": "bgp"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "echo"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if err := waitFor(ctx, 5*time.Minute, func() error {
		s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ing := s.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != bgpVIP || ing[0].IPMode == nil || *ing[0].IPMode != corev1.LoadBalancerIPModeVIP {
			return fmt.Errorf("ingress %+v, want %s with ipMode VIP", ing, bgpVIP)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("NODEMODE-BGP the Service has %s after %v", bgpVIP, time.Since(created).Round(time.Second))

	nextHops := func() []string {
		out, _ := frrtest.Output("ip", "-n", tor.netns, "-4", "route", "show", bgpVIP+"/32")
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
	addrsOf := func(ns ...string) []string {
		var out []string
		for _, n := range ns {
			out = append(out, nodes[n].Address)
		}
		slices.Sort(out)
		return out
	}
	waitHops := func(want []string, what string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := waitFor(ctx, 2*time.Minute, func() error {
			if got := nextHops(); !slices.Equal(got, want) {
				return fmt.Errorf("next hops %v, want %v", got, want)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v\nToR:\n%s", what, err, tor.frr.Vtysh(t, "show bgp ipv4 unicast"))
		}
		return time.Since(start)
	}
	waitHops(addrsOf(names...), "the ToR routes the VIP over every node")
	vips := dyn.Resource(vipapi.GVR).Namespace("tfccm-system")
	if err := waitFor(ctx, time.Minute, func() error {
		list, err := vips.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return fmt.Errorf("NodeVIPs: %v, want one", err)
		}
		v, err := vipapi.FromUnstructured(&list.Items[0])
		if err != nil {
			return err
		}
		if c := v.Status.Announced(); v.Spec.Announce != vipapi.AnnounceBGP || c == nil || c.Status != metav1.ConditionTrue || !slices.Equal(v.Status.Announcers, names) {
			return fmt.Errorf("NodeVIP %s: announce %q, announcers %v, Announced %+v", v.Name, v.Spec.Announce, v.Status.Announcers, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// entered names the node a request entered by: kube-proxy masquerades
	// Cluster traffic to the entering node's address on the segment (an
	// endpoint elsewhere) or on its pod bridge (an endpoint there).
	podCIDRs := map[string]netip.Prefix{}
	for _, n := range names {
		node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podCIDRs[n] = netip.MustParsePrefix(node.Spec.PodCIDR)
	}
	ask := func() (string, error) {
		resp, err := cl.Get("http://" + bgpVIP + "/clientip")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		host, _, err := net.SplitHostPort(strings.TrimSpace(string(b)))
		if err != nil {
			return "", fmt.Errorf("clientip %q: %w", b, err)
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			return "", err
		}
		for _, n := range names {
			if a.String() == nodes[n].Address || podCIDRs[n].Contains(a) {
				return n, nil
			}
		}
		return "", fmt.Errorf("the pod saw %s: no node's address", a)
	}
	spread := func(want []string) map[string]int {
		t.Helper()
		count := map[string]int{}
		for i := range 60 {
			n, err := ask()
			if err != nil {
				t.Fatalf("request %d through the ToR: %v", i, err)
			}
			count[n]++
		}
		for _, n := range names {
			if in := slices.Contains(want, n); in != (count[n] > 0) {
				t.Fatalf("60 flows entered by %v, want by exactly %v", count, want)
			}
		}
		return count
	}
	// kube-proxy's rules follow the endpoints (a Service without ready
	// endpoints is rejected: host unreachable) on every node.
	if err := waitFor(ctx, 2*time.Minute, func() error {
		for range 10 {
			if _, err := ask(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("the VIP through the ToR: %v", err)
	}
	t.Logf("NODEMODE-BGP 60 flows from the client through the ToR entered by %v", spread(names))

	// faults: node-a's agent pod deleted, node-b's kubelet stopped; each
	// under 20 requests a second.
	for _, f := range []struct{ node, fault string }{{"node-a", "agent pod deleted"}, {"node-b", faultKubelet}} {
		load := startAskLoad(ask)
		time.Sleep(time.Second)
		t0 := time.Now()
		switch f.fault {
		case faultKubelet:
			if err := nodes[f.node].StopKubelet(); err != nil {
				t.Fatal(err)
			}
		default:
			pods, err := client.CoreV1().Pods("tfccm-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=node-agent", FieldSelector: "spec.nodeName=" + f.node})
			if err != nil || len(pods.Items) != 1 {
				t.Fatalf("%s's agent pod: %v (%d)", f.node, err, len(pods.Items))
			}
			if err := client.CoreV1().Pods("tfccm-system").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var others []string
		for _, n := range names {
			if n != f.node {
				others = append(others, n)
			}
		}
		took := waitHops(addrsOf(others...), f.node+"'s path withdrawn ("+f.fault+")")
		time.Sleep(4 * time.Second) // requests in flight end
		close(load.stop)
		<-load.done
		answered, lost := map[string]int{}, 0
		for _, a := range load.since(t0) {
			if a.node == "" {
				lost++
			} else {
				answered[a.node]++
			}
		}
		t.Logf("NODEMODE-BGP %s (%s): its path left the ToR within %v; meanwhile %d requests entered by %v, %d lost at 20/s",
			f.node, f.fault, took.Round(time.Millisecond), len(load.since(t0))-lost, answered, lost)
		if f.fault == faultKubelet {
			// (An agent pod's replacement may announce again already.)
			t.Logf("NODEMODE-BGP with %s's kubelet stopped, 60 flows entered by %v", f.node, spread(others))
			if err := nodes[f.node].StartKubelet(); err != nil {
				t.Fatal(err)
			}
		}
		waitHops(addrsOf(names...), f.node+" announces again")
		t.Logf("NODEMODE-BGP %s back: 60 flows entered by %v", f.node, spread(names))
	}

	// The Service deleted: no route at the ToR, nothing of the address in
	// any node's FRR (the peering stays: it is the cluster's).
	if out, err := runBlock(work, env, "kubectl delete service web --wait --timeout=2m"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	waitHops(nil, "the VIP withdrawn at the ToR")
	frrHolds := func(what func(cfg string) string) {
		t.Helper()
		for _, n := range c.Nodes {
			if err := waitFor(ctx, time.Minute, func() error {
				cfg, err := n.Vtysh(ctx, "show running-config")
				if err != nil {
					return err
				}
				if left := what(cfg); left != "" {
					return fmt.Errorf("%s left in:\n%s", left, cfg)
				}
				return nil
			}); err != nil {
				t.Fatalf("%s's FRR: %v", n.Name, err)
			}
		}
	}
	frrHolds(func(cfg string) string {
		if strings.Contains(cfg, bgpVIP) {
			return bgpVIP
		}
		return ""
	})
	if out, err := exec.Command("ip", "-n", tor.netns, "route", "show", bgpVIP).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("the ToR still routes %s: %s %v", bgpVIP, out, err)
	}

	// The peering's NodeBGP deleted (what destroying the bgp-peering
	// workspace does to it): no tfccm object stays in any node's FRR.
	if err := dyn.Resource(vipapi.BGPGVR).Namespace("tfccm-system").Delete(ctx, vipapi.BGPName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	frrHolds(func(cfg string) string {
		for _, s := range []string{"tfccm", "tag 29798", bgpTorAddr} {
			if strings.Contains(cfg, s) {
				return s
			}
		}
		return ""
	})
}

// segmentToR is a top-of-rack router on the nodes' segment: its own
// network namespace with a veth on the cloud's node bridge (bgpTorAddr)
// running FRR (torConfig) and a client namespace behind it
// (bgpClientNet); every node routes the client's network through it.
type segmentToR struct {
	netns, client string
	frr           *frrtest.FRR
}

// startSegmentToR starts the ToR peering with the nodes at nodeAddrs; it
// goes with the test.
func startSegmentToR(t *testing.T, c *Cluster, nodeAddrs []string) *segmentToR {
	t.Helper()
	r := &segmentToR{netns: c.Cloud.Prefix + "-tor", client: c.Cloud.Prefix + "-bcl"}
	frrtest.Netns(t, r.netns)
	frrtest.Netns(t, r.client)
	veth := c.Cloud.Prefix + "-vtr"
	frrtest.Must(t, "ip", "-n", c.Cloud.CloudNetns, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", r.netns)
	frrtest.Must(t, "ip", "-n", c.Cloud.CloudNetns, "link", "set", veth, "master", c.Cloud.Prefix+"-br", "up")
	frrtest.Must(t, "ip", "-n", r.netns, "addr", "add", bgpTorAddr+"/24", "dev", "eth0")
	frrtest.Must(t, "ip", "-n", r.netns, "link", "set", "eth0", "up")
	frrtest.Link(t, r.netns, r.client, "cl0", []string{bgpTorSide + "/24"}, []string{bgpClientAddr + "/24"})
	frrtest.Must(t, "ip", "-n", r.client, "route", "add", "default", "via", bgpTorSide)
	// The ToR forwards and hashes flows by addresses and ports.
	frrtest.Must(t, "ip", "netns", "exec", r.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1")
	for _, n := range c.Nodes {
		frrtest.Must(t, "ip", "-n", n.Netns, "route", "add", bgpClientNet, "via", bgpTorAddr)
	}
	r.frr = frrtest.Start(t, r.netns, torConfig(bgpTorAddr, nodeAddrs))
	return r
}
