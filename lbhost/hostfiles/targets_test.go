package hostfiles

import (
	"testing"

	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestTargetsFromSettingsWithBGP: with settings.bgp the hosts are BGP
// targets (FRR's tools checked), and every router of bgp.routers but a
// retired one is a target of its own, with the settings' SSH key.
func TestTargetsFromSettingsWithBGP(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		want           []Target
	}{
		{"no bgp", `{"hosts": {"lb-a": {"address": "10.0.0.2"}}, "ssh_private_key_file": "/k"}`,
			[]Target{{Name: "lb-a"}}},
		{"bgp with routers", `{"hosts": {"lb-a": {"address": "10.0.0.2"}}, "ssh_private_key_file": "/k",
			"bgp": {"asn": 64513, "routers": [{"name": "tor", "address": "10.0.0.1", "host_key": "ssh-ed25519 AAAA", "user": "frr-admin", "sudo": true},
			{"name": "old", "address": "10.0.0.9", "retired": true}]}}`,
			[]Target{{Name: "lb-a", BGP: true}, {Name: "router tor", Router: true, BGP: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ty, err := ctyjson.ImpliedType([]byte(tc.settings))
			if err != nil {
				t.Fatal(err)
			}
			v, err := ctyjson.Unmarshal([]byte(tc.settings), ty)
			if err != nil {
				t.Fatal(err)
			}
			got, err := TargetsFromSettings(v)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("targets %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Name != w.Name || g.BGP != w.BGP || g.Router != w.Router || g.SSH.PrivateKeyFile != "/k" {
					t.Errorf("target %d = %+v, want %+v", i, g, w)
				}
				if g.Router && (g.SSH.Host != "10.0.0.1" || g.SSH.User != "frr-admin" || !g.SSH.Sudo || g.SSH.HostKey != "ssh-ed25519 AAAA") {
					t.Errorf("router target %+v: want tor's address, login, sudo and host key", g.SSH)
				}
			}
		})
	}
}
