package localcloud

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestL4SharedVIP: two Services of the l4 variant share one VIP
// (tfccm.io/allow-shared-ip, MetalLB's rules: one key, disjoint ports):
// DNS over UDP from one, over TCP from the other, both answered through
// the VIP; a third one on a port the VIP already serves is refused, as is
// a Service without the share token; deleting one keeps the other served
// and the address claimed until the last sharer goes.
func TestL4SharedVIP(t *testing.T) {
	if !shared.RoutedVIPs {
		t.Fatal("the local cloud runs no lbhost-router: bin/lbhost-router is missing (make build)")
	}
	stop, err := shared.ServeHealthz("node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	serveDNS(t, "node-a", 30063)
	serveDNS(t, "node-a", 30064)
	token := "s0123456789abcdef"
	share := func(vip string) func(map[string]any) {
		return func(s map[string]any) {
			s["shared_ip"] = token
			if vip != "" {
				s["load_balancer_ip"] = vip
			}
		}
	}

	udp := newWorkspace(t, "loadbalancer.l4")
	udp.destroyOnCleanup()
	udp.mustApply(lbVars("shareu", []port{{"UDP", 53, 30063}}, share("")))
	vip := vipOf(udp)
	tcp := newWorkspace(t, "loadbalancer.l4")
	tcp.destroyOnCleanup()
	tcp.mustApply(lbVars("sharet", []port{{"TCP", 53, 30064}}, share(vip)))
	if got := vipOf(tcp); got != vip {
		t.Fatalf("the second Service got %s, want the shared %s", got, vip)
	}
	addr := net.JoinHostPort(vip, "53")
	for _, network := range []string{"udp", "tcp"} {
		eventually(t, 15*time.Second, network+" answered through the shared VIP", func() (bool, string) {
			seen, err := askedBy(t, network, addr, 3)
			return err == nil && seen["node-a"] == 3, fmt.Sprint(seen, err, l4Loaded())
		})
	}

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			ports []port
			svc   func(map[string]any)
			want  string
		}{
			{"port taken", []port{{"TCP", 53, 30065}}, share(vip), "is already used by load balancer " + cluster + "_sharet"},
			{"no share key", []port{{"TCP", 54, 30065}}, func(s map[string]any) { s["load_balancer_ip"] = vip }, "is already used by load balancer"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w := newWorkspace(t, "loadbalancer.l4")
				t.Cleanup(func() {
					if err := w.destroy(); err != nil {
						t.Errorf("destroy: %v", err)
					}
				})
				vars := lbVars("sharex", tc.ports, tc.svc)
				// Kept for the destroy: the VIP can be claimed before the
				// frontend is refused.
				w.good, _ = json.Marshal(vars)
				err := w.apply(vars)
				if !errContains(err, tc.want) {
					t.Fatalf("apply: %v, want an error containing %q", err, tc.want)
				}
				if _, err := os.Stat(filepath.Join(shared.StateDir, "l4", cluster+"_sharex.json")); err == nil {
					t.Errorf("a refused load balancer wrote its config")
				}
			})
		}
	})

	// The UDP Service goes: TCP still answers, UDP is refused, the VIP
	// stays claimed by the TCP one.
	if err := udp.destroy(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "UDP gone, TCP served", func() (bool, string) {
		_, uerr := AskDNS("udp", addr)
		_, terr := AskDNS("tcp", addr)
		return uerr != nil && terr == nil, fmt.Sprint(uerr, terr, l4Loaded())
	})
	claim, err := os.ReadFile(filepath.Join(shared.StateDir, "claims", vip))
	if err != nil || !strings.Contains(string(claim), cluster+"_sharet") || strings.Contains(string(claim), cluster+"_shareu") {
		t.Errorf("claim on %s after the first sharer left: %q %v", vip, claim, err)
	}
	if err := tcp.destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared.StateDir, "claims", vip)); err == nil {
		b, _ := os.ReadFile(filepath.Join(shared.StateDir, "claims", vip))
		t.Errorf("claim on %s left after the last sharer went: %q", vip, b)
	}
}
