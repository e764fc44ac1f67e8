package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigKnownAfterApply: the provider's netns comes from another
// resource, so it is unknown at plan. Plan-time host checks wait; apply
// works once it is known.
func TestConfigKnownAfterApply(t *testing.T) {
	c := newCloud(t)
	w := newWorkspace(t, c, "")
	requested := strings.TrimSuffix(c.pool, ".0/24") + ".9"
	body := fmt.Sprintf(`terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

resource "terraform_data" "ns" {
  input = %q
}

provider "lbhost" {
  netns      = terraform_data.ns.output
  config_dir = %q
}

resource "lbhost_vip" "v" {
  owner   = "c1_late"
  pool    = %q
  address = %q
}
`, c.netns, c.dir, c.pool, requested)
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w.ok("init", "-input=false", "-no-color")
	w.apply()
	if b, err := os.ReadFile(filepath.Join(c.dir, "claims", requested)); err != nil || strings.TrimSpace(string(b)) != "c1_late" {
		t.Fatalf("claim %s: %q %v", requested, b, err)
	}
}
