package hosttest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestBaremetalTakeover applies the baremetal set's loadbalancer module on
// the two LB hosts prepared only (service.announce = false: a Service
// MetalLB still announces): the address is claimed and every host's
// frontend is written, but no host has a VRRP instance or the address. The
// take-over (announce = true) is an in-place update of the VIPs alone,
// after which one host holds the address and it answers.
func TestBaremetalTakeover(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	serveNodes(t, cloud, "node-a")
	dir, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", "web",
		`{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ip = null, shared_ip = null, source_ranges = [], ip_families = ["IPv4"], session_affinity = "None", proxy_protocol = false, announce = false }`)
	vars("node-a")
	tofu("init", "-input=false", "-no-color")
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	var ing []struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(tofu("output", "-json", "ingress")), &ing); err != nil || len(ing) != 1 {
		t.Fatalf("ingress %v: %v", ing, err)
	}
	vip := ing[0].IP
	for _, h := range hs.Hosts {
		if _, err := os.Stat(filepath.Join(h.ConfigDir, "keepalived", "c1_web.conf")); !os.IsNotExist(err) {
			t.Errorf("%s: a VRRP instance while prepared (%v)", h.Name, err)
		}
		if h.HasAddress(vip) {
			t.Errorf("%s holds %s while prepared", h.Name, vip)
		}
		if b, err := os.ReadFile(filepath.Join(h.ConfigDir, "claims", vip)); err != nil || !strings.Contains(string(b), "c1_web") {
			t.Errorf("%s: claim on %s while prepared: %q, %v", h.Name, vip, b, err)
		}
		if b, err := os.ReadFile(filepath.Join(h.ConfigDir, "fragments", "c1_web.cfg")); err != nil || !strings.Contains(string(b), vip+":80") {
			t.Errorf("%s: no frontend on %s:80 while prepared: %v\n%s", h.Name, vip, err, b)
		}
	}
	if out := tofu("plan", "-detailed-exitcode", "-input=false", "-no-color"); !strings.Contains(out, "No changes") {
		t.Fatalf("plan after preparing:\n%s", out)
	}

	// The take-over: only the VIPs change, in place.
	tfvars := filepath.Join(dir, "tfccm.auto.tfvars")
	b, err := os.ReadFile(tfvars)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tfvars, []byte(strings.Replace(string(b), "announce = false", "announce = true", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := tofu("plan", "-input=false", "-no-color")
	if !strings.Contains(plan, "0 to add, 2 to change, 0 to destroy") || strings.Contains(plan, "# lbhost_frontend") {
		t.Fatalf("take-over plan: want the two VIPs changed in place, nothing else:\n%s", plan)
	}
	start := time.Now()
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	testkit.Eventually(t, 30*time.Second, vip+" held and answering", func(context.Context) error {
		if hs.Master(vip) == nil {
			return errNotHeld
		}
		_, err := testkit.GetOK(context.Background(), testkit.NewClient(2*time.Second), "http://"+vip+"/")
		return err
	})
	t.Logf("taken over: %s answers %s after the apply started", vip, time.Since(start).Round(10*time.Millisecond))
	tofu("destroy", "-auto-approve", "-input=false", "-no-color")
	for _, h := range hs.Hosts {
		if objs := h.Objects(); len(objs) != 0 {
			t.Errorf("%s: objects left after destroy: %v", h.Name, objs)
		}
	}
}

type notHeld struct{}

func (notHeld) Error() string { return "no LB host holds the VIP yet" }

var errNotHeld error = notHeld{}
