package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
)

// rc is one resource change of a plan document (plans.PolicyDocument).
func rc(address string, actions []string, before, after map[string]any) any {
	typ, name, _ := strings.Cut(address, ".")
	acts := make([]any, len(actions))
	for i, a := range actions {
		acts[i] = a
	}
	var b, a any
	if before != nil {
		b = before
	}
	if after != nil {
		a = after
	}
	return map[string]any{"address": address, "type": typ, "name": name, "mode": "managed", "provider_name": "registry.opentofu.org/hetznercloud/hcloud",
		"change": map[string]any{"actions": acts, "before": b, "after": a}}
}

// imported marks a resource change of rc as an import by id.
func imported(change any, id string) any {
	change.(map[string]any)["change"].(map[string]any)["importing"] = map[string]any{"id": id}
	return change
}

func plan(changes ...any) map[string]any {
	return map[string]any{"resource_changes": changes, "output_changes": map[string]any{}}
}

// backendsOnly is plan with its backends_only class.
func backendsOnly(only bool, changes ...any) map[string]any {
	p := plan(changes...)
	p["backends_only"] = only
	return p
}

var (
	replace = []string{"delete", "create"}
	create  = []string{"create"}
	update  = []string{"update"}
	del     = []string{"delete"}
	noop    = []string{"no-op"}
	lb      = map[string]any{"name": "lb-prod-1", "ipv4": "203.0.113.7", "ipv6": "2001:db8::7"}
	privLB  = map[string]any{"name": "lb-prod-1", "ipv4": "10.0.0.7"}
)

// loadExample compiles one shipped example as part of a cloud config.
func loadExample(t *testing.T, name string) *Set {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "policy", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(append([]byte("cluster_name = \"prod\"\n"), src...), name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(cfg.Policies)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShippedExamples evaluates every example in examples/policy on plans
// it must pass and plans it must stop, with the message it must give.
func TestShippedExamples(t *testing.T) {
	lbWs := Workspace{Name: "lb-prod-1", Kind: "loadbalancer"}
	destroyWs := Workspace{Name: "lb-prod-1", Kind: "loadbalancer", Destroy: true}
	adoptWs := Workspace{Name: "lb-prod-1", Kind: "loadbalancer", Create: true, Imports: 1}
	type tc struct {
		name string
		ws   Workspace
		plan map[string]any
		want []string // "action rule: message substring"; none: passes
	}
	cases := map[string][]tc{
		"no-public-address-replacement.hcl": {
			{"new load balancer", lbWs, plan(rc("hcloud_load_balancer.this", create, nil, lb)), nil},
			{"in-place update", lbWs, plan(rc("hcloud_load_balancer.this", update, lb, lb)), nil},
			{"replaced target", lbWs, plan(rc("hcloud_load_balancer_target.node", replace, map[string]any{"server_id": 1.0}, nil)), nil},
			{"private address replaced", lbWs, plan(rc("hcloud_load_balancer.this", replace, privLB, privLB)), nil},
			{"public address replaced", lbWs, plan(rc("hcloud_load_balancer.this", replace, lb, nil), rc("hcloud_load_balancer_service.port", update, nil, nil)),
				[]string{"deny no-public-address-replacement: replaces hcloud_load_balancer.this, which holds a public address"}},
		},
		"at-most-2-destroys.hcl": {
			{"two", lbWs, plan(rc("a.x", del, lb, nil), rc("b.x", replace, lb, lb), rc("c.x", create, nil, lb)), nil},
			{"three", lbWs, plan(rc("a.x", del, lb, nil), rc("b.x", replace, lb, lb), rc("c.x", del, lb, nil)),
				[]string{"deny at-most-2-destroys: destroys 3 resources (a.x, b.x, c.x); at most 2"}},
			{"Service deleted", destroyWs, plan(rc("a.x", del, lb, nil), rc("b.x", del, lb, nil), rc("c.x", del, lb, nil)), nil},
		},
		"allowed-resource-types.hcl": {
			{"hcloud only", lbWs, plan(rc("hcloud_load_balancer.this", create, nil, lb), rc("hcloud_load_balancer_target.node", create, nil, lb)), nil},
			{"unchanged other type", lbWs, plan(rc("hcloud_load_balancer.this", create, nil, lb), rc("hcloud_firewall.fw", noop, lb, lb)), nil},
			{"a firewall", lbWs, plan(rc("hcloud_load_balancer.this", update, lb, lb), rc("hcloud_firewall.fw", create, nil, lb), rc("hcloud_server.s", del, lb, nil)),
				[]string{"deny allowed-resource-types: changes resources of types outside the allowed list: hcloud_firewall.fw, hcloud_server.s"}},
		},
		"backends-only-without-review.hcl": {
			{"a node joins", lbWs, backendsOnly(true, rc("lbhost_frontend.lb", update, lb, lb)), nil},
			{"a port changes", lbWs, backendsOnly(false, rc("lbhost_frontend.lb", update, lb, lb)),
				[]string{"approve backends-only-without-review: more than backends change"}},
			{"a new load balancer", Workspace{Name: "lb-prod-1", Kind: "loadbalancer", Create: true}, backendsOnly(true, rc("lbhost_frontend.lb", create, nil, lb)),
				[]string{"approve backends-only-without-review: more than backends change"}},
			{"Service deleted", destroyWs, backendsOnly(true, rc("lbhost_frontend.lb", del, lb, nil)),
				[]string{"approve backends-only-without-review: more than backends change"}},
		},
		"replacement-needs-approval.hcl": {
			{"update", lbWs, plan(rc("hcloud_load_balancer.this", update, lb, lb)), nil},
			{"replacement", lbWs, plan(rc("hcloud_load_balancer.this", replace, lb, lb)),
				[]string{"require-approval replacement-needs-approval: replaces hcloud_load_balancer.this"}},
			{"listener removed", lbWs, plan(rc("hcloud_load_balancer_service.port", del, lb, nil)),
				[]string{"warn destroys-warn: the plan destroys resources of a load balancer that stays"}},
		},
		"adoption-needs-approval.hcl": {
			{"no import", lbWs, plan(rc("hcloud_load_balancer.this", update, lb, lb)), nil},
			{"adoption", adoptWs, plan(imported(rc("hcloud_load_balancer.this", update, lb, lb), "4711"), rc("hcloud_load_balancer_target.node", create, nil, nil)),
				[]string{"require-approval adoption-needs-approval: adopts hcloud_load_balancer.this (id 4711)"}},
		},
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "policy", "*.hcl"))
	if len(files) != len(cases) {
		t.Fatalf("examples/policy has %d files, the test covers %d: test every shipped example", len(files), len(cases))
	}
	for file, tcs := range cases {
		set := loadExample(t, file)
		for _, c := range tcs {
			t.Run(file+"/"+c.name, func(t *testing.T) {
				got := set.Check(Input{Plan: c.plan, Workspace: c.ws})
				if len(got) != len(c.want) {
					t.Fatalf("findings %v, want %v", got, c.want)
				}
				for i, f := range got {
					if s := f.Action + " " + f.Rule + ": " + f.Message; !strings.HasPrefix(s, c.want[i]) {
						t.Errorf("finding %q, want prefix %q", s, c.want[i])
					}
				}
			})
		}
	}
}
