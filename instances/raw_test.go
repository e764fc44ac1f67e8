package instances

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/tfccm/tfccm/instances/mapping"
)

// flatten lists a state's resources, root module first, child modules in
// address order.
func flatten(m *tfjson.StateModule) []*tfjson.StateResource {
	out := append([]*tfjson.StateResource(nil), m.Resources...)
	for _, c := range m.ChildModules {
		out = append(out, flatten(c)...)
	}
	return out
}

// TestDecodeRawState: the raw state is decoded into show -json's shape:
// addresses with module and index, provider names without the provider[...]
// wrapper and alias, dynamic values unwrapped, sensitive_attributes paths as
// a sensitive_values tree, deposed objects left out.
func TestDecodeRawState(t *testing.T) {
	b, err := os.ReadFile("testdata/raw/clouds.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeRawState(b)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ addr, module, provider, sens string }
	var got []row
	var mod func(m *tfjson.StateModule)
	mod = func(m *tfjson.StateModule) {
		for _, r := range m.Resources {
			got = append(got, row{r.Address, m.Address, r.ProviderName, string(r.SensitiveValues)})
		}
		for _, c := range m.ChildModules {
			mod(c)
		}
	}
	mod(st.Values.RootModule)
	want := []row{
		{`proxmox_virtual_environment_vm.node["pve-a"]`, "", "registry.opentofu.org/bpg/proxmox", ""},
		{`openstack_compute_instance_v2.node["os-a"]`, "", "registry.opentofu.org/terraform-provider-openstack/openstack", `{"admin_pass":true}`},
		{`terraform_data.meta`, "", "terraform.io/builtin/terraform", ""},
		{`module.dc.vsphere_virtual_machine.vm[0]`, "module.dc", "registry.opentofu.org/hashicorp/vsphere", `{"vapp":[{"properties":{"password":true}}]}`},
		{`module.dc.module.eu.hcloud_server.node`, "module.dc.module.eu", "registry.opentofu.org/hetznercloud/hcloud", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resources:\n got  %q\n want %q", got, want)
	}
	meta := st.Values.RootModule.Resources[2].AttributeValues["input"]
	if b, _ := json.Marshal(meta); string(b) != `{"n":3,"role":"worker"}` {
		t.Errorf("dynamic value not unwrapped: %s", b)
	}
	for _, tt := range []struct{ name, doc, want string }{
		{"empty", "", ""},
		{"encrypted", `{"serial":1,"lineage":"x","meta":{},"encrypted_data":"AAAA","encryption_version":"v0"}`, "encrypted"},
		{"old format", `{"version":3,"serial":1}`, "format version 3"},
		{"not json", `{nope`, "decode state"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := decodeRawState([]byte(tt.doc))
			if tt.want == "" {
				if err != nil || st == nil || len(st.Values.RootModule.Resources) != 0 {
					t.Fatalf("got %v, %v; want an empty state", st, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// setMapping parses a template set's instances.hcl.
func setMapping(t *testing.T, set string) *mapping.Mapping {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "templates", set, "instances.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapping.Parse(src, set+"/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRawStateNoPlugins reads a state of bpg/proxmox, vsphere, hcloud and
// openstack resources with none of those plugins installed (no CLI config,
// no plugin directory): as a state file, from a working directory whose
// local backend names it, and through a remote backend (http, served by a
// real HTTP server) whose directory was never initialized — and maps it with
// each set's instances.hcl.
func TestRawStateNoPlugins(t *testing.T) {
	doc, err := os.ReadFile("testdata/raw/clouds.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/state/infra" {
			http.Error(w, "only GET /state/infra", http.StatusMethodNotAllowed)
			return
		}
		gets++
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)

	infra := func(backend string) string {
		dir := t.TempDir()
		// The directory's configuration names providers that are not
		// installed; only its backend block is read.
		main := fmt.Sprintf(`terraform {
  required_providers {
    proxmox = { source = "bpg/proxmox" }
    hcloud  = { source = "hetznercloud/hcloud" }
  }
%s
}
resource "proxmox_virtual_environment_vm" "node" {}
`, backend)
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	localDir := infra(`  backend "local" { path = "states/infra.tfstate" }`)
	if err := os.MkdirAll(filepath.Join(localDir, "states"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(localDir, "states", "infra.tfstate"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	httpDir := infra(fmt.Sprintf(`  backend "http" { address = %q }`, srv.URL+"/state/infra"))

	tfc := tfConfig(t)
	fileSrc, err := newFileSource("file", "testdata/raw/clouds.tfstate", tfc)
	if err != nil {
		t.Fatal(err)
	}
	localSrc, err := newDirSource("local", localDir, tfc)
	if err != nil {
		t.Fatal(err)
	}
	httpSrc, err := newDirSource("http", httpDir, tfc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"proxmox":   {"pve-a proxmox://cluster-1/101 4VCPU-8GB rack-1 InternalIP 10.0.10.2,InternalIP fd00:10::2,Hostname pve-a false"},
		"vsphere":   {"vs-a vsphere://4217a5d1-ffff-4d2a-9f55-3c8b0f3e0001 vsphere-vm.cpu-4.mem-16gb.os-ubuntu esx-1 InternalIP 10.1.0.5,Hostname vs-a false"},
		"hcloud":    {"hc-a hcloud://4711 cx22 fsn1-dc14 InternalIP 10.2.0.2,ExternalIP 203.0.113.7,ExternalIP 2001:db8::1,Hostname hc-a true"},
		"openstack": {"os-a openstack:///8e2d3c7a-0000-4f00-8000-000000000001 m1.large nova InternalIP 10.3.0.4,ExternalIP 198.51.100.9,Hostname os-a false"},
	}
	for _, src := range []*TofuSource{fileSrc, localSrc, httpSrc} {
		t.Cleanup(func() { _ = src.Close() })
		t.Run(src.Name(), func(t *testing.T) {
			st, err := src.Read(context.Background())
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			for set, w := range want {
				ix := BuildIndex(setMapping(t, set), st)
				if errs, n := ix.Errors(); n != 0 {
					t.Fatalf("%s: mapping errors: %v", set, errs)
				}
				var got []string
				for _, in := range ix.Instances() {
					var as []string
					for _, a := range in.Addresses {
						as = append(as, a.Type+" "+a.Address)
					}
					got = append(got, fmt.Sprintf("%s %s %s %s %s %v", in.Name, in.ProviderID, in.InstanceType, in.Zone, strings.Join(as, ","), in.Shutdown))
				}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s:\n got  %q\n want %q", set, got, w)
				}
			}
		})
	}
	if gets == 0 {
		t.Error("the http backend was never read")
	}
	// The working directories were only read: no .terraform, no lock file.
	for _, d := range []string{localDir, httpDir} {
		for _, f := range []string{".terraform", ".terraform.lock.hcl"} {
			if _, err := os.Stat(filepath.Join(d, f)); !os.IsNotExist(err) {
				t.Errorf("%s was written into the source directory %s", f, d)
			}
		}
	}
}

// TestCtyType agrees with go-cty's own decoder of type JSON.
func TestCtyType(t *testing.T) {
	for _, doc := range []string{
		`"string"`, `"number"`, `"bool"`, `"dynamic"`, `"A"`, `"list"`, `["list","string"]`, `["set",["map","number"]]`,
		`["object",{"a":"string","b":["list","bool"]}]`, `["object",{"a":"string"},["a"]]`, `["tuple",["string","number"]]`,
		`["object",{"a":"nope"}]`, `["list"]`, `["tuple","string"]`, `{"a":"string"}`, `3`, `["map","string","x"]`,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		_, err := ctyjson.UnmarshalType([]byte(doc))
		if got, want := ctyType(v), err == nil; got != want {
			t.Errorf("ctyType(%s) = %v, go-cty says %v (%v)", doc, got, want, err)
		}
	}
}
