package hosttest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

// segmentService is a one-port IPv4 Service on address ip, with the
// service.segments map tfccm renders for an address pool's network block.
func segmentService(ip, segments string) string {
	return fmt.Sprintf(`{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ips = [%q], shared_ip = null, segments = %s, source_ranges = [], ip_families = ["IPv4"], ip_family_policy = "SingleStack", session_affinity = "None", proxy_protocol = false }`, ip, segments)
}

// TestBaremetalSegments serves two L2 segments from one set of LB hosts:
// a Service on the default one (settings.vip_pool on eth0, both hosts)
// and one whose address pool lives on a second segment (VLAN 20: its own
// bridge, subnet and interface vlan20 on the hosts, host lb-b only; this
// kernel has no 802.1Q links, so the VLAN is a second link and bridge). Each VIP is on its segment's interface and
// answers from the cloud; the VLAN one is on lb-b alone. At plan, a
// segment naming a host that is not in settings.hosts is refused naming
// the pool and the host, and one whose interface the hosts lack is
// refused naming the interface, before anything is applied.
func TestBaremetalSegments(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	serveNodes(t, cloud, "node-a", "node-b")
	subnet := netip.MustParsePrefix("10.77.20.0/24")
	vlan := "vlan20"
	if err := hs.AddSegment(vlan, subnet); err != nil {
		t.Fatal(err)
	}
	defVIP := netip.MustParsePrefix(hs.VIPPool).Addr().Next().Next().Next().Next().Next().String()
	segVIP := "10.77.20.50"
	segment := func(hosts, iface, sub string) string {
		return fmt.Sprintf(`{ pool = "vlan20", interface = %q, hosts = [%s], subnet = %q }`, iface, hosts, sub)
	}

	_, varsA, tofuA := moduleOf(t, cloud, hs, "loadbalancer", "sega", segmentService(defVIP, "{}"))
	_, varsB, tofuB := moduleOf(t, cloud, hs, "loadbalancer", "segb", segmentService(segVIP, fmt.Sprintf(`{ %q = %s }`, segVIP, segment(`"lb-b"`, vlan, subnet.String()))))
	for _, m := range []struct {
		vars func(...string)
		tofu func(...string) string
	}{{varsA, tofuA}, {varsB, tofuB}} {
		m.vars("node-a", "node-b")
		m.tofu("init", "-input=false", "-no-color")
		m.tofu("apply", "-auto-approve", "-input=false", "-no-color")
		t.Cleanup(func() { m.tofu("destroy", "-auto-approve", "-input=false", "-no-color") })
	}

	lbA, lbB := hs.Host("lb-a"), hs.Host("lb-b")
	testkit.Eventually(t, 20*time.Second, "each VIP on its segment's interface", func(context.Context) error {
		if m := hs.Master(defVIP); m == nil {
			return fmt.Errorf("no host holds %s on eth0", defVIP)
		}
		if dev := lbB.DeviceOf(segVIP); dev != vlan {
			return fmt.Errorf("lb-b holds %s on %q, want %s", segVIP, dev, vlan)
		}
		return nil
	})
	if dev := lbA.DeviceOf(segVIP); dev != "" {
		t.Errorf("lb-a, not on the segment, holds %s on %s", segVIP, dev)
	}
	for _, o := range lbA.Objects() {
		if strings.Contains(o, "segb") {
			t.Errorf("lb-a, not on the segment, has the VLAN Service's %s", o)
		}
	}
	inst, err := os.ReadFile(filepath.Join(lbB.ConfigDir, "keepalived", "c1_segb.conf"))
	if err != nil || !strings.Contains(string(inst), segVIP+"/32 dev "+vlan) {
		t.Errorf("lb-b's instance for the VLAN VIP (%v):\n%s", err, inst)
	}

	// The default segment from this host (as every hosttest test), the
	// other from the cloud netns, the one router on it.
	clients := map[string]*http.Client{defVIP: testkit.NewClient(3 * time.Second), segVIP: localcloud.HTTPClient(cloud.CloudNetns, 3*time.Second)}
	for _, vip := range []string{defVIP, segVIP} {
		client := clients[vip]
		seen := map[string]int{}
		testkit.Eventually(t, 30*time.Second, "both nodes answer on "+vip, func(context.Context) error {
			body, err := testkit.GetOK(context.Background(), client, "http://"+vip+"/")
			if err != nil {
				return err
			}
			if seen[body]++; seen["node-a"] == 0 || seen["node-b"] == 0 {
				return &waiting{seen}
			}
			return nil
		})
	}

	// Refused at plan, naming the pool's segment and what is wrong.
	for _, c := range []struct {
		name, service string
		want          []string
	}{
		{"segc", segmentService("10.77.20.60", fmt.Sprintf(`{ "10.77.20.60" = %s }`, segment(`"lb-a", "lb-z"`, vlan, subnet.String()))),
			[]string{"address pool vlan20's network", "not active in settings.hosts: lb-z"}},
		{"segd", segmentService("10.77.30.60", `{ "10.77.30.60" = { pool = "vlan30", interface = "vlan30", hosts = [], subnet = "10.77.30.0/24" } }`),
			[]string{"has no interface vlan30 for VIP 10.77.30.60"}},
	} {
		dir, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", c.name, c.service)
		vars("node-a", "node-b")
		tofu("init", "-input=false", "-no-color")
		out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "plan", "-input=false", "-no-color")
		if err == nil {
			t.Errorf("%s: plan passed, want it refused:\n%s", c.name, out)
			continue
		}
		msg := strings.Join(strings.Fields(err.Error()+" "+string(out)), " ")
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the plan's error lacks %q:\n%s", c.name, w, msg)
			}
		}
	}
	for _, h := range hs.Hosts {
		for _, o := range h.Objects() {
			if strings.Contains(o, "segc") || strings.Contains(o, "segd") {
				t.Errorf("%s: a refused plan left %s", h.Name, o)
			}
		}
	}
}
