package plans

import (
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

func TestBackendsOnly(t *testing.T) {
	members, diags := ParseBackendMembers([]byte(`
backends "lbhost_frontend" {
  attributes = ["backends", "ports.*.node_port"]
}
backends "hcloud_load_balancer_target" {
  member = true
}
`), "backends.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	frontend := func(backends []any, port, nodePort float64) map[string]any {
		return map[string]any{"name": "lb", "backends": backends, "ports": []any{map[string]any{"port": port, "node_port": nodePort}}}
	}
	a := map[string]any{"name": "node-a", "address": "10.0.0.1"}
	b := map[string]any{"name": "node-b", "address": "10.0.0.2"}
	rc := func(typ string, actions tfjson.Actions, before, after any) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Type: typ, Mode: tfjson.ManagedResourceMode, Change: &tfjson.Change{Actions: actions, Before: before, After: after, AfterUnknown: map[string]any{}}}
	}
	update, create, del := tfjson.Actions{tfjson.ActionUpdate}, tfjson.Actions{tfjson.ActionCreate}, tfjson.Actions{tfjson.ActionDelete}
	noop := tfjson.Actions{tfjson.ActionNoop}
	unknownName := rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 80, 30080))
	unknownName.Change.AfterUnknown = map[string]any{"name": true}
	unknownBackends := rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a}, 80, 30080))
	unknownBackends.Change.AfterUnknown = map[string]any{"backends": true}
	for _, tc := range []struct {
		name    string
		changes []*tfjson.ResourceChange
		members BackendMembers
		want    bool
	}{
		{"a node joins", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 80, 30080))}, members, true},
		{"a node leaves", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a, b}, 80, 30080), frontend([]any{b}, 80, 30080))}, members, true},
		{"a node port changes", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a}, 80, 30081))}, members, true},
		{"backends unknown after", []*tfjson.ResourceChange{unknownBackends}, members, true},
		{"a port changes", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a}, 81, 30080))}, members, false},
		{"a port and a node", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 81, 30080))}, members, false},
		{"another attribute unknown after", []*tfjson.ResourceChange{unknownName}, members, false},
		{"a frontend replaced", []*tfjson.ResourceChange{rc("lbhost_frontend", tfjson.Actions{tfjson.ActionDelete, tfjson.ActionCreate}, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 80, 30080))}, members, false},
		{"a frontend created", []*tfjson.ResourceChange{rc("lbhost_frontend", create, nil, frontend([]any{a}, 80, 30080))}, members, false},
		{"a member created", []*tfjson.ResourceChange{rc("hcloud_load_balancer_target", create, nil, map[string]any{"server_id": 2.0})}, members, true},
		{"a member destroyed", []*tfjson.ResourceChange{rc("hcloud_load_balancer_target", del, map[string]any{"server_id": 2.0}, nil)}, members, true},
		{"a member and an undeclared type", []*tfjson.ResourceChange{
			rc("hcloud_load_balancer_target", create, nil, map[string]any{"server_id": 2.0}),
			rc("hcloud_load_balancer_service", update, map[string]any{"listen_port": 80.0}, map[string]any{"listen_port": 81.0})}, members, false},
		{"no-ops and data reads only", []*tfjson.ResourceChange{rc("lbhost_vip", noop, nil, nil),
			{Type: "lbhost_backend_health", Mode: tfjson.DataResourceMode, Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}}}}, members, false},
		{"a no-op of an undeclared type beside a join", []*tfjson.ResourceChange{rc("lbhost_vip", noop, nil, nil),
			rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 80, 30080))}, members, true},
		{"no declaration", []*tfjson.ResourceChange{rc("lbhost_frontend", update, frontend([]any{a}, 80, 30080), frontend([]any{a, b}, 80, 30080))}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &tfjson.Plan{ResourceChanges: tc.changes}
			if got := BackendsOnly(plan, tc.members); got != tc.want {
				t.Fatalf("BackendsOnly = %v, want %v", got, tc.want)
			}
			// The plan is left as it was.
			if c := tc.changes[0].Change; c.Before != nil {
				if m, ok := c.Before.(map[string]any); ok && m["ports"] == nil && m["server_id"] == nil {
					t.Fatal("the plan's before value was changed")
				}
			}
		})
	}
}

func TestParseBackendMembersRefuses(t *testing.T) {
	for name, src := range map[string]string{
		"duplicate":    "backends \"a\" {}\nbackends \"a\" {}\n",
		"bad path":     "backends \"a\" {\n  attributes = [\"*.x\"]\n}\n",
		"unknown attr": "backends \"a\" {\n  members = true\n}\n",
		"no label":     "backends {}\n",
	} {
		if _, diags := ParseBackendMembers([]byte(src), "backends.hcl"); !diags.HasErrors() {
			t.Errorf("%s: parsed %q", name, src)
		}
	}
}
