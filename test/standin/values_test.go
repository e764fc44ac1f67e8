package standin

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestInventedValues: values are plausible for the attribute's name and
// deterministic for the same object, different for different objects.
func TestInventedValues(t *testing.T) {
	gen := func(address, typ, seed string) *generator {
		return &generator{address: address, typeName: typ, seed: []byte(seed)}
	}
	tests := []struct {
		address, typ, attr string
		want               string
	}{
		{"registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "id", `^[0-9]{7}$`},
		{"registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "ipv4_address", `^203\.0\.113\.[0-9]+$`},
		{"registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "ipv6_address", `^2001:db8:[0-9a-f]+::1$`},
		{"registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "ipv6_network", `^2001:db8:[0-9a-f]+::/64$`},
		{"registry.opentofu.org/digitalocean/digitalocean", "digitalocean_droplet", "ipv4_address_private", `^10\.[0-9]+\.[0-9]+\.[0-9]+$`},
		{"registry.opentofu.org/digitalocean/digitalocean", "digitalocean_droplet", "urn", `^do:droplet:[0-9]+$`},
		{"registry.opentofu.org/oracle/oci", "oci_core_instance", "id", `^ocid1\.instance\.oc1\.standin\.[0-9a-f]{16}$`},
		{"registry.opentofu.org/oracle/oci", "oci_core_instance", "lifecycle_state", `^ACTIVE$`},
		{"registry.opentofu.org/oracle/oci", "oci_core_vcn", "cidr_block", `^10\.[0-9]+\.0\.0/16$`},
	}
	for _, tt := range tests {
		p := tftypes.NewAttributePath().WithAttributeName(tt.attr)
		a, err := gen(tt.address, tt.typ, "one").generate(p, tftypes.String)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := a.As(&s); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(tt.want).MatchString(s) {
			t.Errorf("%s.%s = %q, want %s", tt.typ, tt.attr, s, tt.want)
		}
		again, _ := gen(tt.address, tt.typ, "one").generate(p, tftypes.String)
		if !again.Equal(a) {
			t.Errorf("%s.%s not deterministic", tt.typ, tt.attr)
		}
	}
	p := tftypes.NewAttributePath().WithAttributeName("id")
	a, _ := gen("registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "one").generate(p, tftypes.String)
	b, _ := gen("registry.opentofu.org/hetznercloud/hcloud", "hcloud_server", "two").generate(p, tftypes.String)
	if a.Equal(b) {
		t.Error("two different objects got the same id")
	}
}

// TestOnlyServesListedTypes: with EnvOnly, other types are OpenTofu's
// "not supported" errors, never silently accepted.
func TestOnlyServesListedTypes(t *testing.T) {
	e := Setup(t, "hcloud")
	e.Only = []string{"hcloud_network"}
	dir := writeConfig(t, hcloudConfig)
	e.Tofu(t, dir, "init", "-input=false", "-no-color", "-backend=false")
	if _, err := e.Run(t.Context(), dir, "validate", "-no-color"); err == nil ||
		!regexp.MustCompile(`does not support resource type\s+"hcloud_load_balancer"`).MatchString(err.Error()) {
		t.Fatalf("validate with only hcloud_network served: %v", err)
	}
}
