package templates

import (
	"net/netip"
	"strings"
	"testing"
)

// TestRenderStandby: a prepared load balancer renders service.announce =
// false with a template that declares it, and is refused, naming the
// template, by one that does not.
func TestRenderStandby(t *testing.T) {
	local, err := LoadBuiltin("local")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, `
cluster_name = "demo"
load_balancer {
  settings = { state_dir = "/run/tfccm-local", cloud_netns = "tfccm-cloud", vip_pool = "10.252.0.0/24" }
}
routes {
  settings = { cloud_netns = "tfccm-cloud" }
}
`)
	ip := []netip.Addr{netip.MustParseAddr("10.252.0.200")}
	for _, tc := range []struct {
		standby bool
		want    string
	}{{false, "announce          = true"}, {true, "announce          = false"}} {
		ws, err := local.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{IPs: ip, Standby: tc.standby})
		if err != nil {
			t.Fatalf("standby %t: %v", tc.standby, err)
		}
		if got := string(ws.Files[TfvarsFile]); !strings.Contains(got, tc.want) {
			t.Errorf("standby %t: tfvars lack %q:\n%s", tc.standby, tc.want, got)
		}
	}
	_, err = fullSet(t).RenderLoadBalancer(testConfig(t, "cluster_name = \"demo\"\n"), svc(nil), testNodes(), Addresses{IPs: ip, Standby: true})
	if err == nil || !strings.Contains(err.Error(), "template loadbalancer cannot prepare") {
		t.Fatalf("a template without service.announce, standby: %v, want it refused", err)
	}
}
