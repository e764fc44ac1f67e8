package chartvalues

import (
	"os"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

const example = "../../deploy/helm/tfccm/examples/baremetal.yaml"

// TestLoadBaremetalExample: the plain baremetal example gives the
// baremetal settings, the key's mount path and the chart's backend.
func TestLoadBaremetalExample(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.LoadBalancer.Settings
	for _, c := range []struct {
		got  cty.Value
		want string
	}{
		{s.GetAttr("vip_pool"), "192.168.10.128/25"},
		{s.GetAttr("hosts").GetAttr("lb-b").GetAttr("address"), "192.168.10.3"},
		{s.GetAttr("hosts").GetAttr("lb-a").GetAttr("user"), "tfccm"},
		{s.GetAttr("ssh_private_key_file"), "/etc/tfccm/ssh/id_ed25519"},
		{s.GetAttr("virtual_router_ids"), "50-99"},
	} {
		if !c.got.RawEquals(cty.StringVal(c.want)) {
			t.Errorf("got %#v, want %q", c.got, c.want)
		}
	}
	if cfg.ClusterName != "prod" || cfg.Namespace != ReleaseNamespace || cfg.Backend.Type != "kubernetes" {
		t.Errorf("cluster %q namespace %q backend %q", cfg.ClusterName, cfg.Namespace, cfg.Backend.Type)
	}
	if ns := cfg.Backend.Attributes["namespace"]; !ns.RawEquals(cty.StringVal("tfccm-state")) {
		t.Errorf("state namespace %#v", ns)
	}
}

// TestLoadRefusesBadValues: a bad values file is an error naming the key;
// no value reaches HCL unescaped.
func TestLoadRefusesBadValues(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	ex := string(b)
	// inCloudConfig adds a line to the example's cloudConfig.
	inCloudConfig := func(line string) string {
		return strings.Replace(ex, "  templateSet: baremetal\n", "  templateSet: baremetal\n  "+line+"\n", 1)
	}
	for _, tc := range []struct{ name, values, want string }{
		{"not YAML", "cloudConfig: [", "values:"},
		{"no cluster name", strings.Replace(ex, "clusterName: prod", "", 1), "cloudConfig.clusterName is required"},
		{"no template set", strings.Replace(ex, "templateSet: baremetal", "", 1), "cloudConfig.templateSet is required"},
		{"another set", strings.Replace(ex, "templateSet: baremetal", "templateSet: hcloud", 1), `cloudConfig.templateSet is "hcloud"`},
		{"no SSH key", strings.Replace(ex, "existingSecret: tfccm-ssh", `existingSecret: ""`, 1), "sshKey.existingSecret is required"},
		{"existing ConfigMap", inCloudConfig("existingConfigMap: mine"), "cloudConfig.existingConfigMap"},
		{"misspelt baremetal key", strings.Replace(ex, "vipPool:", "vipPol:", 1), "at '/baremetal': additional properties 'vipPol' not allowed"},
		{"bad interface", strings.Replace(ex, "interface: eth0", `interface: "eth0\"}"`, 1), "/baremetal/interface"},
		{"wrong type", strings.Replace(ex, "sudo: true", "sudo: [yes]", 1), "/baremetal/sudo"},
		{"past the schema", strings.Replace(ex, "sudo: true", "sudo: false", 1), "baremetal.sudo: must be true for the login tfccm"},
		{"interpolation in a cluster name", strings.Replace(ex, "clusterName: prod", `clusterName: "p${file(\"/etc/passwd\")}"`, 1), "Invalid cluster_name"},
		{"quote in a class", inCloudConfig(`loadBalancerClass: "x\"\nreview = true"`), "Invalid load_balancer_class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.values))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestFilesWriteNoValueIntoHCL: every value in cloud.hcl is an escaped
// HCL string; the baremetal values go to baremetal.json only.
func TestFilesWriteNoValueIntoHCL(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(b)
	if err != nil {
		t.Fatal(err)
	}
	hcl := string(files["cloud.hcl"])
	for _, leaked := range []string{"192.168.10", "ssh-ed25519", "eth0"} {
		if strings.Contains(hcl, leaked) {
			t.Errorf("cloud.hcl holds %q:\n%s", leaked, hcl)
		}
	}
	if !strings.Contains(hcl, `baremetal_values_file = "baremetal.json"`) || !strings.Contains(string(files["baremetal.json"]), "ssh-ed25519") {
		t.Errorf("cloud.hcl does not name baremetal.json, or it lacks the hosts:\n%s\n%s", hcl, files["baremetal.json"])
	}
	if got := q("a${b}%{c}\"d"); got != `"a$${b}%%{c}\"d"` {
		t.Errorf("q = %s", got)
	}
}
