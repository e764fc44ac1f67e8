package tfprovider_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTerraformCompat runs a load balancer and a route with HashiCorp
// Terraform (installed on these machines, not by make tools) instead of
// OpenTofu: `source = "tfccm/lbhost"` resolves to registry.terraform.io
// there, which the mirror also holds.
func TestTerraformCompat(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not installed")
	}
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "node-a")
	w := newWorkspaceWith(t, tf, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, "")+`
resource "lbhost_route" "r" {
  destination = "10.244.9.0/24"
  gateway     = "`+c.nodeB+`"
}
`)
	if v := w.ok("version"); !strings.HasPrefix(v, "Terraform v") {
		t.Fatalf("not Terraform: %s", v)
	}
	w.apply()
	waitFor(t, "http://"+w.output("vip")+"/", "node-a")
	if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after apply: exit %d\n%s", code, out)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
}
