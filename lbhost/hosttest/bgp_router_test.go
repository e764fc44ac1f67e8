package hosttest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestBaremetalBGPRouterSide: the top-of-rack router runs FRR with its
// admin's own configuration (a BGP instance, an upstream neighbour, marker
// lines) and no LB host; the bgp module with the router in
// settings.bgp.routers declares both sides: the hosts peer with the
// router, the router (over SSH, lbhost_bgp_router) gets the hosts as
// tfccm-* neighbours with the password from its own file and BFD. The
// sessions come up, a VIP is routed via both hosts (ECMP) and serves
// clients behind the router; the admin's lines are untouched; destroy
// leaves the admin's file byte for byte; the password is in no output,
// plan, state or log.
func TestBaremetalBGPRouterSide(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	password := "tfccm-router-" + hex.EncodeToString(id) // this run's own: found nowhere but the two files
	tor, err := hs.StartBGP(hosttest.BGPOptions{Router: filepath.Join(root, "bin", "lbhost-router"), Password: password, RouterSide: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tor.Stop)
	serveSourceAddress(t, cloud)

	var outputs []string
	dir, tofu := bgpWorkspace(t, "bgp", fmt.Sprintf("cluster_name = \"c1\"\nsettings = %s\n", hclValue(t, tor.RouterSideSettings())))
	peering := func(args ...string) string {
		out := tofu(args...)
		outputs = append(outputs, out)
		return out
	}
	peering("init", "-input=false", "-no-color")
	peering("apply", "-auto-approve", "-input=false", "-no-color")
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			peering("destroy", "-auto-approve", "-input=false", "-no-color")
		}
	})
	if err := tor.WaitUp(context.Background(), true, 40*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, tor.Logs())
	}
	// A second plan: nothing to change (the section's hash is stable),
	// and the plan shown (tofu's output) without the password.
	if out := peering("plan", "-input=false", "-no-color", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("a plan right after the apply wants changes:\n%s", out)
	}

	file, err := os.ReadFile(tor.FRRConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(file), hosttest.AdminConfig) {
		t.Errorf("the router's file no longer starts with its admin's lines:\n%s", file)
	}
	running, err := tor.RunningConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ip prefix-list admin-marker seq 5 permit 203.0.113.0/24", "neighbor 192.0.2.1 description upstream",
		"neighbor " + hs.Hosts[0].Address + " description tfccm-" + hs.Hosts[0].Name, "bfd profile tfccm-fast", "maximum-paths 2"} {
		if !strings.Contains(running, want) {
			t.Errorf("the router's running configuration lacks %q:\n%s", want, running)
		}
	}

	vips, _, destroyService := bgpService(t, cloud, hs, "IPv4", "IPv6")
	v4, v6 := vips["IPv4"], vips["IPv6"]
	waitNexthops(t, tor, v4, tor.PeerAddresses(false), 10*time.Second)
	waitNexthops(t, tor, v6, tor.PeerAddresses(true), 10*time.Second)
	for _, c := range []struct {
		url string
		v6  bool
	}{{"http://" + v4 + "/", false}, {"http://[" + v6 + "]/", true}} {
		got := split(t, hs, tor, c.url, c.v6, 40)
		t.Logf("%s: 40 clients' requests by LB host: %v", c.url, got)
		for _, h := range hs.Hosts {
			if got[h.Name] == 0 {
				t.Errorf("%s: %s served none of 40 requests, want both hosts (ECMP on the router tfccm configured)", c.url, h.Name)
			}
		}
	}
	destroyService()

	peering("destroy", "-auto-approve", "-input=false", "-no-color")
	destroyed = true
	file, err = os.ReadFile(tor.FRRConfig())
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != hosttest.AdminConfig {
		t.Errorf("after destroy the router's file is not its admin's:\n%s", file)
	}
	if running, err = tor.RunningConfig(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(running, "tfccm-") || !strings.Contains(running, "admin-marker") || !strings.Contains(running, "description upstream") {
		t.Errorf("after destroy the router's running configuration:\n%s", running)
	}
	s, err := tor.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	for a := range s {
		if a != "192.0.2.1" {
			t.Errorf("after destroy the router still has neighbour %s (%v)", a, s)
		}
	}

	// The password: in the two files that hold it, nowhere else.
	state, _ := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
	logs := []string{"/var/log/frr/frr-reload.log"}
	for _, d := range []string{filepath.Dir(tor.FRRConfig())} {
		l, _ := filepath.Glob(filepath.Join(d, "*.log"))
		logs = append(logs, l...)
	}
	found := []string{}
	for name, text := range map[string]string{"tofu's output": strings.Join(outputs, "\n"), "the state": string(state)} {
		if strings.Contains(text, password) {
			found = append(found, name)
		}
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), password) {
			found = append(found, l)
		}
	}
	if len(found) > 0 {
		t.Errorf("the BGP password is in %s", strings.Join(found, ", "))
	}
}
