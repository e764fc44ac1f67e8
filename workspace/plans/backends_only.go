package plans

// The plan class backends_only: a plan that only moves backends (a node
// joined or left, a node port changed) and nothing else, computed from
// tofu's JSON plan and the module's backends.hcl, so a policy rule can
// let it through review mode without a person (the approve action).

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	tfjson "github.com/hashicorp/terraform-json"
)

// BackendsFile is a load balancer module's declaration of its backend
// members (the per-set knowledge behind backends_only): one block per
// resource type.
//
//	backends "lbhost_frontend" {
//	  attributes = ["backends", "ports.*.node_port"] # an update changing only these moves backends
//	}
//	backends "hcloud_load_balancer_target" {
//	  member = true # one resource per backend: created or destroyed with a node
//	}
const BackendsFile = "backends.hcl"

// BackendsOnlyKey is the plan document's field (plan.backends_only).
const BackendsOnlyKey = "backends_only"

// BackendMembers is a parsed BackendsFile: by resource type.
type BackendMembers map[string]BackendResource

// BackendResource says which changes of one resource type only move
// backends.
type BackendResource struct {
	// Member: each resource of the type is one backend (or one set of
	// them); creating, destroying or replacing it moves backends.
	Member bool
	// Attributes are the attribute paths (dot-separated, "*" for every
	// element of a list) that hold backends: an update changing only
	// these moves backends.
	Attributes []string
}

type backendsFile struct {
	Backends []struct {
		Type       string   `hcl:"type,label"`
		Member     bool     `hcl:"member,optional"`
		Attributes []string `hcl:"attributes,optional"`
	} `hcl:"backends,block"`
}

// ParseBackendMembers parses a BackendsFile; filename names it in
// diagnostics.
func ParseBackendMembers(data []byte, filename string) (BackendMembers, hcl.Diagnostics) {
	f, diags := hclparse.NewParser().ParseHCL(data, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	var decl backendsFile
	if diags := gohcl.DecodeBody(f.Body, nil, &decl); diags.HasErrors() {
		return nil, diags
	}
	out := BackendMembers{}
	for _, b := range decl.Backends {
		if _, dup := out[b.Type]; dup {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Duplicate backends block",
				Detail: fmt.Sprintf("%s declares resource type %q twice.", filename, b.Type), Subject: &hcl.Range{Filename: filename}}}
		}
		for _, a := range b.Attributes {
			if a == "" || strings.HasPrefix(a, "*") || strings.Contains(a, "..") {
				return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid backend attribute",
					Detail: fmt.Sprintf("%s, %q: attribute %q is not a path of names and * (\"ports.*.node_port\").", filename, b.Type, a), Subject: &hcl.Range{Filename: filename}}}
			}
		}
		out[b.Type] = BackendResource{Member: b.Member, Attributes: b.Attributes}
	}
	return out, nil
}

// ReadBackendMembers reads dir's BackendsFile: none (or one that does not
// parse, which template validation reports) declares nothing, and then no
// plan is backends_only.
func ReadBackendMembers(dir string) BackendMembers {
	data, err := os.ReadFile(filepath.Join(dir, BackendsFile))
	if err != nil {
		return nil
	}
	m, diags := ParseBackendMembers(data, BackendsFile)
	if diags.HasErrors() {
		return nil
	}
	return m
}

// BackendsOnly reports whether plan changes something and every change is
// a backend's: a member resource created, destroyed or replaced, or an
// update of declared attributes only (what tofu does not know yet counts
// as changed). Data reads and no-ops are no change; output changes are
// not infrastructure and are not looked at. Anything else — a resource
// of a type not declared, a changed attribute not declared — is not.
func BackendsOnly(plan *tfjson.Plan, members BackendMembers) bool {
	if plan == nil || len(members) == 0 {
		return false
	}
	changed := false
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode == tfjson.DataResourceMode {
			continue
		}
		a := rc.Change.Actions
		if a.NoOp() || a.Read() {
			continue
		}
		decl, ok := members[rc.Type]
		if !ok {
			return false
		}
		switch {
		case decl.Member && (a.Create() || a.Delete() || a.Replace() || a.Update()):
		case a.Update() && onlyAttributesChange(rc.Change, decl.Attributes):
		default:
			return false
		}
		changed = true
	}
	return changed
}

// onlyAttributesChange reports whether before and after differ only at
// paths, and nothing outside them is unknown after.
func onlyAttributesChange(c *tfjson.Change, paths []string) bool {
	before, after := strip(clone(c.Before), paths), strip(clone(c.After), paths)
	if !reflect.DeepEqual(before, after) {
		return false
	}
	return !anyTrue(strip(clone(c.AfterUnknown), paths))
}

// strip removes every path from v (maps and lists decoded from JSON).
func strip(v any, paths []string) any {
	for _, p := range paths {
		v = stripPath(v, strings.Split(p, "."))
	}
	return v
}

func stripPath(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(t, path[0])
			return t
		}
		if next, ok := t[path[0]]; ok {
			t[path[0]] = stripPath(next, path[1:])
		}
	case []any:
		if path[0] == "*" {
			for i := range t {
				t[i] = stripPath(t[i], path[1:])
			}
		}
	}
	return v
}

// clone deep-copies a JSON value, so strip leaves the plan as it was.
func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// anyTrue reports whether an after_unknown value marks anything unknown.
func anyTrue(v any) bool {
	switch t := v.(type) {
	case bool:
		return t
	case map[string]any:
		for _, e := range t {
			if anyTrue(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if anyTrue(e) {
				return true
			}
		}
	}
	return false
}
