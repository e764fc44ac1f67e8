package templates

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// TestAnnounced: what a load balancer's applied inputs say of its
// announcement, the one-way rule of the take-over from MetalLB.
func TestAnnounced(t *testing.T) {
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
	rendered := func(standby bool) string {
		ws, err := local.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{IPs: ip, Standby: standby})
		if err != nil {
			t.Fatalf("standby %t: %v", standby, err)
		}
		return string(ws.Files[TfvarsFile])
	}
	announceLine := regexp.MustCompile(`(?m)^\s*announce\s*=.*\n`)
	if !announceLine.MatchString(rendered(false)) {
		t.Fatalf("no announce line in the rendered inputs:\n%s", rendered(false))
	}
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		want    bool
		wantErr string
	}{
		{name: "applied announcing", files: map[string][]byte{TfvarsFile: []byte(rendered(false))}, want: true},
		{name: "applied prepared", files: map[string][]byte{TfvarsFile: []byte(rendered(true))}},
		{name: "applied before announce existed", files: map[string][]byte{TfvarsFile: []byte(announceLine.ReplaceAllString(rendered(true), ""))}, want: true},
		{name: "no inputs file", files: map[string][]byte{"main.tf": nil}, wantErr: "hold no " + TfvarsFile},
		{name: "announce not a bool", files: map[string][]byte{TfvarsFile: []byte(announceLine.ReplaceAllString(rendered(true), "announce = \"no\"\n"))}, wantErr: "not a bool"},
		{name: "inputs that do not parse", files: map[string][]byte{TfvarsFile: []byte("service = {")}, wantErr: "read " + TfvarsFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Announced(tc.files)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Announced = %t, %v; want an error with %q", got, err, tc.wantErr)
				}
			case err != nil || got != tc.want:
				t.Fatalf("Announced = %t, %v; want %t", got, err, tc.want)
			}
		})
	}
}
