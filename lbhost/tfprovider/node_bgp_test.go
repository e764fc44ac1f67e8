package tfprovider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

func nodeBGP(peer, pool string) string {
	return nodeVIPConfig("/nonexistent/kubeconfig", `
resource "lbhost_node_bgp" "nodes" {
  asn           = 64513
  node_networks = ["10.77.0.0/24"]
  bfd_profiles  = [{ name = "fast", receive_interval = 100, transmit_interval = 100 }]
  peers = [{
    name = "tor", asn = 64512, keepalive_time = 1, hold_time = 3, bfd_profile = "fast"
    password_secret = { name = "tfccm-bgp", key = "password" }
    `+peer+`
  }]
  pools = [{ name = "default", prefixes = ["198.51.100.0/24"], `+pool+` }]
}
`)
}

// TestNodeBGPRefusedAtValidate: lbhost/frr's checks refuse bad peering
// settings before anything is written, naming the setting: a peer
// outside every node network, an ASN clash, an invalid community, an
// unknown BFD profile; a good configuration validates.
func TestNodeBGPRefusedAtValidate(t *testing.T) {
	dir := t.TempDir()
	tofu := testkit.Tofu{Binary: repo.Tofu(t), Dir: dir, CLIConfig: cliConfig}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := tofu.Command(ctx, args...).CombinedOutput()
		return string(out), err
	}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(nodeBGP(`address = "10.77.0.1"`, `communities = ["64513:100"]`))
	if out, err := run("init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := run("validate", "-no-color"); err != nil {
		t.Fatalf("a good configuration: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, peer, pool, field, phrase string
	}{
		{"peer outside every node network", `address = "10.99.0.1"`, `communities = ["64513:100"]`, "peers[0].address", "outside every network"},
		{"ASN clash", `address = "10.77.0.1", ibgp = false, node_selector = {}`, `communities = ["64513:100"]`, "peers[0].asn", "own asn"},
		{"invalid community", `address = "10.77.0.1"`, `communities = ["70000:1"]`, "pools[0].communities[0]", "70000:1"},
		{"unknown BFD profile", `address = "10.77.0.1"`, `communities = ["64513:100"]`, "peers[0].bfd_profile", "not one of bfd_profiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := nodeBGP(tc.peer, tc.pool)
			switch tc.name {
			case "ASN clash":
				body = strings.Replace(body, "asn = 64512", "asn = 64513", 1)
			case "unknown BFD profile":
				body = strings.Replace(body, `bfd_profile = "fast"`, `bfd_profile = "slow"`, 1)
			}
			write(body)
			out, err := run("validate", "-no-color")
			if err == nil || !strings.Contains(out, "lbhost_node_bgp: "+tc.field) || !strings.Contains(out, tc.phrase) {
				t.Fatalf("validate: %v, want an error naming %s (%q):\n%s", err, tc.field, tc.phrase, out)
			}
		})
	}
}
