package localcloud

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveDNS runs ServeDNS until the test ends.
func serveDNS(t *testing.T, node string, port int) {
	t.Helper()
	stop, err := shared.ServeDNS(node, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// askedBy asks n times over network and counts the answering nodes; every
// answer must show the host's own address (no proxy, no SNAT).
func askedBy(t *testing.T, network, addr string, n int) (map[string]int, error) {
	t.Helper()
	seen := map[string]int{}
	for range n {
		txt, err := AskDNS(network, addr)
		if err != nil {
			return seen, err
		}
		node, rest, _ := strings.Cut(txt, " saw ")
		if want := shared.HostAddress + " over " + network; rest != want {
			t.Errorf("%s: backend saw %q, want %q (the client's own address)", network, rest, want)
		}
		seen[node]++
	}
	return seen, nil
}

// routerLog is the end of the cloud's lbhost-router log.
func routerLog() string {
	b, _ := os.ReadFile(filepath.Join(shared.StateDir, "tmp", "router.log"))
	return string(b[max(0, len(b)-2000):])
}

func l4Loaded() string {
	out, _ := exec.Command("ip", "netns", "exec", shared.CloudNetns, "nft", "list", "table", "ip", "lbhost_l4").CombinedOutput()
	return string(out)
}

// TestL4LoadBalancer drives the local set's l4 variant: a mixed-protocol
// Service (DNS on 53/UDP and 53/TCP) in front of real DNS servers on the
// nodes, answered through the VIP over UDP and TCP; the nodes see the
// client's own address; a node failing its health check stops getting
// queries within seconds, and the health module reports it; externalTrafficPolicy: Local (the Service's
// healthCheckNodePort) sends them only to nodes with endpoints; a removed
// table is restored by the router and an edited config is a diff; destroy
// removes rules, config and claim.
func TestL4LoadBalancer(t *testing.T) {
	if !shared.RoutedVIPs {
		t.Fatal("the local cloud runs no lbhost-router: bin/lbhost-router is missing (make build)")
	}
	w := newWorkspace(t, "loadbalancer.l4")
	w.destroyOnCleanup()
	stopA, err := shared.ServeHealthz("node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stopA()
	stopB, err := shared.ServeHealthz("node-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		serveDNS(t, n, 30053)
	}
	// node-c's healthCheckNodePort (for externalTrafficPolicy: Local).
	stopHC, err := shared.ServeHealthz("node-c", 31999)
	if err != nil {
		t.Fatal(err)
	}
	defer stopHC()
	ports := []port{{"UDP", 53, 30053}, {"TCP", 53, 30053}}
	w.mustApply(lbVars("dns", ports, nil))
	vip := vipOf(w)
	addr := net.JoinHostPort(vip, "53")

	// node-c fails its health check: queries reach node-a and node-b.
	for _, network := range []string{"udp", "tcp"} {
		eventually(t, 15*time.Second, network+" queries answered by node-a and node-b", func() (bool, string) {
			seen, err := askedBy(t, network, addr, 30)
			return err == nil && seen["node-a"] > 0 && seen["node-b"] > 0 && seen["node-c"] == 0, fmt.Sprint(seen, err, l4Loaded())
		})
	}

	// The health module (tfccm.io/Degraded) reports what the router
	// forwards to: node-c (no kube-proxy health endpoint) is out.
	eventually(t, 15*time.Second, "health: node-a and node-b healthy, node-c not", func() (bool, string) {
		got := w.health("loadbalancer.l4")
		return fmt.Sprint(got) == "map[node-a:true node-b:true node-c:false]", fmt.Sprint(got)
	})

	t.Run("failed node out within seconds", func(t *testing.T) {
		stopB()
		start := time.Now()
		eventually(t, 15*time.Second, "only node-a answers", func() (bool, string) {
			seen, err := askedBy(t, "udp", addr, 10)
			return err == nil && len(seen) == 1 && seen["node-a"] == 10, fmt.Sprint(seen, err)
		})
		// interval 1 s, fall 2: ~2 s plus a tick of the router.
		t.Logf("node-b out of the UDP rotation %.1f s after its health check failed", time.Since(start).Seconds())
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("node-b took %s to leave the rotation", d)
		}
		if got := fmt.Sprint(w.health("loadbalancer.l4")); got != "map[node-a:true node-b:false node-c:false]" {
			t.Errorf("health after node-b failed: %s", got)
		}
	})

	t.Run("externalTrafficPolicy Local", func(t *testing.T) {
		// Only node-c has a ready endpoint: only it passes the Service's
		// healthCheckNodePort, and it sees the client's own address.
		vars := lbVars("dns", ports, func(s map[string]any) { s["external_traffic_policy"] = "Local"; s["health_check_node_port"] = 31999 })
		vars["health_check"] = map[string]any{"protocol": "HTTP", "port": 31999, "path": "/healthz"}
		w.mustApply(vars)
		eventually(t, 15*time.Second, "only node-c answers", func() (bool, string) {
			seen, err := askedBy(t, "udp", addr, 10)
			return err == nil && len(seen) == 1 && seen["node-c"] == 10, fmt.Sprint(seen, err)
		})
		if vipOf(w) != vip {
			t.Errorf("the VIP changed on an update")
		}
	})

	t.Run("drift", func(t *testing.T) {
		// The router restores a table removed behind its back.
		if out, err := exec.Command("ip", "netns", "exec", shared.CloudNetns, "nft", "delete", "table", "ip", "lbhost_l4").CombinedOutput(); err != nil {
			t.Fatalf("delete table: %v: %s", err, out)
		}
		eventually(t, 10*time.Second, "the router loads the table again", func() (bool, string) {
			_, err := AskDNS("udp", addr)
			return err == nil, fmt.Sprint(err, "\n", l4Loaded(), "\nrouter log:\n", routerLog())
		})
		// An edited config is a diff; the next apply writes it back.
		file := filepath.Join(shared.StateDir, "l4", cluster+"_dns.json")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(strings.Replace(string(b), `"session_affinity": "None"`, `"session_affinity": "ClientIP"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, changed := w.plan(); !changed || !strings.Contains(out, "lbhost_l4_frontend.lb") {
			t.Fatalf("an edited config is no diff:\n%s", out)
		}
		w.mustApply(lbVars("dns", ports, func(s map[string]any) { s["external_traffic_policy"] = "Local"; s["health_check_node_port"] = 31999 }))
		if out, changed := w.plan(); changed {
			t.Fatalf("diff after the apply that repaired the drift:\n%s", out)
		}
	})

	if err := w.destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared.StateDir, "l4", cluster+"_dns.json")); err == nil {
		t.Errorf("config left after destroy")
	}
	if _, err := os.Stat(filepath.Join(shared.StateDir, "claims", vip)); err == nil {
		t.Errorf("claim on %s left after destroy", vip)
	}
	eventually(t, 10*time.Second, "the rules removed", func() (bool, string) {
		loaded := l4Loaded()
		return !strings.Contains(loaded, vip), loaded
	})
}

// TestL4BadInput: what the l4 variant cannot do fails at plan, before
// anything is created: SCTP on a kernel without it (this machine's), the
// PROXY protocol, an IPv6 source range.
func TestL4BadInput(t *testing.T) {
	w := newWorkspace(t, "loadbalancer.l4")
	t.Cleanup(func() {
		if w.good != nil { // a bad input applied after all
			_ = w.destroy()
		}
	})
	for _, tc := range []struct {
		name   string
		ports  []port
		mutate func(map[string]any)
		want   string
	}{
		{"sctp", []port{{"SCTP", 3868, 30868}}, nil, "SCTP is not available"},
		{"proxy protocol", []port{{"TCP", 80, 30080}}, func(s map[string]any) { s["proxy_protocol"] = true }, "cannot send the PROXY protocol"},
		{"ipv6 source range", []port{{"TCP", 80, 30080}}, func(s map[string]any) { s["source_ranges"] = []string{"2001:db8::/32"} }, "IPv4 network CIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/proc/sys/net/sctp"); tc.name == "sctp" && err == nil {
				t.Skip("this kernel has SCTP (the test machines' has none)")
			}
			err := w.apply(lbVars("l4bad", tc.ports, tc.mutate))
			if !errContains(err, tc.want) {
				t.Errorf("apply: %v, want an error containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(shared.StateDir, "l4", cluster+"_l4bad.json")); err == nil {
				t.Errorf("a rejected load balancer wrote its config")
			}
			claims, _ := os.ReadDir(filepath.Join(shared.StateDir, "claims"))
			for _, c := range claims {
				if b, _ := os.ReadFile(filepath.Join(shared.StateDir, "claims", c.Name())); strings.TrimSpace(string(b)) == cluster+"_l4bad" {
					t.Errorf("a rejected load balancer claimed %s", c.Name())
				}
			}
		})
	}
}
