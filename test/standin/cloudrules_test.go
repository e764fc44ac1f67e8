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
