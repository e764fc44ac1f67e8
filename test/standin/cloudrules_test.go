package standin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSharedInternalAddress: two internal forwarding rules on one literal
// IP are refused at apply, as Google refuses them, unless the IP is a
// reserved address with purpose SHARED_LOADBALANCER_VIP.
func TestSharedInternalAddress(t *testing.T) {
	e := Setup(t, "google")
	e.Only = []string{"google_compute_address", "google_compute_forwarding_rule"}
	const rules = `terraform {
  required_providers {
    google = { source = "hashicorp/google" }
  }
}

resource "google_compute_forwarding_rule" "rule" {
  for_each              = toset(["TCP", "UDP"])
  name                  = "r-${lower(each.key)}"
  region                = "europe-west1"
  ip_protocol           = each.key
  load_balancing_scheme = "INTERNAL"
  ip_address            = ADDRESS
  ports                 = ["53"]
}
`
	dir := writeConfig(t, strings.Replace(rules, "ADDRESS", `"10.0.0.5"`, 1))
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.Run(ctx, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	var te *TofuError
	if !errors.As(err, &te) || !strings.Contains(te.Stderr, "IP_IN_USE_BY_ANOTHER_RESOURCE") {
		t.Fatalf("two internal rules on one literal IP: %v", err)
	}
	e.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	e.Calls(t)

	shared := strings.Replace(rules, "ADDRESS", "google_compute_address.vip.address", 1) + `
resource "google_compute_address" "vip" {
  name         = "vip"
  region       = "europe-west1"
  address      = "10.0.0.5"
  address_type = "INTERNAL"
  purpose      = "SHARED_LOADBALANCER_VIP"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(shared), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if calls := e.Calls(t); len(calls) != 3 {
		t.Errorf("calls %+v, want the address and two rules", calls)
	}
}

// TestOVNDriver: on a load balancer with loadbalancer_provider "ovn",
// members with a monitor_port, an HTTP monitor and a ROUND_ROBIN pool are
// refused at apply, as the OVN driver refuses them; TCP monitors on the
// members' own port are accepted.
func TestOVNDriver(t *testing.T) {
	e := Setup(t, "openstack")
	const config = `terraform {
  required_providers {
    openstack = { source = "terraform-provider-openstack/openstack" }
  }
}

resource "openstack_lb_loadbalancer_v2" "lb" {
  vip_subnet_id         = "subnet"
  loadbalancer_provider = "ovn"
}

resource "openstack_lb_listener_v2" "l" {
  loadbalancer_id = openstack_lb_loadbalancer_v2.lb.id
  protocol        = "TCP"
  protocol_port   = 80
}

resource "openstack_lb_pool_v2" "p" {
  listener_id = openstack_lb_listener_v2.l.id
  protocol    = "TCP"
  lb_method   = "METHOD"
}

resource "openstack_lb_members_v2" "m" {
  pool_id = openstack_lb_pool_v2.p.id
  member {
    address       = "10.0.0.2"
    protocol_port = 30080
    MONITOR_PORT
  }
}

resource "openstack_lb_monitor_v2" "mon" {
  pool_id     = openstack_lb_pool_v2.p.id
  type        = "TYPE"
  delay       = 5
  timeout     = 3
  max_retries = 1
  depends_on  = [openstack_lb_members_v2.m]
}
`
	dir := t.TempDir()
	for _, tt := range []struct{ name, method, monitorPort, typ, want string }{
		{"round robin", "ROUND_ROBIN", "", "TCP", "OVN provider does not support ROUND_ROBIN algorithm"},
		{"monitor port", "SOURCE_IP_PORT", "monitor_port = 10256", "TCP", "OVN provider does not support monitor options"},
		{"http monitor", "SOURCE_IP_PORT", "", "HTTP", "OVN provider does not support HTTP Health Monitor type"},
		{"accepted", "SOURCE_IP_PORT", "", "TCP", ""},
	} {
		src := strings.NewReplacer("METHOD", tt.method, "MONITOR_PORT", tt.monitorPort, "TYPE", tt.typ).Replace(config)
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		e.Tofu(t, dir, "init", "-input=false", "-no-color")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := e.Run(ctx, dir, "apply", "-auto-approve", "-input=false", "-no-color")
		cancel()
		var te *TofuError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (!errors.As(err, &te) || !strings.Contains(strings.Join(strings.Fields(te.Stderr), " "), tt.want)):
			t.Errorf("%s: apply error %v, want %q", tt.name, err, tt.want)
		}
		e.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
		e.Calls(t)
	}
}
