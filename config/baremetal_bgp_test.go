package config

import (
	"strings"
	"testing"
	"testing/fstest"

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
