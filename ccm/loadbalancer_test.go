package ccm

import (
	"fmt"
	"testing"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/repo"
)

// TestLoadBalancerForClasslessOnly: with serve_classless = false the
// service controller gets no LoadBalancer (it does not start); the class
// loop still serves (TestAttachServesTheClass).
func TestLoadBalancerForClasslessOnly(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{{"", true}, {"serve_classless = false\n", false}} {
		src := fmt.Sprintf("cluster_name = \"c\"\nwork_dir = %q\nterraform {\n  binary = %q\n}\n%s", t.TempDir(), repo.Tofu(t), tc.src)
		cfg, err := config.Parse([]byte(src), "cloud.hcl")
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.LoadBalancer(); ok != tc.want {
			t.Errorf("%q: LoadBalancer() ok = %v, want %v", tc.src, ok, tc.want)
		}
	}
}
