package templates

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const peeringHosts = `hosts = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }
    vip_pool = "10.0.0.0/24", vrrp_interface = "eth0", ssh_agent_socket = "/run/agent"`

// TestRenderPeering: the peering workspace is rendered when the set has a
// bgp module and load_balancer.settings carry a non-null bgp, with the
// cluster's settings as its only input of substance; otherwise nothing
// (or an error naming the setting).
func TestRenderPeering(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      string
		settings string
		want     bool
		wantIn   []string // substrings of the tfvars
		wantErr  string
	}{
		{name: "baremetal with bgp", set: "baremetal",
			settings: peeringHosts + `
    bgp = { asn = 64512, peers = [{ name = "tor", address = "10.0.0.1", asn = 64500 }] }`,
			want: true, wantIn: []string{`asn = 64512`, `name = "tor"`, `address = "10.0.0.2"`}},
		{name: "baremetal without bgp", set: "baremetal", settings: peeringHosts},
		{name: "baremetal with bgp = null", set: "baremetal", settings: peeringHosts + `
    bgp = null`},
		{name: "set without a bgp module", set: "hcloud", settings: `bgp = { asn = 64512 }`},
		{name: "bgp of the wrong type", set: "baremetal", settings: peeringHosts + `
    bgp = { asn = "many" }`,
			wantErr: "load_balancer.settings.bgp in the cloud config"},
		{name: "bgp without the hosts", set: "baremetal", settings: `bgp = { asn = 64512 }`,
			wantErr: `requires key "hosts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, "cluster_name = \"c\"\nload_balancer {\n  settings = {\n    "+tc.settings+"\n  }\n}")
			set, err := LoadBuiltin(tc.set)
			if err != nil {
				t.Fatal(err)
			}
			ws, ok, err := set.RenderPeering(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.want || (ws != nil) != tc.want || set.PeeringWanted(cfg) != tc.want {
				t.Fatalf("RenderPeering ok = %t (spec %t), PeeringWanted = %t; want %t", ok, ws != nil, set.PeeringWanted(cfg), tc.want)
			}
			if !ok {
				return
			}
			if ws.Name != PeeringWorkspaceName || ws.Module != PeeringDir || ws.Coalesce || ws.Owner == nil || *ws.Owner != ClusterOwner {
				t.Errorf("spec name %q module %q coalesce %t owner %v (want the cluster: catalogued for a new pod)", ws.Name, ws.Module, ws.Coalesce, ws.Owner)
			}
			if _, ok := ws.Files[BackendFile]; !ok {
				t.Errorf("no %s: the peering keeps state like any applied workspace", BackendFile)
			}
			vars := strings.Join(strings.Fields(string(ws.Files[TfvarsFile])), " ") // hclwrite aligns the =
			for _, w := range tc.wantIn {
				if !strings.Contains(vars, w) {
					t.Errorf("tfvars lack %q:\n%s", w, ws.Files[TfvarsFile])
				}
			}
			again, _, err := set.RenderPeering(cfg)
			if err != nil || again.Hash != ws.Hash {
				t.Errorf("render not stable: %v, %s != %s", err, again.Hash, ws.Hash)
			}
		})
	}
}

// TestPeeringServes: only the set's bgp variant rides on the peering.
func TestPeeringServes(t *testing.T) {
	set, err := LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		variant string
		want    bool
	}{{"", false}, {"l4", false}, {"bgp", true}, {"missing", false}} {
		s := svc(func(s *corev1.Service) {
			if tc.variant != "" {
				s.Annotations["tfccm.io/template"] = tc.variant
			}
		})
		if got := set.PeeringServes(s); got != tc.want {
			t.Errorf("variant %q: PeeringServes = %t, want %t", tc.variant, got, tc.want)
		}
	}
	hc, err := LoadBuiltin("hcloud")
	if err != nil {
		t.Fatal(err)
	}
	if hc.Peering() != nil || hc.PeeringServes(svc(nil)) {
		t.Error("hcloud has no peering")
	}
}
