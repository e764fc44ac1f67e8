package templates

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBaremetalBGPRouterNeighbors evaluates the baremetal set's bgp
// module (tofu console: no host is reached) for hosts on routed ports:
// a peer's neighbours are the hosts' peer_addresses for it, else their
// address or address6 by the peer's family (a router's NAME-6 too), and
// a peer_addresses key that names no peer, or an address of the other
// family, is refused naming the setting.
func TestBaremetalBGPRouterNeighbors(t *testing.T) {
	eval := func(t *testing.T, lbA, lbB string) (string, error) {
		t.Helper()
		vars := `settings = {
  hosts = {
    lb-a = { address = "10.0.0.2", address6 = "fd00::2", host_key = "ssh-ed25519 AAAA", ` + lbA + ` }
    lb-b = { address = "10.0.0.3", address6 = "fd00::3", host_key = "ssh-ed25519 AAAA", ` + lbB + ` }
  }
  vip_pool             = "198.51.100.0/24"
  ssh_private_key_file = "/etc/tfccm/ssh/id_ed25519"
  bgp = {
    asn = 64513
    peers = [
      { name = "tor", address = "10.0.0.1", asn = 64512 },
      { name = "tor6", address = "fd00::1", asn = 64512 },
      { name = "tor-lb-a", address = "198.19.0.0", asn = 64512, hosts = ["lb-a"] },
    ]
    routers = [{ name = "r1", address = "10.0.0.254", address6 = "fd00::fe", asn = 64600, host_key = "ssh-ed25519 AAAA", hosts = ["lb-b"] }]
  }
}
`
		tf := clusterModule(t, "baremetal/bgp", vars)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := tf.Command(ctx, "console", "-no-color")
		cmd.Stdin = strings.NewReader("jsonencode({ for name, p in local.router_neighbors : name => p.neighbors })\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := eval(t, `peer_addresses = { tor-lb-a = "198.19.0.1" }`, `peer_addresses = { r1-6 = "fd00:1::3" }`)
	if err != nil || strings.Contains(out, "Error") {
		t.Fatalf("console: %v\n%s", err, out)
	}
	var encoded string
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &encoded); err != nil {
		t.Fatalf("console output %q: %v", out, err)
	}
	var got map[string][]string
	if err := json.Unmarshal([]byte(encoded), &got); err != nil {
		t.Fatalf("router_neighbors' neighbours %q: %v", encoded, err)
	}
	want := map[string][]string{
		"tor":      {"10.0.0.2", "10.0.0.3"},
		"tor6":     {"fd00::2", "fd00::3"},
		"tor-lb-a": {"198.19.0.1"},
		"r1":       {"10.0.0.3"},
		"r1-6":     {"fd00:1::3"},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("router_neighbors[%s].neighbors = %v, want %v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("router_neighbors has %d peers, want %d: %v", len(got), len(want), got)
	}

	for _, tc := range []struct{ name, lbA, want string }{
		{"no such peer", `peer_addresses = { tor-x = "198.19.0.1" }`, "every key must name a peer"},
		{"a router's IPv6 peer", `peer_addresses = { r1 = "fd00:1::2" }`, "every value must be an address of its peer's family"},
		{"an IPv4 peer", `peer_addresses = { tor6 = "198.19.0.1" }`, "every value must be an address of its peer's family"},
		{"not an address", `peer_addresses = { tor-lb-a = "198.19.0.1/31" }`, "every value must be an address of its peer's family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// tofu console exits 0 after an invalid variable: its output
			// says it.
			out, _ := eval(t, tc.lbA, "")
			if !strings.Contains(out, "Error: Invalid value for variable") || !strings.Contains(strings.Join(strings.Fields(out), " "), tc.want) || !strings.Contains(out, "settings.hosts[*].peer_addresses") {
				t.Fatalf("want an error naming settings.hosts[*].peer_addresses with %q:\n%s", tc.want, out)
			}
		})
	}
}
