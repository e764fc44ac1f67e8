package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// routeFlags start the CCM's route controller. Nodes get their pod CIDRs
// from the test (kube-controller-manager's nodeipam is not running here).
var routeFlags = []string{
	"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
	"--configure-cloud-routes=true",
	"--route-reconciliation-period=5s",
}

// TestRoutes drives the Routes facet with real parts: the CCM binary's
// route controller, OpenTofu, kernel routes in the local cloud's router
// namespace and TCP connections to "pod" addresses in node namespaces.
func TestRoutes(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("routes {\n  batch_window = \"1s\"\n  settings     = %s\n}\n", harness.HCLObject(cloud.RoutesSettings())))

	// node-a is dual-stack, node-b and node-c IPv4 only.
	pods := map[string][]string{ // node -> pod CIDRs
		"node-a": {"10.244.1.0/24", "fd00:10:244:1::/64"},
		"node-b": {"10.244.2.0/24"},
		"node-c": {"10.244.3.0/24"},
	}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		createRoutedNode(t, client, cloud, n, pods[n])
	}
	ccm := startCCM(t, cluster, cfg, routeFlags...)

	a, b, c := cloud.Node("node-a"), cloud.Node("node-b"), cloud.Node("node-c")
	wantV4 := []string{"10.244.1.0/24 via " + a.Address + " ", "10.244.2.0/24 via " + b.Address + " ", "10.244.3.0/24 via " + c.Address + " "}
	wantV6 := []string{"fd00:10:244:1::/64 via " + a.AddressV6 + " "}
	eventually(t, 2*time.Minute, "kernel routes in the cloud netns", func(context.Context) error {
		return routesPresent(cloud, wantV4, wantV6)
	})
	// The kernel routes appear during the apply; the state is written
	// after it.
	eventually(t, time.Minute, "routes state written", func(context.Context) error {
		b, err := os.ReadFile(filepath.Join(workDir, "state", "routes.tfstate"))
		if err != nil || !json.Valid(b) || !strings.Contains(string(b), "node-c/10.244.3.0/24") {
			return fmt.Errorf("routes state not written yet (%v)", err)
		}
		return nil
	})
	if got := routesOutput(t, workDir); !slices.Equal(got, []string{
		"node-a/10.244.1.0/24>node-a", "node-a/fd00:10:244:1::/64>node-a", "node-b/10.244.2.0/24>node-b", "node-c/10.244.3.0/24>node-c",
	}) {
		t.Errorf("routes output = %v", got)
	}

	t.Run("packets to pod addresses reach their node", func(t *testing.T) {
		podReachable(t, cloud, "node-a", "10.244.1.10", "32", "tcp4")
		podReachable(t, cloud, "node-a", "fd00:10:244:1::10", "128", "tcp6")
		podReachable(t, cloud, "node-b", "10.244.2.10", "32", "tcp4")
	})

	t.Run("NetworkUnavailable is cleared", func(t *testing.T) {
		eventually(t, time.Minute, "NetworkUnavailable=False on every node", func(ctx context.Context) error {
			for _, n := range []string{"node-a", "node-b", "node-c"} {
				node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cond := networkUnavailable(node)
				if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "RouteCreated" {
					return fmt.Errorf("%s: NetworkUnavailable = %+v", n, cond)
				}
			}
			return nil
		})
	})

	t.Run("initial sync is one apply and a steady cluster applies nothing", func(t *testing.T) {
		before := strings.Count(ccm.Log(), `"Routes applied"`)
		time.Sleep(11 * time.Second) // two reconcile periods
		log := ccm.Log()
		if n := strings.Count(log, `"Routes applied"`); n != 1 || before != 1 {
			t.Errorf("routes applies: %d at sync, %d after two idle periods; want 1 and 1", before, n)
		}
		if strings.Contains(log, "Could not create route") {
			t.Errorf("route controller reported a failed create:\n%s", grepLines(log, "Could not create route"))
		}
	})

	t.Run("deleted node loses its route", func(t *testing.T) {
		if err := client.CoreV1().Nodes().Delete(ctx, "node-c", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "node-c route gone from the kernel", func(context.Context) error {
			v4, err := ipRoutes(cloud.CloudNetns, "-4")
			if err != nil {
				return err
			}
			if strings.Contains(v4, "10.244.3.0/24") {
				return fmt.Errorf("still routed:\n%s", v4)
			}
			return nil
		})
		if err := routesPresent(cloud, wantV4[:2], wantV6); err != nil {
			t.Errorf("other routes disturbed: %v", err)
		}
		eventually(t, 30*time.Second, "node-c route gone from the routes output", func(context.Context) error {
			if got := routesOutput(t, workDir); slices.Contains(got, "node-c/10.244.3.0/24>node-c") || len(got) != 3 {
				return fmt.Errorf("routes output = %v", got)
			}
			return nil
		})
		// The state is written before tofu exits; the CCM records the
		// apply (its outputs) after that and then logs it. Stopping it in
		// between would leave a record a restart has to apply again.
		eventually(t, 30*time.Second, "the CCM logged the deletion's apply", func(context.Context) error {
			if n := strings.Count(ccm.Log(), `"Routes applied"`); n < 2 {
				return fmt.Errorf("%d \"Routes applied\" lines, want 2", n)
			}
			return nil
		})
	})

	t.Run("restart applies nothing and keeps the routes", func(t *testing.T) {
		ccm.Stop()
		ccm2 := startCCM(t, cluster, cfg, routeFlags...)
		eventually(t, time.Minute, "route controller ran", func(context.Context) error {
			if !strings.Contains(ccm2.Log(), "Starting route controller") {
				return fmt.Errorf("route controller not started yet")
			}
			return nil
		})
		time.Sleep(11 * time.Second) // two reconcile periods
		if n := strings.Count(ccm2.Log(), `"Routes applied"`); n != 0 {
			t.Errorf("restarted CCM applied routes %d times, want 0", n)
		}
		if err := routesPresent(cloud, wantV4[:2], wantV6); err != nil {
			t.Error(err)
		}
		// A change after the restart is applied on top of what the earlier
		// incarnation applied: the other nodes' routes stay.
		createRoutedNode(t, client, cloud, "node-c", []string{"10.244.4.0/24"})
		eventually(t, time.Minute, "node-c's new route", func(context.Context) error {
			return routesPresent(cloud, []string{"10.244.4.0/24 via " + c.Address + " "}, nil)
		})
		if err := routesPresent(cloud, wantV4[:2], wantV6); err != nil {
			t.Errorf("routes applied before the restart were lost: %v", err)
		}
		if got := routesOutput(t, workDir); len(got) != 4 {
			t.Errorf("routes output after restart = %v", got)
		}
		// The kernel route exists before tofu exits and the CCM logs the
		// apply: wait for the log line, then count.
		eventually(t, 30*time.Second, "the restarted CCM logged its apply", func(context.Context) error {
			if !strings.Contains(ccm2.Log(), `"Routes applied"`) {
				return fmt.Errorf("no \"Routes applied\" yet")
			}
			return nil
		})
		if n := strings.Count(ccm2.Log(), `"Routes applied"`); n != 1 {
			t.Errorf("restarted CCM applied routes %d times for one new node, want 1", n)
		}
		podReachable(t, cloud, "node-a", "fd00:10:244:1::11", "128", "tcp6")
		podReachable(t, cloud, "node-b", "10.244.2.11", "32", "tcp4")
	})
}

// createRoutedNode registers a Node with its pod CIDRs (as nodeipam would
// set them), its InternalIPs (IPv6 too for a dual-stack node) and
// NetworkUnavailable=True (as a CNI plugin would before routes exist).
func createRoutedNode(t *testing.T, client kubernetes.Interface, cloud *localcloud.Cloud, name string, podCIDRs []string) {
	t.Helper()
	info := cloud.Node(name)
	ips := []string{info.Address}
	for _, c := range podCIDRs {
		if strings.Contains(c, ":") {
			if info.AddressV6 == "" {
				t.Fatalf("node %s has no IPv6 address in the local cloud", name)
			}
			ips = append(ips, info.AddressV6)
		}
	}
	created := registerNode(t, client, harness.Node{Name: name, InternalIPs: ips, PodCIDRs: podCIDRs, NetworkUnavailable: true})
	if !slices.Equal(created.Spec.PodCIDRs, podCIDRs) || networkUnavailable(created) == nil {
		t.Fatalf("node %s created without its pod CIDRs or conditions: %+v", name, created)
	}
}

func networkUnavailable(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func ipRoutes(netns, family string) (string, error) {
	out, err := exec.Command("ip", family, "-n", netns, "route").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s route: %v %s", family, err, out)
	}
	return string(out), nil
}

// routesPresent checks the cloud netns' kernel routes for every wanted
// line fragment.
func routesPresent(cloud *localcloud.Cloud, v4, v6 []string) error {
	for family, want := range map[string][]string{"-4": v4, "-6": v6} {
		got, err := ipRoutes(cloud.CloudNetns, family)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				return fmt.Errorf("no route %q in:\n%s", w, got)
			}
		}
	}
	return nil
}

// routesOutput reads the `routes` output from the routes workspace's local
// state (what ListRoutes reports), as sorted "name>target" strings.
func routesOutput(t *testing.T, workDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workDir, "state", "routes.tfstate"))
	if err != nil {
		t.Fatalf("routes state: %v", err)
	}
	var st struct {
		Outputs map[string]struct {
			Value map[string]struct {
				DestinationCIDR string `json:"destination_cidr"`
				TargetNode      string `json:"target_node"`
			} `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("routes state: %v", err)
	}
	var out []string
	for name, r := range st.Outputs["routes"].Value {
		if !strings.HasSuffix(name, "/"+r.DestinationCIDR) {
			t.Errorf("route name %q does not carry its CIDR %s", name, r.DestinationCIDR)
		}
		out = append(out, name+">"+r.TargetNode)
	}
	slices.Sort(out)
	return out
}

// podReachable puts addr on the node netns' loopback (a "pod" address in
// the node's pod CIDR), listens there and connects to it from the cloud
// netns, which only works through the route to that node.
func podReachable(t *testing.T, cloud *localcloud.Cloud, node, addr, bits, network string) {
	t.Helper()
	netns := cloud.Node(node).Netns
	args := []string{"-n", netns, "addr", "add", addr + "/" + bits, "dev", "lo"}
	if strings.Contains(addr, ":") {
		// No duplicate address detection: a tentative address cannot be
		// bound yet ("cannot assign requested address").
		args = append(args, "nodad")
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("add %s to %s: %v %s", addr, node, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "-n", netns, "addr", "del", addr+"/"+bits, "dev", "lo").Run() })
	host := addr
	if strings.Contains(addr, ":") {
		host = "[" + addr + "]"
	}
	l, err := cloud.Listen(node, network, host+":8080")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(conn, node)
			conn.Close()
		}
	}()
	eventually(t, 30*time.Second, "connect to "+addr+" from the cloud netns", func(ctx context.Context) error {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := localcloud.Dial(dctx, cloud.CloudNetns, network, host+":8080")
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(conn)
		if err != nil {
			return err
		}
		if string(b) != node {
			return fmt.Errorf("answered %q, want %q", b, node)
		}
		return nil
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
