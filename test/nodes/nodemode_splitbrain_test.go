package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// splitBrainValues are the chart values of TestNodeModeSplitBrain: the
// nodes set with a pool on the nodes' network, the agents with /metrics,
// the health read (VIPHeld) every 5 s.
var splitBrainValues = strings.Replace(nodeModeBenchValues, "clusterName: bench", "clusterName: split", 1)

// gossipCut is the nftables table that drops the agents' gossip (the
// memberlist port, UDP and TCP, both ways) in a node's network namespace:
// the node still reaches the API server, its clients and kube-proxy, only
// the other agents are cut off.
const gossipCut = `table inet tfccm-test-gossip-cut {
  chain in {
    type filter hook input priority -10; policy accept;
    udp dport 7946 drop
    tcp dport 7946 drop
    udp sport 7946 drop
    tcp sport 7946 drop
  }
  chain out {
    type filter hook output priority -10; policy accept;
    udp dport 7946 drop
    tcp dport 7946 drop
    udp sport 7946 drop
    tcp sport 7946 drop
  }
}
`

// TestNodeModeSplitBrain: node mode installed by the chart on two real
// nodes; the gossip between them is cut (nftables drops the memberlist
// port in one node's namespace) while both still reach the API server, so
// each agent takes the other for dead and both hold the Service's VIP. The
// split brain is visible: the NodeVIP's status.contenders names both
// nodes, an agent records a Warning Event SplitBrain on it, both agents'
// tfccm_node_vip_held say 1 (what TfccmNodeVIPSplitBrain sums), and the
// Service gets tfccm.io/VIPHeld=False SplitBrain naming both and a Warning
// Event VIPSplitBrain. Once the gossip is back, one node holds it again:
// no contenders, one agent holding, VIPHeld True naming it.
func TestNodeModeSplitBrain(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t)
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts := routerWithKey(t, c)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "values.yaml"), []byte(splitBrainValues), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := quickstartNodesEnv(root, work, c, hosts, ref, splitBrainValues)
	if err != nil {
		t.Fatal(err)
	}
	cut := c.Nodes[0]
	heal := func() error {
		out, err := exec.Command("ip", "netns", "exec", cut.Netns, "nft", "delete", "table", "inet", "tfccm-test-gossip-cut").CombinedOutput()
		if err != nil && !strings.Contains(string(out), "No such file") {
			return fmt.Errorf("heal: %v: %s", err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		_ = heal()
		if t.Failed() {
			out, _ := runBlock(work, env, `set +e
kubectl -n tfccm-system logs ds/tfccm-node-agent --all-containers --prefix --tail=40
kubectl -n tfccm-system get nodevips -o yaml
kubectl get events -A --sort-by=.lastTimestamp | tail -30`)
			t.Logf("diagnostics:\n%s", out)
		}
		for _, cmd := range []string{
			"kubectl delete service split --ignore-not-found --wait --timeout=2m",
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
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "split"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "split"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(vipapi.GVR).Namespace("tfccm-system")
	nodeVIP := func() (*vipapi.NodeVIP, error) {
		list, err := dyn.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return nil, fmt.Errorf("NodeVIPs: %v (%d, want 1)", err, len(list.Items))
		}
		return vipapi.FromUnstructured(&list.Items[0])
	}
	vipHeld := func() (*metav1.Condition, error) {
		s, err := client.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return apimeta.FindStatusCondition(s.Status.Conditions, "tfccm.io/VIPHeld"), nil
	}
	// oneHolder: the status, the agents' metrics and VIPHeld name one holder.
	oneHolder := func(what string) string {
		t.Helper()
		var holder string
		if err := waitFor(ctx, 3*time.Minute, func() error {
			v, err := nodeVIP()
			if err != nil {
				return err
			}
			if a := v.Status.Announced(); a == nil || a.Status != metav1.ConditionTrue || len(v.Status.Contenders) > 0 {
				return fmt.Errorf("NodeVIP status: holder %q, contenders %v, Announced %+v", v.Status.Holder, v.Status.Contenders, a)
			}
			held, err := agentsHoldingIn(c)
			if err != nil || !slices.Equal(held, []string{v.Status.Holder}) {
				return fmt.Errorf("agents holding %v (%v), status holder %s", held, err, v.Status.Holder)
			}
			cond, err := vipHeld()
			if err != nil || cond == nil || cond.Status != metav1.ConditionTrue || cond.Message != "IPv4 VIP held by "+v.Status.Holder {
				return fmt.Errorf("VIPHeld %+v (%v), want True naming %s", cond, err, v.Status.Holder)
			}
			holder = v.Status.Holder
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return holder
	}
	h := oneHolder("before the cut")
	t.Logf("SPLITBRAIN before the cut: %s holds %s", h, nodesVIP)

	t0 := time.Now()
	nft := exec.Command("ip", "netns", "exec", cut.Netns, "nft", "-f", "-")
	nft.Stdin = strings.NewReader(gossipCut)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("cut the gossip: %v: %s", err, out)
	}
	both := []string{c.Nodes[0].Name, c.Nodes[1].Name}
	slices.Sort(both)
	wantHeld := fmt.Sprintf("IPv4 VIP held by %s and %s at once (split brain: their node agents do not hear each other)", both[0], both[1])
	var seen time.Duration
	if err := waitFor(ctx, 2*time.Minute, func() error {
		v, err := nodeVIP()
		if err != nil {
			return err
		}
		if !slices.Equal(v.Status.Contenders, both) {
			return fmt.Errorf("NodeVIP contenders %v, want %v", v.Status.Contenders, both)
		}
		if seen == 0 {
			seen = time.Since(t0)
		}
		held, err := agentsHoldingIn(c)
		if err != nil || !slices.Equal(held, both) {
			return fmt.Errorf("agents holding %v (%v), want both", held, err)
		}
		evs, err := client.CoreV1().Events("tfccm-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + v.Name + ",reason=" + vipapi.EventSplitBrain + ",type=Warning"})
		if err != nil || len(evs.Items) == 0 {
			return fmt.Errorf("no Warning Event %s on NodeVIP %s (%v)", vipapi.EventSplitBrain, v.Name, err)
		}
		cond, err := vipHeld()
		if err != nil || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "SplitBrain" || cond.Message != wantHeld {
			return fmt.Errorf("VIPHeld %+v (%v), want False SplitBrain %q", cond, err, wantHeld)
		}
		evs, err = client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=split,reason=VIPSplitBrain,type=Warning"})
		if err != nil || len(evs.Items) == 0 || evs.Items[0].Message != wantHeld {
			return fmt.Errorf("Warning Event VIPSplitBrain on the Service: %v %+v", err, evs)
		}
		return nil
	}); err != nil {
		t.Fatalf("split brain not shown: %v", err)
	}
	t.Logf("SPLITBRAIN shown: contenders on the NodeVIP %v after the cut, then the Event, the agents' metrics and VIPHeld", seen.Round(100*time.Millisecond))

	t1 := time.Now()
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	h = oneHolder("after the gossip is back")
	t.Logf("SPLITBRAIN healed: %s holds %s alone, %v after the gossip came back", h, nodesVIP, time.Since(t1).Round(100*time.Millisecond))
}

// agentsHoldingIn are the nodes whose agent's tfccm_node_vip_held says it
// holds nodesVIP, read from each agent's /metrics inside its node's
// network namespace (the host needs no route to the nodes), sorted.
func agentsHoldingIn(c *Cluster) ([]string, error) {
	var out []string
	for _, n := range c.Nodes {
		b, err := exec.Command("ip", "netns", "exec", n.Netns, "curl", "-sS", "--max-time", "2",
			fmt.Sprintf("http://%s:%d/metrics", n.Address, benchAgentMetricsPort)).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s /metrics: %v: %s", n.Name, err, b)
		}
		if strings.Contains(string(b), fmt.Sprintf("tfccm_node_vip_held{address=%q,node=%q} 1", nodesVIP, n.Name)) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
