package hosttest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/test/localcloud"
	"github.com/tfccm/tfccm/workspace/plans"
)

// TestBaremetalAdoptHandmade adopts a hand-made load balancer (a
// keepalived vrrp_instance in the hosts' main configuration, an HAProxy of
// its own) with the baremetal set's loadbalancer module and adopt set, as
// tfccm's first plan of a Service with tfccm.io/adopt does: bad ids fail
// the plan naming the problem with nothing changed on the hosts, a plan
// forgetting what it imports is refused, and the adoption imports the
// allocation and both hosts' VIPs with no destroy or replace, keeps the
// VIP, loses no request at 20 req/s, moves the instance out of the main
// configuration (backed up) into lbhost's fragment, and the next plan is
// empty.
func TestBaremetalAdoptHandmade(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	serveNodes(t, cloud, "node-a")
	pool := netip.MustParsePrefix(hs.VIPPool)
	vip := pool.Addr()
	for range 72 {
		vip = vip.Next()
	}
	stop, err := hs.AddHandmade(hosttest.Handmade{Instance: "VI_WEB", VIP: vip.String(), VRID: 51, Port: 80,
		Backends: []string{cloud.Node("node-a").Address + ":30080"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	testkit.Eventually(t, 20*time.Second, "the hand-made VIP "+vip.String()+" answers", func(ctx context.Context) error {
		_, err := testkit.GetOK(ctx, testkit.NewClient(time.Second), "http://"+vip.String()+"/")
		return err
	})
	// The hand-made priorities put it on lb-a (which preempts).
	var holder *hosttest.Host
	testkit.Eventually(t, 20*time.Second, "lb-a holds the hand-made VIP, lb-b not", func(context.Context) error {
		if holder = hs.Master(vip.String()); holder != hs.Host("lb-a") || hs.Host("lb-b").HasAddress(vip.String()) {
			return errNotHeld
		}
		return nil
	})
	mains := map[string][]byte{}
	for _, h := range hs.Hosts {
		mains[h.Name], _ = os.ReadFile(h.KeepalivedConfig)
	}

	service := func(addr string) string {
		return `{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ips = ["` + addr +
			`"], shared_ip = null, source_ranges = [], ip_families = ["IPv4"], session_affinity = "None", proxy_protocol = false }`
	}
	dir, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", "web", service(vip.String()))
	tfvars := filepath.Join(dir, "tfccm.auto.tfvars")
	adopt := func(svc, id string) {
		t.Helper()
		vars("node-a")
		b, err := os.ReadFile(tfvars)
		if err == nil {
			b = []byte(strings.Replace(string(b), service(vip.String()), svc, 1))
			if id != "" {
				b = append(b, []byte("adopt = { id = \""+id+"\" }\n")...)
			}
			err = os.WriteFile(tfvars, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	vars("node-a")
	tofu("init", "-input=false", "-no-color")

	// Bad ids: the plan fails naming the instance; no host changes.
	other := vip.Next().String()
	onlyA, err := os.OpenFile(hs.Host("lb-a").KeepalivedConfig, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = onlyA.WriteString("\nvrrp_instance VI_ONE {\n    interface eth0\n    virtual_router_id 52\n    virtual_ipaddress {\n        " + other + "\n    }\n}\n")
		onlyA.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	mains["lb-a"], _ = os.ReadFile(hs.Host("lb-a").KeepalivedConfig)
	// In parallel (plans read only: no lock), each with its own inputs.
	vars("node-a")
	var wg sync.WaitGroup
	for _, bad := range []struct{ name, svc, id, want string }{
		{"no such instance", service(vip.String()), "keepalived:VI_NONE", "vrrp_instance VI_NONE: not found"},
		{"on one host only", service(other), "keepalived:VI_ONE", "vrrp_instance VI_ONE: not found"},
		{"another address than the Service's", service(other), "keepalived:VI_WEB", "the adopted vrrp_instance VI_WEB holds " + vip.String() + ", and " + other + " is asked for"},
		{"not an instance", service(vip.String()), "4711", "tfccm.io/adopt must be keepalived:<instance name>"},
	} {
		wg.Go(func() {
			out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "plan", "-input=false", "-no-color", "-lock=false",
				"-var", "service="+bad.svc, "-var", `adopt={ id = "`+bad.id+`" }`)
			if err == nil || !strings.Contains(strings.Join(strings.Fields(err.Error()), " "), bad.want) {
				t.Errorf("%s: plan %v, want an error containing %q:\n%s", bad.name, err, bad.want, out)
			}
		})
	}
	wg.Wait()
	checkUnchanged := func(when string) {
		t.Helper()
		for _, h := range hs.Hosts {
			if b, _ := os.ReadFile(h.KeepalivedConfig); !bytes.Equal(b, mains[h.Name]) {
				t.Errorf("%s: %s changed the main keepalived configuration", h.Name, when)
			}
			if objs := h.Objects(); len(objs) != 0 {
				t.Errorf("%s: %s left objects: %v", h.Name, when, objs)
			}
		}
	}
	checkUnchanged("the refused plans")

	// A plan that imports and forgets: refused.
	adopt(service(vip.String()), "keepalived:VI_WEB")
	forget := filepath.Join(dir, "forget.tf")
	if err := os.WriteFile(forget, []byte("removed {\n  from = lbhost_vip.host\n  lifecycle {\n    destroy = false\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "plan", "-input=false", "-no-color", "-out=forget.plan"); err == nil {
		if err := plans.CheckAdoption(showPlan(t, tofu, "forget.plan")); err == nil || !strings.Contains(err.Error(), "adoption refused") {
			t.Errorf("a plan importing and forgetting was not refused (%v):\n%s", err, out)
		}
	} else if !strings.Contains(err.Error(), "removal of the resource lbhost_vip.host") {
		// OpenTofu itself refuses a configuration forgetting a resource
		// it imports.
		t.Errorf("a plan importing and forgetting failed without naming the resource: %v\n%s", err, out)
	}
	if err := os.Remove(forget); err != nil {
		t.Fatal(err)
	}
	checkUnchanged("the forgetting plan")

	// The adoption.
	tofu("plan", "-input=false", "-no-color", "-out=adopt.plan")
	plan := showPlan(t, tofu, "adopt.plan")
	if err := plans.CheckAdoption(plan); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(plans.Imports(plan), " "), `lbhost_vip.host["lb-a"] lbhost_vip.host["lb-b"] lbhost_vip_allocation.vip["IPv4"]`; got != want {
		t.Errorf("imports %s, want %s", got, want)
	}
	for _, rc := range plan.ResourceChanges {
		if a := rc.Change.Actions; a.Delete() || a.Replace() {
			t.Errorf("%s: %v", rc.Address, a)
		}
	}
	avail := hs.MeasureDuring(vip.String(), 80, func() { tofu("apply", "-input=false", "-no-color", "adopt.plan") })
	t.Logf("adopting %s (held by %s): %s", vip, holder.Name, avail)
	if avail.Lost != 0 {
		t.Errorf("adopting lost requests: %s %v", avail, avail.Failures)
	}
	var ing []struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(tofu("output", "-json", "ingress")), &ing); err != nil || len(ing) != 1 || ing[0].IP != vip.String() {
		t.Errorf("ingress %v (%v), want %s", ing, err, vip)
	}
	for _, h := range hs.Hosts {
		if h.HasAddress(vip.String()) != (h == holder) {
			t.Errorf("after the adoption %s holds %s: %t, want only %s as before", h.Name, vip, h.HasAddress(vip.String()), holder.Name)
		}
	}
	for _, h := range hs.Hosts {
		main, _ := os.ReadFile(h.KeepalivedConfig)
		if _, err := keepalived.FindHandmade(main, h.KeepalivedConfig, "VI_WEB"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: the hand-made instance is still in the main configuration (%v)", h.Name, err)
		}
		if b, err := os.ReadFile(h.KeepalivedConfig + ".tfccm-adopted-VI_WEB"); err != nil || !bytes.Equal(b, mains[h.Name]) {
			t.Errorf("%s: no backup of the main configuration as it was (%v)", h.Name, err)
		}
		if b, err := os.ReadFile(filepath.Join(h.ConfigDir, "keepalived", "c1_web.conf")); err != nil || !strings.Contains(string(b), "vrrp_instance VI_WEB {") || !strings.Contains(string(b), "virtual_router_id 51") {
			t.Errorf("%s: lbhost's fragment does not hold VI_WEB with id 51 (%v):\n%s", h.Name, err, b)
		}
	}
	// tfccm plans with adopt = null once the state holds the adoption.
	adopt(service(vip.String()), "")
	if out := tofu("plan", "-detailed-exitcode", "-input=false", "-no-color"); !strings.Contains(out, "No changes") {
		t.Errorf("plan after the adoption is not empty:\n%s", out)
	}
}

// showPlan reads a saved plan's JSON.
func showPlan(t *testing.T, tofu func(...string) string, file string) *tfjson.Plan {
	t.Helper()
	var p tfjson.Plan
	if err := json.Unmarshal([]byte(tofu("show", "-json", file)), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}
