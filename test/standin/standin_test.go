package standin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const hcloudConfig = `terraform {
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = "~> 1.60"
    }
  }
}

resource "hcloud_network" "net" {
  name     = "standin"
  ip_range = "10.0.0.0/16"
}

resource "hcloud_load_balancer" "lb" {
  name               = "lb"
  load_balancer_type = "lb11"
  location           = "fsn1"
}

resource "hcloud_load_balancer_service" "http" {
  load_balancer_id = hcloud_load_balancer.lb.id
  protocol         = "tcp"
  listen_port      = 80
  destination_port = 30080
  health_check {
    protocol = "http"
    port     = 10256
    interval = 15
    timeout  = 10
    retries  = 3
    http {
      path = "/healthz"
    }
  }
}

output "ipv4" { value = hcloud_load_balancer.lb.ipv4 }
output "ipv6" { value = hcloud_load_balancer.lb.ipv6 }
output "id" { value = hcloud_load_balancer.lb.id }
`

func writeConfig(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLifecycle(t *testing.T) {
	e := Setup(t, "hcloud")
	dir := writeConfig(t, hcloudConfig)
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil || !strings.Contains(string(lock), `provider "registry.opentofu.org/hetznercloud/hcloud"`) || !strings.Contains(string(lock), `version     = "1.68.0"`) {
		t.Fatalf("lock file does not pin the real address and version: %v\n%s", err, lock)
	}
	e.Tofu(t, dir, "validate", "-no-color")

	plan := string(e.Tofu(t, dir, "plan", "-input=false", "-no-color"))
	for _, want := range []string{"ipv4               = (known after apply)", "3 to add", `destination_port = 30080`} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	e.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	var out map[string]struct{ Value string }
	if err := json.Unmarshal(e.Tofu(t, dir, "output", "-json"), &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^203\.0\.113\.\d+$`).MatchString(out["ipv4"].Value) || !strings.HasPrefix(out["ipv6"].Value, "2001:db8:") ||
		!regexp.MustCompile(`^\d+$`).MatchString(out["id"].Value) {
		t.Errorf("invented values not plausible: %+v", out)
	}
	calls := e.Calls(t)
	if len(calls) != 3 {
		t.Fatalf("calls %+v, want 3 creates", calls)
	}
	svc := calls[1]
	if svc.Op != "create" || svc.Type != "hcloud_load_balancer_service" || svc.Values["load_balancer_id"] != out["id"].Value ||
		svc.Values["listen_port"] != json.Number("80") {
		t.Errorf("service call %+v", svc)
	}

	// Read returns what was applied: no changes, no calls; the same values
	// on a second run (deterministic).
	plan = string(e.Tofu(t, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode"))
	if !strings.Contains(plan, "No changes") {
		t.Errorf("second plan:\n%s", plan)
	}

	// An object gone from the cloud (store) is gone from state on refresh.
	if err := os.RemoveAll(filepath.Join(e.Store, "hcloud_network")); err != nil {
		t.Fatal(err)
	}
	plan = string(e.Tofu(t, dir, "plan", "-input=false", "-no-color"))
	if !strings.Contains(plan, "1 to add") || !strings.Contains(plan, "# hcloud_network.net will be created") {
		t.Errorf("drift not seen:\n%s", plan)
	}

	// Update in place.
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Replace(hcloudConfig, "listen_port      = 80", "listen_port      = 8080", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	calls = e.Calls(t)
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.Op+" "+c.Type)
	}
	if strings.Join(ops, ",") != "update hcloud_load_balancer_service,create hcloud_network" {
		t.Errorf("calls after drift and port change: %v", ops)
	}
	if calls[0].Prior["listen_port"] != json.Number("80") || calls[0].Values["listen_port"] != json.Number("8080") {
		t.Errorf("update call %+v", calls[0])
	}

	// Import by id.
	e.Tofu(t, dir, "state", "rm", "-no-color", "hcloud_load_balancer.lb")
	e.Tofu(t, dir, "import", "-input=false", "-no-color", "hcloud_load_balancer.lb", out["id"].Value)
	show := string(e.Tofu(t, dir, "state", "show", "-no-color", "hcloud_load_balancer.lb"))
	if !strings.Contains(show, out["ipv4"].Value) {
		t.Errorf("imported object lacks its address:\n%s", show)
	}

	e.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	calls = e.Calls(t)
	if len(calls) != 3 {
		t.Fatalf("destroy calls %+v", calls)
	}
	for _, c := range calls {
		if c.Op != "delete" || c.ID == "" || c.Prior == nil {
			t.Errorf("destroy call %+v", c)
		}
	}
}

func TestFixtureOverrides(t *testing.T) {
	e := Setup(t, "hcloud")
	e.SetFixture(t, map[string]map[string]any{"hcloud_load_balancer": {"ipv4": "198.51.100.7", "id": "4242"}})
	dir := writeConfig(t, hcloudConfig)
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	e.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	var out map[string]struct{ Value string }
	if err := json.Unmarshal(e.Tofu(t, dir, "output", "-json"), &out); err != nil {
		t.Fatal(err)
	}
	if out["ipv4"].Value != "198.51.100.7" || out["id"].Value != "4242" {
		t.Errorf("fixture not applied: %+v", out)
	}
}

// TestSchemaErrorsAreTofus: a wrong configuration is refused by OpenTofu's
// own schema checks with its usual messages.
func TestSchemaErrorsAreTofus(t *testing.T) {
	e := Setup(t, "hcloud")
	tests := []struct{ name, from, to, want string }{
		{"unknown attribute", `location           = "fsn1"`, `location           = "fsn1"` + "\n  colour = \"red\"", `An argument named "colour" is not expected here`},
		{"wrong type", `listen_port      = 80`, `listen_port      = "eighty"`, `Inappropriate value for attribute "listen_port"`},
		{"missing required", `protocol         = "tcp"`, ``, `The argument "protocol" is required`},
		{"too many blocks", `    http {`, "    http {\n      path = \"/a\"\n    }\n    http {", `No more than 1 "http" blocks are allowed`},
		{"unknown resource", `resource "hcloud_network" "net"`, `resource "hcloud_netwerk" "net"`, `The provider hetznercloud/hcloud does not support resource type "hcloud_netwerk"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(hcloudConfig, tt.from, tt.to, 1)
			if src == hcloudConfig {
				t.Fatalf("test case does not change the config")
			}
			dir := writeConfig(t, src)
			e.Tofu(t, dir, "init", "-input=false", "-no-color", "-backend=false")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := e.Run(ctx, dir, "validate", "-no-color")
			var te *TofuError
			if !errors.As(err, &te) {
				t.Fatalf("validate accepted it (err %v)", err)
			}
			if got := strings.Join(strings.Fields(te.Stderr+te.Stdout), " "); !strings.Contains(got, tt.want) {
				t.Errorf("error lacks %q:\n%s", tt.want, te.Stderr+te.Stdout)
			}
		})
	}
}

// TestKnownSchemas: every embedded schema loads and has resources.
func TestKnownSchemas(t *testing.T) {
	for _, p := range Known {
		s, err := LoadKnownSchema(p)
		if err != nil {
			t.Fatal(err)
		}
		if s.Address != p.Address || len(s.Resources) == 0 {
			t.Errorf("%s: address %s, %d resources", p.Name, s.Address, len(s.Resources))
		}
	}
}

// TestMinItemsIsTofus: a block the schema requires (min_items 1) is
// OpenTofu's error too, and a lookup data source finds one object.
func TestMinItemsIsTofus(t *testing.T) {
	e := Setup(t, "oci")
	e.Only = []string{"oci_network_load_balancer_backend_set", "oci_core_private_ips"}
	dir := writeConfig(t, `terraform {
  required_providers {
    oci = { source = "oracle/oci" }
  }
}

data "oci_core_private_ips" "node" {
  ip_address = "10.0.10.2"
  subnet_id  = "ocid1.subnet.oc1..x"
}

resource "oci_network_load_balancer_backend_set" "bs" {
  network_load_balancer_id = "ocid1.networkloadbalancer.oc1..x"
  name                     = "bs"
  policy                   = "FIVE_TUPLE"
}

output "private_ip_id" { value = data.oci_core_private_ips.node.private_ips[0].id }
`)
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	_, err := e.Run(t.Context(), dir, "validate", "-no-color")
	if err == nil || !strings.Contains(strings.Join(strings.Fields(err.Error()), " "), `At least 1 "health_checker" blocks are required`) {
		t.Fatalf("validate without the required block: %v", err)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "main.tf"))
	fixed := strings.Replace(string(src), `policy                   = "FIVE_TUPLE"`, "policy                   = \"FIVE_TUPLE\"\n  health_checker {\n    protocol = \"TCP\"\n  }", 1)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	var out map[string]struct{ Value string }
	if err := json.Unmarshal(e.Tofu(t, dir, "output", "-json"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out["private_ip_id"].Value, "ocid1.privateip.oc1.") {
		t.Errorf("lookup found %q, want a private IP OCID", out["private_ip_id"].Value)
	}
}
