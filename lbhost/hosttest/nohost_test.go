package hosttest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestBaremetalNoHostIsSpecial applies the baremetal set's loadbalancer
// module with OpenTofu on three real LB hosts (namespaces with sshd,
// HAProxy and keepalived) and checks that no host is special (#48):
//   - upgrading a Service applied with the layout where the first host by
//     name allocated (testdata/loadbalancer-before, main's module) keeps
//     its VIP and VRRP id and replaces nothing;
//   - the first host powered off (sshd and keepalived stopped), a new
//     Service is applied and served through the others; the host comes
//     back and the next apply (the drift check) catches it up, replacing
//     nothing;
//   - the first host replaced (config dir wiped): every VIP keeps its
//     address and id;
//   - two hosts of three down: a change is applied and served by the third;
//   - all hosts down: a clear failure.
func TestBaremetalNoHostIsSpecial(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud, "lb-a", "lb-b", "lb-c")
	serveNodes(t, cloud)
	lbA := hs.Host("lb-a")

	// A Service applied by main's module, then upgraded.
	old, oldVars, oldTofu := baremetalModule(t, cloud, hs)
	copyModule(t, filepath.Join("testdata", "loadbalancer-before"), old)
	oldVars("node-a")
	oldTofu("init", "-input=false", "-no-color")
	oldTofu("apply", "-auto-approve", "-input=false", "-no-color")
	vipOld := ingressIP(t, oldTofu)
	idOld := vrid(t, lbA, "c1_web")
	copyModule(t, filepath.Join(repoRoot(t), "templates", "baremetal", "loadbalancer"), old)
	actions := planActions(t, oldTofu)
	t.Logf("upgrade plan: %v", actions)
	for addr, a := range actions {
		if a == "create" && strings.HasPrefix(addr, "lbhost_vip_allocation.") || a == "create" && addr == `lbhost_vip.host["lb-a"]` {
			continue // the allocation (in state only) and lb-a's VIP (adopted: lbhost_vip.first forgotten)
		}
		if a != "no-op" && a != "forget" {
			t.Errorf("upgrade plans %s %s: want nothing replaced, changed or destroyed", a, addr)
		}
	}
	oldTofu("apply", "-auto-approve", "-input=false", "-no-color")
	if got := ingressIP(t, oldTofu); got != vipOld {
		t.Errorf("upgrade: VIP %s, want %s kept", got, vipOld)
	}
	for _, h := range hs.Hosts {
		if got := vrid(t, h, "c1_web"); got != idOld {
			t.Errorf("upgrade: %s's VRRP id %s, want %s kept", h.Name, got, idOld)
		}
	}
	if actions := planActions(t, oldTofu); len(changed(actions)) > 0 {
		t.Errorf("after the upgrade the plan is not empty: %v", changed(actions))
	}

	// The first host powered off: a new Service is served by the others.
	lbA.StopSSHD()
	lbA.StopKeepalived(9)
	dir, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", "web2",
		`{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], shared_ip = null, source_ranges = [], ip_families = ["IPv4"], session_affinity = "None", proxy_protocol = false }`)
	_ = dir
	vars("node-a", "node-b")
	tofu("init", "-input=false", "-no-color")
	start := time.Now()
	out := tofu("apply", "-auto-approve", "-input=false", "-no-color")
	applied := time.Since(start)
	if !strings.Contains(out, "lb-a") || !strings.Contains(out, "change pending") {
		t.Errorf("apply with lb-a down: no warning naming it pending:\n%s", out)
	}
	vip2 := ingressIP(t, tofu)
	get := func(vip string) (string, error) {
		return testkit.GetOK(context.Background(), testkit.NewClient(3*time.Second), "http://"+vip+":80/")
	}
	testkit.Eventually(t, 30*time.Second, "the new Service served with lb-a down", func(context.Context) error {
		_, err := get(vip2)
		return err
	})
	t.Logf("FIGURE new Service with the first host down: applied in %s, served %s after the apply started", applied.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// The plan says what waits for the missing host, and changes nothing.
	if plan := tofu("plan", "-detailed-exitcode", "-input=false", "-no-color"); !strings.Contains(plan, lbA.Address+":22 is unreachable") ||
		!strings.Contains(plan, "waits for it") || !strings.Contains(plan, "No changes") {
		t.Errorf("plan with lb-a down: want no changes and warnings that lb-a's part waits for it:\n%s", plan)
	}
	id2 := vrid(t, hs.Host("lb-b"), "c1_web2")
	if id2 == idOld {
		t.Errorf("web2 got VRRP id %s, the same as web's", id2)
	}

	// The host comes back: the next apply (the drift check) catches it up.
	if err := lbA.StartSSHD(); err != nil {
		t.Fatal(err)
	}
	if err := lbA.StartKeepalived(); err != nil {
		t.Fatal(err)
	}
	actions = planActions(t, tofu)
	t.Logf("FIGURE plan when lb-a is back: %v", changed(actions))
	for addr, a := range changed(actions) {
		if !strings.Contains(addr, `"lb-a`) || a == "delete" || strings.Contains(a, "delete") {
			t.Errorf("lb-a back: plans %s %s, want only lb-a's objects created or updated", a, addr)
		}
	}
	if len(changed(actions)) == 0 {
		t.Error("lb-a back: the plan does not catch it up")
	}
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	if got := vrid(t, lbA, "c1_web2"); got != id2 {
		t.Errorf("lb-a back: VRRP id %s, want %s", got, id2)
	}

	// The first host replaced (same name, empty config dir).
	if err := lbA.Wipe(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []func(...string) string{oldTofu, tofu} {
		actions := planActions(t, w)
		t.Logf("FIGURE plan after lb-a is replaced: %v", changed(actions))
		for addr, a := range changed(actions) {
			if !strings.Contains(addr, `"lb-a`) || strings.Contains(a, "delete") {
				t.Errorf("lb-a replaced: plans %s %s, want only lb-a's objects created", a, addr)
			}
		}
		w("apply", "-auto-approve", "-input=false", "-no-color")
	}
	if got := vrid(t, lbA, "c1_web"); got != idOld {
		t.Errorf("lb-a replaced: web's VRRP id %s, want %s", got, idOld)
	}
	if got := vrid(t, lbA, "c1_web2"); got != id2 {
		t.Errorf("lb-a replaced: web2's VRRP id %s, want %s", got, id2)
	}
	if got := ingressIP(t, oldTofu); got != vipOld {
		t.Errorf("lb-a replaced: web's VIP %s, want %s", got, vipOld)
	}

	// Two hosts of three down: a change goes on, served by lb-c.
	for _, h := range []*hosttest.Host{lbA, hs.Host("lb-b")} {
		h.StopSSHD()
		h.StopKeepalived(9)
	}
	vars("node-a")
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	testkit.Eventually(t, 30*time.Second, "served by lb-c alone", func(context.Context) error {
		_, err := get(vip2)
		return err
	})
	// All down: a clear failure.
	hs.Host("lb-c").StopSSHD()
	vars("node-a", "node-b")
	_, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err == nil || !strings.Contains(err.Error(), "no LB host is reachable") {
		t.Errorf("apply with every host down: %v, want no LB host is reachable", err)
	}
	for _, h := range hs.Hosts {
		if err := h.StartSSHD(); err != nil {
			t.Fatal(err)
		}
		if h.Name == "lb-c" {
			continue // its keepalived still runs
		}
		if err := h.StartKeepalived(); err != nil {
			t.Fatal(err)
		}
	}
	// The first host dies for good: retired while unreachable, its
	// objects are forgotten (not failed on), the others keep serving with
	// the same VIPs; then it leaves the settings.
	lbA.StopSSHD()
	lbA.StopKeepalived(9)
	lb := hs.LBSettings()
	lb["hosts"].(map[string]any)["lb-a"].(map[string]any)["retired"] = true
	for _, d := range []string{dir, old} {
		setSettings(t, d, lb)
	}
	out = tofu("apply", "-auto-approve", "-input=false", "-no-color")
	if !strings.Contains(out, "host unreachable, forgotten") {
		t.Errorf("retiring lb-a while it is down: no warning that its objects are forgotten:\n%s", out)
	}
	oldTofu("apply", "-auto-approve", "-input=false", "-no-color")
	delete(lb["hosts"].(map[string]any), "lb-a")
	for _, d := range []string{dir, old} {
		setSettings(t, d, lb)
	}
	for _, w := range []func(...string) string{tofu, oldTofu} {
		w("apply", "-auto-approve", "-input=false", "-no-color")
		if actions := planActions(t, w); len(changed(actions)) > 0 {
			t.Errorf("lb-a removed: the plan is not empty: %v", changed(actions))
		}
	}
	if got := ingressIP(t, oldTofu); got != vipOld {
		t.Errorf("lb-a retired: web's VIP %s, want %s", got, vipOld)
	}
	testkit.Eventually(t, 30*time.Second, "web and web2 served without lb-a", func(context.Context) error {
		for _, v := range []string{vipOld, vip2} {
			if _, err := get(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err := lbA.Wipe(); err != nil { // gone: its leftovers with it
		t.Fatal(err)
	}

	tofu("destroy", "-auto-approve", "-input=false", "-no-color")
	oldTofu("destroy", "-auto-approve", "-input=false", "-no-color")
	for _, h := range hs.Hosts {
		if objs := h.Objects(); len(objs) != 0 {
			t.Errorf("%s: objects left after destroy: %v", h.Name, objs)
		}
		if ids, _ := os.ReadDir(filepath.Join(h.ConfigDir, "vrrp-ids")); len(ids) != 0 {
			t.Errorf("%s: VRRP id reservations left after destroy: %v", h.Name, ids)
		}
	}
}

// setSettings rewrites the settings input of the module in dir.
func setSettings(t *testing.T, dir string, lb map[string]any) {
	t.Helper()
	file := filepath.Join(dir, "tfccm.auto.tfvars")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(data), "\nsettings = ")
	if !ok {
		t.Fatalf("%s has no settings", file)
	}
	if err := os.WriteFile(file, []byte(head+"\nsettings = "+harness.HCLObject(lb)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func repoRoot(t *testing.T) string {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// copyModule puts the *.tf files of src into dir (replacing those there).
func copyModule(t *testing.T, src, dir string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	for _, f := range old {
		os.Remove(f)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*.tf"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ingressIP(t *testing.T, tofu func(...string) string) string {
	t.Helper()
	var ing []struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(tofu("output", "-json", "ingress")), &ing); err != nil || len(ing) == 0 {
		t.Fatalf("ingress %v: %v", ing, err)
	}
	return ing[0].IP
}

var reVRID = regexp.MustCompile(`virtual_router_id (\d+)`)

// vrid is the virtual router id of owner's VRRP instance on h.
func vrid(t *testing.T, h *hosttest.Host, owner string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.ConfigDir, "keepalived", owner+".conf"))
	if err != nil {
		t.Fatalf("%s: %v", h.Name, err)
	}
	m := reVRID.FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("%s: no virtual_router_id in %s", h.Name, data)
	}
	return m[1]
}

// planActions plans and returns every resource's actions (joined by ","),
// "forget" for a removed block's.
func planActions(t *testing.T, tofu func(...string) string) map[string]string {
	t.Helper()
	tofu("plan", "-out=plan.bin", "-input=false", "-no-color")
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(tofu("show", "-json", "plan.bin")), &p); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, rc := range p.ResourceChanges {
		out[rc.Address] = strings.Join(rc.Change.Actions, ",")
	}
	return out
}

// changed is the actions that change something.
func changed(actions map[string]string) map[string]string {
	out := map[string]string{}
	for a, act := range actions {
		if act != "no-op" && act != "read" {
			out[a] = act
		}
	}
	return out
}
