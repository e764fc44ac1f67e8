package mapping

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// localMapping is the built-in local template set's mapping.
func localMapping(t testing.TB) *Mapping {
	t.Helper()
	src, err := os.ReadFile("../../templates/local/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(src, "instances.hcl")
	if err != nil {
		t.Fatalf("parse local instances.hcl: %v", err)
	}
	return m
}

func localNode(name string, extra map[string]any) *Resource {
	out := map[string]any{
		"kind": "instance", "name": name, "netns": "tfccm-n-" + name,
		"address": "10.250.0.2", "address_v6": "fd00:250::2",
		"zone": "zone-a", "region": "region-1", "instance_type": "small", "running": true,
	}
	for k, v := range extra {
		out[k] = v
	}
	return &Resource{
		Address: `terraform_data.node["` + name + `"]`, Mode: "managed", Type: "terraform_data", Name: "node",
		Index: name, Provider: "terraform.io/builtin/terraform",
		Values:    map[string]any{"id": "x", "input": out, "output": out},
		Sensitive: []byte(`{"input":{},"output":{}}`),
	}
}

func TestLocalMapping(t *testing.T) {
	m := localMapping(t)
	tests := []struct {
		name string
		res  *Resource
		want *Instance
	}{{
		name: "running node",
		res:  localNode("a", nil),
		want: &Instance{
			Name: "a", ProviderID: "terraform://local/a", InstanceType: "small", Zone: "zone-a", Region: "region-1",
			Addresses: []Address{{"InternalIP", "10.250.0.2"}, {"InternalIP", "fd00:250::2"}, {"Hostname", "a"}},
			Labels:    map[string]string{"tfccm.io/netns": "tfccm-n-a"},
			Resource:  `terraform_data.node["a"]`, Rule: "node",
		},
	}, {
		name: "stopped node without IPv6",
		res:  localNode("b", map[string]any{"running": false, "address_v6": nil, "address": "10.250.0.3"}),
		want: &Instance{
			Name: "b", ProviderID: "terraform://local/b", InstanceType: "small", Zone: "zone-a", Region: "region-1",
			Addresses: []Address{{"InternalIP", "10.250.0.3"}, {"Hostname", "b"}},
			Labels:    map[string]string{"tfccm.io/netns": "tfccm-n-b"},
			Shutdown:  true,
			Resource:  `terraform_data.node["b"]`, Rule: "node",
		},
	}, {
		name: "other terraform_data with a string output",
		res: &Resource{Address: "terraform_data.router", Mode: "managed", Type: "terraform_data", Name: "router",
			Values: map[string]any{"input": "cloud", "output": "cloud"}},
	}, {
		name: "a node-named resource of another kind",
		res: &Resource{Address: `terraform_data.node["x"]`, Mode: "managed", Type: "terraform_data", Name: "node",
			Values: map[string]any{"output": map[string]any{"kind": "disk"}}},
	}, {
		name: "data source",
		res:  &Resource{Address: "data.terraform_data.node", Mode: "data", Type: "terraform_data", Name: "node"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Map(tt.res)
			if err != nil {
				t.Fatalf("Map: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Map:\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"syntax", "instance \"a\" {\n  match = resource.type ==\n}\n", []string{"m.hcl:2,27", "Invalid expression"}},
		{"no blocks", "# nothing\n", []string{"m.hcl", "no instance blocks"}},
		{"missing name", "instance \"a\" {\n  match = true\n}\n", []string{"m.hcl:1,14", `"name" is required`}},
		{"unknown attribute", "instance \"a\" {\n  match = true\n  name = \"x\"\n  zones = \"z\"\n}\n", []string{"m.hcl:4,3", "zones"}},
		{"unknown variable", "instance \"a\" {\n  match = true\n  name  = var.x\n}\n", []string{"m.hcl:3,11", `no variable named "var"`}},
		{"duplicate block", "instance \"a\" {\n  match = true\n  name = \"x\"\n}\ninstance \"a\" {\n  match = true\n  name = \"y\"\n}\n", []string{"m.hcl:5,10", "Duplicate instance block"}},
		{"unknown block", "node \"a\" {}\n", []string{"m.hcl:1,1", "node"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "m.hcl")
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	res := &Resource{
		Address: `terraform_data.node["a"]`, Mode: "managed", Type: "terraform_data", Name: "node", Index: "a",
		Values: map[string]any{
			"output": map[string]any{"name": "a", "ip": "10.0.0.1", "token": "hunter2-secret", "bad_name": "Not_A_Node"},
		},
		Sensitive: []byte(`{"output":{"token":true}}`),
	}
	tests := []struct {
		name, body string
		want       []string
		notWant    string
	}{
		{"missing attribute", `name = resource.values.output.nope`, []string{"m.hcl:3,32", "Unsupported attribute", `(resource terraform_data.node["a"])`}, ""},
		{"invalid node name", `name = resource.values.output.bad_name`, []string{"m.hcl:3,10", "Invalid name", "Not_A_Node"}, ""},
		{"empty name", `name = ""`, []string{"m.hcl:3,10", "must not be null or empty"}, ""},
		{"sensitive name", `name = resource.values.output.token`, []string{"m.hcl:3,10", "Sensitive value"}, "hunter2"},
		{"sensitive via function", "name = \"a\"\n  labels = { t = lower(resource.values.output.token) }", []string{"m.hcl:4,12", "Sensitive value"}, "hunter2"},
		{"bad provider id", "name = \"a\"\n  provider_id = \"no-scheme\"", []string{"m.hcl:4,17", "<scheme>://<id>"}, ""},
		{"bad address type", "name = \"a\"\n  addresses = [{ type = \"PodIP\", address = \"10.0.0.1\" }]", []string{"m.hcl:4,15", "PodIP"}, ""},
		{"bad ip", "name = \"a\"\n  addresses = [{ type = \"InternalIP\", address = \"10.0.0.300\" }]", []string{"m.hcl:4,15", "not an IP address"}, ""},
		{"bad label", "name = \"a\"\n  labels = { \"a b\" = \"x\" }", []string{"m.hcl:4,12", "not a valid label name"}, ""},
		{"bad zone", "name = \"a\"\n  zone = \"has space\"", []string{"m.hcl:4,10", "Invalid zone"}, ""},
		{"shutdown not bool", "name = \"a\"\n  shutdown = \"maybe\"", []string{"m.hcl:4,14", "true or false"}, ""},
		{"function error", "name = format(\"%d\", \"x\")", []string{"m.hcl:3", `(resource terraform_data.node["a"])`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "instance \"n\" {\n  match = resource.name == \"node\"\n  " + tt.body + "\n}\n"
			m, err := Parse([]byte(src), "m.hcl")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			in, err := m.Map(res)
			if err == nil {
				t.Fatalf("Map succeeded with %+v, want error", in)
			}
			if e := (*Error)(nil); !errors.As(err, &e) {
				t.Errorf("error %T is not a mapping error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q leaks %q", err, tt.notWant)
			}
		})
	}
}

func TestMatchOrderAndFunctions(t *testing.T) {
	src := `
instance "first" {
  match = resource.type == "vm" && resource.index == 0
  name  = format("vm-%d", resource.index)
  provider_id = "fake:///${resource.module}/${lower(resource.values.id)}"
  labels = merge({ rule = "first" }, try({ extra = resource.values.tags.extra }, {}))
  addresses = [for ip in resource.values.ips : { type = "ExternalIP", address = ip }]
}
instance "second" {
  match = resource.type == "vm"
  name  = "vm-${resource.index}"
  shutdown = lookup(resource.values, "state", "running") == "stopped"
}
`
	m, err := Parse([]byte(src), "m.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Rules(); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("Rules = %v", got)
	}
	vm := func(idx float64, values map[string]any) *Resource {
		return &Resource{Address: "module.m.vm.x", Module: "module.m", Mode: "managed", Type: "vm", Name: "x", Index: idx, Values: values}
	}
	got, err := m.Map(vm(0, map[string]any{"id": "ABC", "ips": []any{"192.0.2.1", "192.0.2.1"}, "tags": map[string]any{"extra": "yes"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := &Instance{Name: "vm-0", ProviderID: "fake:///module.m/abc", Rule: "first", Resource: "module.m.vm.x",
		Labels: map[string]string{"rule": "first", "extra": "yes"}, Addresses: []Address{{"ExternalIP", "192.0.2.1"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first:\n got  %+v\n want %+v", got, want)
	}
	got, err = m.Map(vm(1, map[string]any{"state": "stopped"}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rule != "second" || got.Name != "vm-1" || !got.Shutdown || got.ProviderID != "" {
		t.Fatalf("second: %+v", got)
	}
}

func TestSensitiveMatchAllowed(t *testing.T) {
	// Decisions may use sensitive attributes; only published fields may not.
	src := "instance \"n\" {\n  match = resource.values.role == \"node\"\n  name = resource.values.name\n}\n"
	m, err := Parse([]byte(src), "m.hcl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Map(&Resource{Address: "x.y", Values: map[string]any{"role": "node", "name": "n1"}, Sensitive: []byte(`{"role":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Name != "n1" {
		t.Fatalf("Map = %+v, want n1", got)
	}
}
