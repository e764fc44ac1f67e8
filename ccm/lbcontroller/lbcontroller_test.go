package lbcontroller

import (
	"testing"

	"github.com/tfccm/tfccm/config"
)

// approvingEngine is a fake engine that takes every approval.
type approvingEngine struct{ *fakeLBEngine }

func (approvingEngine) Approve(string, string) error { return nil }

// TestAttachServesTheClass: the class loop serves load_balancer_class
// whether or not class-less Services are served; the service controller's
// LoadBalancer exists unless load balancers are off.
func TestAttachServesTheClass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		wantLB bool
	}{{"default", "", true}, {"class only", "serve_classless = false\n", true}, {"load balancers off", "load_balancer {\n  enabled = false\n}\n", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("cluster_name = \"c\"\n"+tc.src), "cloud.hcl")
			if err != nil {
				t.Fatal(err)
			}
			c := New(cfg, nil, true)
			c.Attach(approvingEngine{&fakeLBEngine{}})
			if got := c.LoadBalancer() != nil; got != tc.wantLB {
				t.Fatalf("LoadBalancer() set = %v, want %v", got, tc.wantLB)
			}
			if tc.wantLB && (c.class == nil || c.class.class != testClass || !c.Reviewing()) {
				t.Errorf("class loop %+v, reviewing %v", c.class, c.Reviewing())
			}
		})
	}
}
