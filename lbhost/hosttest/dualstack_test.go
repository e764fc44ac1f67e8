package hosttest_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

const dualService = `{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ips = [], shared_ip = null, source_ranges = [], ip_families = ["IPv6", "IPv4"], ip_family_policy = "RequireDualStack", session_affinity = "None", proxy_protocol = false }`

// TestBaremetalDualStack applies the baremetal set's loadbalancer module
// for a dual-stack Service (IPv6 primary) on two LB hosts: an IPv6 and an
// IPv4 VIP, each held by its own keepalived instance (the IPv6 one VRRPv3
// over the hosts' IPv6 addresses), both served by HAProxy from the IPv4
// nodes; stopping keepalived on the master moves the IPv6 VIP (and the
// IPv4 one) to the other host while a client keeps asking; destroy leaves
// nothing.
func TestBaremetalDualStack(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	serveNodes(t, cloud)
	_, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", "dual", dualService)
	vars("node-a", "node-b")
	tofu("init", "-input=false", "-no-color")
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			tofu("destroy", "-auto-approve", "-input=false", "-no-color")
		}
	})
	var ing []struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(tofu("output", "-json", "ingress")), &ing); err != nil || len(ing) != 2 {
		t.Fatalf("ingress %v: %v", ing, err)
	}
	v6, v4 := ing[0].IP, ing[1].IP
	if !netip.MustParsePrefix(hs.VIPPool6).Contains(netip.MustParseAddr(v6)) || !netip.MustParsePrefix(hs.VIPPool).Contains(netip.MustParseAddr(v4)) {
		t.Fatalf("ingress %v: want an IPv6 VIP from %s first, then an IPv4 one from %s", ing, hs.VIPPool6, hs.VIPPool)
	}

	// One instance per family on each host; the IPv6 one unicasts over IPv6.
	lbA := hs.Host("lb-a")
	inst, err := os.ReadFile(filepath.Join(lbA.ConfigDir, "keepalived", "c1_dual.6.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unicast_src_ip " + lbA.Address6 + "\n", "        " + hs.Host("lb-b").Address6 + "\n", v6 + "/128 dev eth0"} {
		if !strings.Contains(string(inst), want) {
			t.Errorf("lb-a's IPv6 instance lacks %q:\n%s", want, inst)
		}
	}

	get := func(vip string) (string, error) {
		client := testkit.NewClient(3 * time.Second)
		if strings.Contains(vip, ":") {
			client = localcloud.HTTPClient(cloud.CloudNetns, 3*time.Second)
		}
		return testkit.GetOK(context.Background(), client, "http://"+netip.AddrPortFrom(netip.MustParseAddr(vip), 80).String()+"/")
	}
	for _, vip := range []string{v6, v4} {
		seen := map[string]int{}
		testkit.Eventually(t, 30*time.Second, "both nodes answer on "+vip, func(context.Context) error {
			body, err := get(vip)
			if err != nil {
				return err
			}
			if seen[body]++; seen["node-a"] == 0 || seen["node-b"] == 0 {
				return &waiting{seen}
			}
			return nil
		})
	}

	master := hs.Master(v6)
	if master == nil {
		t.Fatalf("no host holds the IPv6 VIP %s", v6)
	}
	f, err := hs.MeasureFailover(v6, 80, func(m *hosttest.Host) { m.StopKeepalived(syscall.SIGTERM) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("IPv6 VIP failover: %s", f)
	// The timing goals are the bench's; a shared machine's load must not
	// fail this run, but most requests must get through.
	if f.Lost > f.Requests/2 {
		t.Errorf("failover %s: most requests lost", f)
	}
	testkit.Eventually(t, 15*time.Second, "the IPv4 VIP moves too", func(context.Context) error {
		if h := hs.Master(v4); h == nil || h == master {
			return &waiting{map[string]int{"moved": 0}}
		}
		return nil
	})
	for _, vip := range []string{v6, v4} {
		if body, err := get(vip); err != nil {
			t.Errorf("GET %s after the failover: %v %s", vip, err, body)
		}
	}
	if err := master.StartKeepalived(); err != nil {
		t.Fatal(err)
	}

	tofu("destroy", "-auto-approve", "-input=false", "-no-color")
	destroyed = true
	for _, h := range hs.Hosts {
		if objs := h.Objects(); len(objs) != 0 {
			t.Errorf("%s: objects left after destroy: %v", h.Name, objs)
		}
		if h.HasAddress(v6) {
			t.Errorf("%s still holds %s after destroy", h.Name, v6)
		}
	}
}

type waiting struct{ seen map[string]int }

func (w *waiting) Error() string {
	b, _ := json.Marshal(w.seen)
	return "not yet: " + string(b)
}
