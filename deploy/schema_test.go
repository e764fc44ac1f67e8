package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValuesSchemaRefusesMisspeltKeys: values.schema.json makes a misspelt
// or misplaced key, or a value of the wrong form, an error of helm itself
// (install, upgrade, template) naming it, before anything is applied.
// Every example and golden case passes it (TestHelmExamples,
// TestHelmTemplateGolden).
func TestValuesSchemaRefusesMisspeltKeys(t *testing.T) {
	root, bin := helm(t)
	example := filepath.Join(root, Chart, "examples", "baremetal.yaml")
	for _, tc := range []struct {
		name, values, want string
	}{
		{"top level", "cloudconfig: {clusterName: prod}\n", "'cloudconfig' not allowed"},
		{"misplaced", "vipPool: 10.0.0.0/24\n", "'vipPool' not allowed"},
		{"inside baremetal", "baremetal: {vipPol: 10.0.0.0/24}\n", "'vipPol' not allowed"},
		{"inside a host", "baremetal:\n  hosts:\n    - {name: lb-a, address: 10.0.0.2, hostkey: x}\n", "'hostkey' not allowed"},
		{"inside sshKey", "sshKey: {secret: tfccm-ssh}\n", "'secret' not allowed"},
		{"inside cloudConfig", "cloudConfig: {templateset: baremetal}\n", "'templateset' not allowed"},
		{"inside an address pool", "baremetal: {addressPools: [{name: web, addresses: [10.0.0.0/28], autoassign: false}]}\n", "'autoassign' not allowed"},
		{"host without a key", "baremetal:\n  hosts:\n    - {name: lb-a, address: 10.0.0.2}\n", "hostKey"},
		{"port", "baremetal:\n  hosts:\n    - {name: lb-a, address: 10.0.0.2, port: 70000, hostKey: ssh-ed25519 AAAA}\n", "/baremetal/hosts/0/port"},
		{"address", "baremetal:\n  hosts:\n    - {name: lb-a, address: lb-a.example, hostKey: ssh-ed25519 AAAA}\n", "/baremetal/hosts/0/address"},
		{"vip pool", "baremetal: {vipPool: 10.0.0.0}\n", "/baremetal/vipPool"},
		{"router ids", "baremetal: {virtualRouterIds: 50}\n", "/baremetal/virtualRouterIds"},
		{"replicas", "replicas: two\n", "/replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(tc.values), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := HelmTemplate(bin, root, "tfccm", "kube-system", []string{example, f})
			if err == nil {
				t.Fatalf("helm template accepted %q", tc.values)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm's error does not name %q:\n%v", tc.want, err)
			}
		})
	}
	if _, err := HelmTemplate(bin, root, "tfccm", "kube-system", []string{example}); err != nil {
		t.Errorf("the example itself: %v", err)
	}
}
