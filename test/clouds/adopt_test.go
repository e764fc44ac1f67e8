package clouds

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/standin"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// adoptCase is how one set adopts a load balancer another tool made.
type adoptCase struct {
	cloud cloud
	// lb is the address of the adopted resource that holds the address.
	lb string
	// value builds tfccm.io/adopt from the old load balancer's resources
	// (address -> values).
	value func(old map[string]map[string]any) map[string]string
	// keep lists the old resources that stay in the cloud when the old
	// load balancer is handed over (the others are deleted first, as the
	// set's walk-through says); nil keeps all.
	keep []string
	// retain deletes the Service with tfccm.io/retain-on-delete: the
	// workspace's forget configuration (workspace.ForgetSpec) is applied
	// instead of a destroy.
	retain bool
}

func adoptCases() map[string]adoptCase {
	id := func(old map[string]map[string]any, addr string) string { return fmt.Sprint(old[addr]["id"]) }
	return map[string]adoptCase{
		"hcloud": {cloud: hcloudCloud(), lb: "hcloud_load_balancer.this", value: func(old map[string]map[string]any) map[string]string {
			return map[string]string{"id": id(old, "hcloud_load_balancer.this")}
		}, retain: true},
		"digitalocean": {cloud: digitalOceanCloud(), lb: "digitalocean_loadbalancer.this", value: func(old map[string]map[string]any) map[string]string {
			return map[string]string{"id": id(old, "digitalocean_loadbalancer.this")}
		}},
		"exoscale": {cloud: exoscaleCloud(), lb: "exoscale_nlb.this", value: func(old map[string]map[string]any) map[string]string {
			return map[string]string{"id": id(old, "exoscale_nlb.this"),
				"service.tcp-80": id(old, `exoscale_nlb_service.port["tcp-80"]`), "service.tcp-443": id(old, `exoscale_nlb_service.port["tcp-443"]`)}
		}},
		"openstack": {cloud: openStackCloud(), lb: "openstack_networking_floatingip_v2.this[0]", value: func(old map[string]map[string]any) map[string]string {
			v := map[string]string{"id": id(old, "openstack_lb_loadbalancer_v2.this"), "floating_ip": id(old, "openstack_networking_floatingip_v2.this[0]")}
			for _, k := range []string{"tcp-80", "tcp-443"} {
				v["listener."+k] = id(old, `openstack_lb_listener_v2.port["`+k+`"]`)
				v["pool."+k] = id(old, `openstack_lb_pool_v2.port["`+k+`"]`)
				v["monitor."+k] = id(old, `openstack_lb_monitor_v2.port["`+k+`"]`)
			}
			return v
		}, retain: true},
		"oci": {cloud: ociCloud(), lb: "oci_network_load_balancer_network_load_balancer.this", value: func(old map[string]map[string]any) map[string]string {
			v := map[string]string{"id": id(old, "oci_network_load_balancer_network_load_balancer.this")}
			for addr, vals := range old {
				if strings.HasPrefix(addr, "oci_network_load_balancer_listener.port[") {
					key := strings.TrimSuffix(strings.TrimPrefix(addr, `oci_network_load_balancer_listener.port["`), `"]`)
					v["name."+key] = fmt.Sprint(vals["name"])
				}
			}
			return v
		}, keep: []string{"oci_network_load_balancer_network_load_balancer.this", "oci_network_load_balancer_listener.", "oci_network_load_balancer_backend_set."}},
		"google": {cloud: googleCloud(), lb: "google_compute_address.this[0]", value: func(old map[string]map[string]any) map[string]string {
			return map[string]string{"id": fmt.Sprint(old["google_compute_address.this[0]"]["name"])}
		}, keep: []string{"google_compute_address.this[0]"}, retain: true},
	}
}

// TestAdopt: for every real-cloud set, a load balancer made before tfccm
// (here by the set's own template for another Service, its state then
// thrown away: the object lives on in the stand-in's cloud only) is adopted
// by a Service naming it in tfccm.io/adopt: the plan imports it ("importing")
// with no destroy and no replace, the apply creates no new load balancer and
// the status keeps its address, and the next plan is empty; a later change
// (a new port) applies to the adopted load balancer; deleting the Service
// destroys it, leaving the cloud empty, or, for three of the sets, keeps it
// (tfccm.io/retain-on-delete): every resource forgotten, none destroyed.
//
// The six sets run in parallel, each with its own stand-in cloud but one
// stand-in binary; twelve tofu commands per set at most.
func TestAdopt(t *testing.T) {
	cases := adoptCases()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	bin := standin.Build(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runAdopt(t, bin, cases[name])
		})
	}
}

func runAdopt(t *testing.T, bin string, ac adoptCase) {
	c := ac.cloud
	env := standin.SetupBinary(t, bin, c.provider)
	env.Only = c.only
	env.SetFixture(t, c.fixture)
	set, err := templates.LoadBuiltin(c.set)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	// The old load balancer: made for another Service, then only in the cloud.
	oldDir := filepath.Join(work, "old")
	oldSvc := service(func(s *corev1.Service) { s.Name, s.UID = "web-old", types.UID("0a0b0c0d-1111-4222-8333-444455556666") })
	render(t, set, parseConfig(t, c.config, work), oldSvc, c.nodes(), oldDir)
	env.Tofu(t, oldDir, "init", "-input=false", "-no-color")
	env.Tofu(t, oldDir, "apply", "-auto-approve", "-input=false", "-no-color")
	old, oldIngress := applied(t, env, oldDir)
	handOver(t, env, oldDir, old, ac.keep)
	env.Calls(t)

	// The Service adopting it; the admin allows its ids for namespace shop.
	adopt := ac.value(old)
	var ids []string
	for _, v := range adopt {
		ids = append(ids, fmt.Sprintf("%q", v))
	}
	allow := fmt.Sprintf("load_balancer {\n  adopt \"shop\" {\n    ids = [%s]\n  }\n", strings.Join(ids, ", "))
	cfg := parseConfig(t, strings.Replace(c.config, "load_balancer {\n", allow, 1), work)
	value, _ := json.Marshal(adopt)
	svc := service(func(s *corev1.Service) { s.Annotations["tfccm.io/adopt"] = string(value) })
	dir := filepath.Join(work, "ws")
	ws := render(t, set, cfg, svc, c.nodes(), dir)
	if !ws.Adopts {
		t.Fatal("the workspace does not adopt")
	}
	env.Tofu(t, dir, "init", "-input=false", "-no-color")
	t.Cleanup(func() { cleanup(t, env, dir) })
	noWarnings(t, "plan", env.Tofu(t, dir, "plan", "-input=false", "-no-color", "-out=tfplan"))
	var plan tfjson.Plan
	if err := json.Unmarshal(env.Tofu(t, dir, "show", "-json", "tfplan"), &plan); err != nil {
		t.Fatal(err)
	}
	var p plans.PendingPlan
	plans.Redact(&plan, &p)
	imported := plans.Imports(&plan)
	t.Logf("%s: %s; imports %v", c.set, p.Summary(), imported)
	if !contains(imported, ac.lb) {
		t.Errorf("the plan imports %v, not %s", imported, ac.lb)
	}
	if p.Remove != 0 {
		t.Errorf("adoption plan destroys or replaces: %s", p.Summary())
	}
	if err := plans.CheckAdoption(&plan); err != nil {
		t.Error(err)
	}
	noWarnings(t, "apply", env.Tofu(t, dir, "apply", "-input=false", "-no-color", "tfplan"))
	lbType := strings.SplitN(ac.lb, ".", 2)[0]
	noNewLoadBalancer(t, "adoption", env.Calls(t), lbType)
	adopted, ingress := applied(t, env, dir)
	if adopted[ac.lb]["id"] != old[ac.lb]["id"] {
		t.Errorf("%s is %v, want the adopted %v", ac.lb, adopted[ac.lb]["id"], old[ac.lb]["id"])
	}
	if !sameIPs(ingress, oldIngress) {
		t.Errorf("the Service's address changed: %v, was %v", ingress, oldIngress)
	}
	// What was adopted reads back as the template wants it: nothing to do.
	env.Tofu(t, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-var="+workspace.AdoptVar+"=null")

	// A later change applies to the adopted load balancer: no create of
	// its type and no delete means it is the same object.
	more := service(func(s *corev1.Service) {
		s.Annotations["tfccm.io/adopt"] = string(value)
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Protocol: corev1.ProtocolTCP, Port: 8443, NodePort: 30843})
	})
	last := render(t, set, cfg, more, c.nodes(), dir)
	// As the engine plans once the adoption applied: what was adopted is
	// in the state, a new port is created (workspace.AdoptVar).
	env.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color", "-var="+workspace.AdoptVar+"=null")
	changed := env.Calls(t)
	if len(changed) == 0 {
		t.Error("a new port made no call")
	}
	noNewLoadBalancer(t, "a new port", changed, lbType)

	if ac.retain {
		retainOnDelete(t, env, dir, last, len(adopted))
		return
	}
	// Deleting the Service destroys it: nothing is left in the cloud.
	env.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	env.Calls(t)
	assertStoreEmpty(t, env)
}

// retainOnDelete deletes the Service with tfccm.io/retain-on-delete, as
// the engine does: it plans the workspace's forget configuration without
// refresh, which forgets every resource of the state (at least adopted of
// them) and destroys none, and applies it: the cloud is asked nothing and
// keeps every object, the state is empty.
func retainOnDelete(t *testing.T, env *standin.Env, dir string, spec *workspace.Spec, adopted int) {
	t.Helper()
	forget, err := workspace.ForgetSpec(*spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := forget.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	// OpenTofu warns of each forgotten resource: the reviewer reads it.
	if out := env.Tofu(t, dir, "plan", "-input=false", "-no-color", "-refresh=false", "-out=tfplan"); !strings.Contains(string(out), "will not be managed anymore") {
		t.Errorf("the forget plan does not say what is forgotten:\n%s", out)
	}
	var plan tfjson.Plan
	if err := json.Unmarshal(env.Tofu(t, dir, "show", "-json", "tfplan"), &plan); err != nil {
		t.Fatal(err)
	}
	var p plans.PendingPlan
	plans.Redact(&plan, &p)
	t.Logf("retain on delete: %s", p.Summary())
	if p.Forget < adopted || p.Add+p.Change+p.Remove != 0 {
		t.Errorf("retain on delete plans %s, want only forgets (at least %d)", p.Summary(), adopted)
	}
	env.Tofu(t, dir, "apply", "-input=false", "-no-color", "tfplan")
	if calls := env.Calls(t); len(calls) != 0 {
		t.Errorf("retain on delete asked the cloud: %+v", calls)
	}
	if left, _ := applied(t, env, dir); len(left) != 0 {
		t.Errorf("the state still holds %d resources", len(left))
	}
	if entries, err := os.ReadDir(env.Store); err != nil || len(entries) == 0 {
		t.Errorf("the retained load balancer is gone from the cloud: %v", err)
	}
}

// noNewLoadBalancer fails the test when calls delete anything or create a
// load balancer of lbType: what was adopted must be kept.
func noNewLoadBalancer(t *testing.T, what string, calls []standin.Call, lbType string) {
	t.Helper()
	for _, call := range calls {
		if call.Op == "delete" || (call.Op == "create" && call.Type == lbType) {
			t.Errorf("%s made a %s call on %s: %+v", what, call.Op, call.Type, call)
		}
	}
}

func render(t *testing.T, set *templates.Set, cfg *config.Config, svc *corev1.Service, nodes []*corev1.Node, dir string) *workspace.Spec {
	t.Helper()
	ws, err := set.RenderLoadBalancer(cfg, svc, nodes, sharing(t, svc, ""))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return ws
}

// handOver leaves the old load balancer in the cloud without any state:
// the resources not kept are destroyed first, then the state is dropped.
func handOver(t *testing.T, env *standin.Env, dir string, old map[string]map[string]any, keep []string) {
	t.Helper()
	if keep != nil {
		var kept []string
		for addr := range old {
			for _, k := range keep {
				if strings.HasPrefix(addr, k) {
					kept = append(kept, addr)
				}
			}
		}
		if len(kept) > 0 {
			env.Tofu(t, dir, append([]string{"state", "rm"}, kept...)...)
		}
		env.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	}
	if err := os.Remove(filepath.Join(dir, "terraform.tfstate")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// applied returns dir's state: its managed resources by address, and the
// ingress output.
func applied(t *testing.T, env *standin.Env, dir string) (map[string]map[string]any, []map[string]any) {
	t.Helper()
	var st tfjson.State
	if err := json.Unmarshal(env.Tofu(t, dir, "show", "-json"), &st); err != nil {
		t.Fatal(err)
	}
	res := map[string]map[string]any{}
	var ingress []map[string]any
	if st.Values == nil || st.Values.RootModule == nil {
		return res, ingress
	}
	for _, r := range st.Values.RootModule.Resources {
		if r.Mode == tfjson.ManagedResourceMode {
			res[r.Address] = r.AttributeValues
		}
	}
	if o := st.Values.Outputs["ingress"]; o != nil {
		b, _ := json.Marshal(o.Value)
		if err := json.Unmarshal(b, &ingress); err != nil {
			t.Fatalf("output ingress: %v", err)
		}
	}
	return res, ingress
}

func sameIPs(a, b []map[string]any) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i]["ip"] != b[i]["ip"] || a[i]["hostname"] != b[i]["hostname"] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
