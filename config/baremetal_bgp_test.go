package config

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

func bgpValues(m map[string]any) {
	m["bgp"] = map[string]any{
		"asn":            64513,
		"passwordSecret": "tfccm-bgp", "passwordFile": "/etc/tfccm/bgp/password",
		"bfdProfile": map[string]any{"receiveIntervalMs": 100, "transmitIntervalMs": 100, "detectMultiplier": 3},
		"peers":      []any{map[string]any{"name": "tor-b", "address": "192.168.20.1", "asn": 64512, "hosts": []string{"lb-b"}}},
		"routers": []any{map[string]any{"name": "tor-a", "address": "192.168.10.1", "address6": "fd00:10::1", "hostKey": keyB, "user": "frradmin",
			"asn": 64512, "routerPasswordFile": "/etc/frr/tfccm.pw", "keepaliveTime": 3, "holdTime": 9, "maximumPaths": 8}},
	}
}

func bgpRouter(m map[string]any) map[string]any {
	return m["bgp"].(map[string]any)["routers"].([]any)[0].(map[string]any)
}

// TestBaremetalBGPValuesAreTheSettingsHCLGives: baremetal.bgp becomes
// load_balancer.settings.bgp as the same settings written in HCL, the
// password only as the mounted Secret's file on every session.
func TestBaremetalBGPValuesAreTheSettingsHCLGives(t *testing.T) {
	got, err := ParseFS(fstest.MapFS{"cloud.hcl": {Data: []byte(baremetalHCL)}, "baremetal.json": {Data: baremetalJSON(t, bgpValues)}}, "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse([]byte(`cluster_name = "prod"
template_set = "baremetal"
load_balancer {
  settings = {
    bgp = {
      asn = 64513
      peers = [{ name = "tor-b", address = "192.168.20.1", asn = 64512, hosts = ["lb-b"], bfd_profile = "bfd", password_file = "/etc/tfccm/bgp/password" }]
      routers = [{ name = "tor-a", address = "192.168.10.1", address6 = "fd00:10::1", host_key = "`+keyB+`", user = "frradmin", asn = 64512, hosts = null,
                   keepalive_time = 3, hold_time = 9, maximum_paths = 8, bfd_profile = "bfd",
                   password_file = "/etc/tfccm/bgp/password", router_password_file = "/etc/frr/tfccm.pw" }]
      bfd_profiles = [{ name = "bfd", receive_interval_ms = 100, transmit_interval_ms = 100, detect_multiplier = 3 }]
    }
  }
}
`), "want.hcl")
	if err != nil {
		t.Fatal(err)
	}
	g, w := got.LoadBalancer.Settings.GetAttr("bgp"), want.LoadBalancer.Settings.GetAttr("bgp")
	gj, err := ctyjson.Marshal(g, g.Type())
	if err != nil {
		t.Fatal(err)
	}
	wj, err := ctyjson.Marshal(w, w.Type())
	if err != nil {
		t.Fatal(err)
	}
	if string(gj) != string(wj) {
		t.Errorf("settings.bgp\n got %s\nwant %s", gj, wj)
	}
}

func TestBadBaremetalBGPValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"inline password", func(m map[string]any) { bgpRouter(m)["password"] = "s3cret" }, `unknown field "password"`},
		{"asn clash", func(m map[string]any) { bgpRouter(m)["asn"] = 64513 }, "baremetal.bgp.routers[0].asn: AS 64513 is baremetal.bgp.asn"},
		{"reserved asn", func(m map[string]any) { m["bgp"].(map[string]any)["asn"] = 23456 }, "baremetal.bgp.asn: must be an AS number"},
		{"router address", func(m map[string]any) { bgpRouter(m)["address"] = "tor-a.example" }, "baremetal.bgp.routers[0].address"},
		{"router host key", func(m map[string]any) { bgpRouter(m)["hostKey"] = "ssh-ed25519 AAAA\"}\n${x}" }, "baremetal.bgp.routers[0].hostKey"},
		{"password on one side", func(m map[string]any) { delete(bgpRouter(m), "routerPasswordFile") }, "baremetal.bgp.routers[0].routerPasswordFile"},
		{"peer named as a router", func(m map[string]any) {
			m["bgp"].(map[string]any)["peers"].([]any)[0].(map[string]any)["name"] = "tor-a"
		}, "baremetal.bgp.routers[0].name: tor-a is also a peer's name"},
		{"unknown host", func(m map[string]any) { bgpRouter(m)["hosts"] = []string{"lb-z"} }, `baremetal.bgp.routers[0].hosts[0]: "lb-z" is not one of baremetal.hosts`},
		{"peer address for no peer", func(m map[string]any) { host(m, 0)["peerAddresses"] = map[string]string{"tor-z": "10.9.0.1"} },
			"baremetal.hosts[0].peerAddresses.tor-z: not the name of a peer or router"},
		{"peer address of the other family", func(m map[string]any) { host(m, 1)["peerAddresses"] = map[string]string{"tor-a-6": "10.9.0.1"} },
			"baremetal.hosts[1].peerAddresses.tor-a-6: must be an IPv6 address"},
		{"peer address not an address", func(m map[string]any) { host(m, 1)["peerAddresses"] = map[string]string{"tor-b": "10.9.0.1\"\n${x}"} },
			"baremetal.hosts[1].peerAddresses.tor-b: must be an IPv4 address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := baremetalJSON(t, func(m map[string]any) { bgpValues(m); tc.edit(m) })
			_, err := ParseFS(fstest.MapFS{"cloud.hcl": {Data: []byte(baremetalHCL)}, "baremetal.json": {Data: values}}, "cloud.hcl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "AAAAC3") {
				t.Errorf("error quotes a secret or a key: %v", err)
			}
		})
	}
}

// TestBaremetalPeerAddresses: a host's peerAddresses (hosts on routed
// ports) become its settings.hosts[NAME].peer_addresses, and without bgp
// they are refused.
func TestBaremetalPeerAddresses(t *testing.T) {
	values := baremetalJSON(t, func(m map[string]any) {
		bgpValues(m)
		host(m, 0)["peerAddresses"] = map[string]string{"tor-a": "198.19.0.1", "tor-a-6": "fd00:254::2"}
	})
	got, err := ParseFS(fstest.MapFS{"cloud.hcl": {Data: []byte(baremetalHCL)}, "baremetal.json": {Data: values}}, "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	hosts := got.LoadBalancer.Settings.GetAttr("hosts")
	pa := hosts.GetAttr("lb-a").GetAttr("peer_addresses")
	if pa.LengthInt() != 2 || pa.Index(cty.StringVal("tor-a")).AsString() != "198.19.0.1" || pa.Index(cty.StringVal("tor-a-6")).AsString() != "fd00:254::2" {
		t.Errorf("lb-a's peer_addresses = %#v", pa)
	}
	if hosts.GetAttr("lb-b").Type().HasAttribute("peer_addresses") {
		t.Errorf("lb-b has peer_addresses without peerAddresses")
	}
	values = baremetalJSON(t, func(m map[string]any) { host(m, 0)["peerAddresses"] = map[string]string{"tor-a": "198.19.0.1"} })
	if _, err := ParseFS(fstest.MapFS{"cloud.hcl": {Data: []byte(baremetalHCL)}, "baremetal.json": {Data: values}}, "cloud.hcl"); err == nil || !strings.Contains(err.Error(), "baremetal.hosts[0].peerAddresses: is for bgp") {
		t.Errorf("peerAddresses without bgp: err = %v", err)
	}
}
