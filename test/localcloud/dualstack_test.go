package localcloud

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

// ingressOf is the workspace's ingress output, checked: one VIP per
// family in want (primary first), each from that family's pool.
func ingressOf(t *testing.T, w *workspace, want ...string) []string {
	t.Helper()
	var ing []ingress
	w.output("ingress", &ing)
	if len(ing) != len(want) {
		t.Fatalf("ingress = %+v, want one VIP per family of %v", ing, want)
	}
	ips := make([]string, len(ing))
	for i, in := range ing {
		ip, err := netip.ParseAddr(in.IP)
		pool := shared.VIPPool
		if want[i] == "IPv6" {
			pool = shared.VIPPool6
		}
		if err != nil || in.IPMode != "VIP" || !netip.MustParsePrefix(pool).Contains(ip) {
			t.Fatalf("ingress[%d] = %+v: want a %s VIP from %s", i, in, want[i], pool)
		}
		ips[i] = in.IP
	}
	return ips
}

func onCloudLo(vip string) bool {
	out, _ := exec.Command("ip", "-n", shared.CloudNetns, "addr", "show", "dev", "lo").Output()
	return strings.Contains(string(out), " "+vip+"/128 ")
}

// A dual-stack Service gets an IPv4 and an IPv6 VIP, each with its own
// HAProxy frontend on the same IPv4 nodes; dropping IPv6 releases the IPv6
// VIP and keeps the IPv4 one.
func TestLoadBalancerDualStack(t *testing.T) {
	c := shared
	for _, n := range []string{"node-a", "node-b"} {
		stop, err := c.ServeHTTP(n, 30095, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		stopHz, err := c.ServeHealthz(n, 10266)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stopHz)
	}
	dual := func(s map[string]any) {
		s["ip_families"] = []string{"IPv4", "IPv6"}
		s["ip_family_policy"] = "RequireDualStack"
	}
	vars := func(mutate func(map[string]any)) map[string]any {
		v := lbVars("dual", []port{{"TCP", 80, 30095}}, mutate)
		v["nodes"] = v["nodes"].([]map[string]any)[:2]
		v["health_check"] = map[string]any{"protocol": "HTTP", "port": 10266, "path": "/healthz"}
		return v
	}
	w := newWorkspace(t, "loadbalancer")
	w.destroyOnCleanup()
	w.mustApply(vars(dual))
	ips := ingressOf(t, w, "IPv4", "IPv6")
	v4, v6 := ips[0], ips[1]
	if !vipOnLo(v4) || !onCloudLo(v6) {
		t.Fatalf("VIPs %s and %s are not both on lo in %s", v4, v6, c.CloudNetns)
	}
	if b, err := os.ReadFile(filepath.Join(c.StateDir, "claims", strings.ReplaceAll(v6, ":", "_"))); err != nil || strings.TrimSpace(string(b)) != cluster+"_dual.6" {
		t.Fatalf("claim of %s: %q %v", v6, b, err)
	}
	frag, err := os.ReadFile(filepath.Join(c.StateDir, "fragments", cluster+"_dual.6.cfg"))
	if err != nil || !strings.Contains(string(frag), "bind ["+v6+"]:80\n") {
		t.Fatalf("IPv6 fragment: %v\n%s", err, frag)
	}

	// Both VIPs reach both IPv4 nodes: IPv4 from the host, IPv6 from the
	// cloud netns (the host has no IPv6 route into the cloud).
	from := map[string]string{v4: "host", v6: c.CloudNetns}
	for vip, where := range from {
		client := hostClient
		if where != "host" {
			client = HTTPClient(where, 3*time.Second)
		}
		url := "http://" + netip.AddrPortFrom(netip.MustParseAddr(vip), 80).String() + "/"
		seen := map[string]int{}
		eventually(t, 20*time.Second, "both nodes answer on "+url, func() (bool, string) {
			body, err := testkit.GetOK(context.Background(), client, url)
			if err == nil {
				seen[body]++
			}
			return seen["node-a"] > 0 && seen["node-b"] > 0, strings.TrimSpace(body)
		})
	}

	t.Run("IPv6 dropped", func(t *testing.T) {
		w.mustApply(vars(nil))
		if got := ingressOf(t, w, "IPv4"); got[0] != v4 {
			t.Fatalf("IPv4 VIP changed from %s to %s", v4, got[0])
		}
		if _, err := os.Stat(filepath.Join(c.StateDir, "claims", strings.ReplaceAll(v6, ":", "_"))); !os.IsNotExist(err) || onCloudLo(v6) {
			t.Fatalf("IPv6 VIP %s still claimed or configured (stat: %v)", v6, err)
		}
	})

	t.Run("IPv6 only, requested", func(t *testing.T) {
		want := netip.MustParsePrefix(c.VIPPool6).Addr().Next().Next().Next().String() // ::3
		w.mustApply(vars(func(s map[string]any) {
			s["ip_families"] = []string{"IPv6"}
			s["load_balancer_ips"] = []string{want}
		}))
		if got := ingressOf(t, w, "IPv6"); got[0] != want {
			t.Fatalf("IPv6 VIP = %s, want the requested %s", got[0], want)
		}
		if body, err := testkit.GetOK(context.Background(), HTTPClient(c.CloudNetns, 3*time.Second), "http://["+want+"]:80/"); err != nil {
			t.Fatalf("GET the requested IPv6 VIP: %v %s", err, body)
		}
		if vipOnLo(v4) {
			t.Fatalf("IPv4 VIP %s still on lo for an IPv6-only Service", v4)
		}
		// The health module reads the IPv6 frontend's servers.
		eventually(t, 15*time.Second, "backend health of the IPv6 frontend", func() (bool, string) {
			h := w.health("loadbalancer")
			return reflect.DeepEqual(h, map[string]bool{"node-a": true, "node-b": true}), fmt.Sprint(h)
		})
	})
}

// Families the local cloud cannot serve are refused at plan, naming the
// setting; nothing is written.
func TestLoadBalancerFamiliesRefused(t *testing.T) {
	w := newWorkspace(t, "loadbalancer")
	noV6 := map[string]any{"state_dir": shared.StateDir, "cloud_netns": shared.CloudNetns, "vip_pool": shared.VIPPool}
	for _, tc := range []struct {
		name   string
		mutate func(v map[string]any)
		want   string
	}{
		{"IPv6 only without vip_pool6", func(v map[string]any) {
			v["service"].(map[string]any)["ip_families"] = []string{"IPv6"}
			v["settings"] = noV6
		}, "no IPv6 VIP pool"},
		{"RequireDualStack without vip_pool6", func(v map[string]any) {
			v["service"].(map[string]any)["ip_families"] = []string{"IPv4", "IPv6"}
			v["service"].(map[string]any)["ip_family_policy"] = "RequireDualStack"
			v["settings"] = noV6
		}, "requires dual-stack"},
		{"requested IPv6 outside vip_pool6", func(v map[string]any) {
			v["service"].(map[string]any)["ip_families"] = []string{"IPv6"}
			v["service"].(map[string]any)["load_balancer_ips"] = []string{"fd00:999::7"}
		}, "outside the local cloud's VIP pool " + shared.VIPPool6 + " (settings.vip_pool6)"},
		{"requested IPv6, IPv4 Service", func(v map[string]any) {
			v["service"].(map[string]any)["load_balancer_ips"] = []string{"fd00:252::7"}
		}, "does not have"},
		{"two IPv4 requested", func(v map[string]any) {
			v["service"].(map[string]any)["load_balancer_ips"] = []string{"10.252.0.7", "10.252.0.8"}
		}, "at most one IPv4 and one IPv6"},
		{"vip_pool6 not a network", func(v map[string]any) {
			v["service"].(map[string]any)["ip_families"] = []string{"IPv6"}
			v["settings"] = map[string]any{"state_dir": shared.StateDir, "cloud_netns": shared.CloudNetns, "vip_pool": shared.VIPPool, "vip_pool6": "fd00:252::1/112"}
		}, "settings.vip_pool6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := lbVars("famrefused", []port{{"TCP", 80, 30095}}, nil)
			tc.mutate(v)
			if err := w.apply(v); !errContains(err, tc.want) {
				t.Fatalf("apply = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, f := range fragments(t) {
		if strings.Contains(f, "famrefused") {
			t.Fatalf("refused input wrote fragment %s", f)
		}
	}
}

// The layer-4 and routed variants have IPv4 VIPs only: a Service that
// requires dual-stack is refused at plan, pointing at the default variant.
func TestLoadBalancerIPv4OnlyVariantsRefuseDualStack(t *testing.T) {
	for _, module := range []string{"loadbalancer.l4", "loadbalancer.routed"} {
		t.Run(module, func(t *testing.T) {
			w := newWorkspace(t, module)
			v := lbVars("famrefused", []port{{"TCP", 80, 30095}}, func(s map[string]any) {
				s["ip_families"] = []string{"IPv4", "IPv6"}
				s["ip_family_policy"] = "RequireDualStack"
			})
			if err := w.apply(v); !errContains(err, "requires dual-stack (ipFamilyPolicy RequireDualStack): use the default variant (HAProxy)") {
				t.Fatalf("apply = %v, want the dual-stack refusal", err)
			}
		})
	}
}
