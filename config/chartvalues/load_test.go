package chartvalues

import (
	"os"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestLoadBaremetalExample(t *testing.T) {
	b, err := os.ReadFile("../../deploy/helm/tfccm/examples/baremetal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.LoadBalancer.Settings
	if got := s.GetAttr("vip_pool"); !got.RawEquals(cty.StringVal("192.168.10.128/25")) {
		t.Errorf("vip_pool = %#v", got)
	}
	if got := s.GetAttr("hosts").GetAttr("lb-b").GetAttr("address"); !got.RawEquals(cty.StringVal("192.168.10.3")) {
		t.Errorf("lb-b address = %#v", got)
	}
	if got := s.GetAttr("ssh_private_key_file"); !got.RawEquals(cty.StringVal("/etc/tfccm/ssh/id_ed25519")) {
		t.Errorf("ssh_private_key_file = %#v", got)
	}
	if cfg.ClusterName != "prod" || cfg.Backend == nil || cfg.Backend.Type != "kubernetes" {
		t.Errorf("cluster %q backend %+v", cfg.ClusterName, cfg.Backend)
	}
	_ = strings.Contains
}
