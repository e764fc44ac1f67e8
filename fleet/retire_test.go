package fleet

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// TestRetiredRow: the peering's destroy preview is a destroy now when no
// Service of the bgp variant is left, and otherwise a kept row that
// counts no destroy (its destroy only as what follows later) and names
// the Services that keep it.
func TestRetiredRow(t *testing.T) {
	p := &workspace.Preview{Remove: 3, Summary: "0 to add, 0 to change, 3 to destroy"}
	many := []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7"}
	for _, tc := range []struct {
		name        string
		users       []string
		wantDestroy int
		wantKept    bool
		wantLater   int
		wantChanges bool
		wantNote    []string
	}{
		{name: "unused: destroyed now", wantDestroy: 3, wantChanges: true, wantNote: []string{"destroyed:", "no bgp in load_balancer.settings", "no Service of the bgp variant is left"}},
		{name: "one user: kept", users: []string{"shop/web"}, wantKept: true, wantLater: 3,
			wantNote: []string{"kept: 1 Service(s) of the bgp variant still announce over it (shop/web)", "its destroy (-3) follows once none is left"}},
		{name: "many users: kept, the list cut short", users: many, wantKept: true, wantLater: 3,
			wantNote: []string{"kept: 7 Service(s)", "(a/1, a/2, a/3, a/4, a/5 and 2 more)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := retiredRow(Row{Target: templates.PeeringWorkspaceName, Retired: true}, p, tc.users)
			if r.Destroy != tc.wantDestroy || r.Kept != tc.wantKept || r.Later != tc.wantLater || r.Changes() != tc.wantChanges {
				t.Errorf("destroy %d kept %v later %d changes %v; want %d %v %d %v", r.Destroy, r.Kept, r.Later, r.Changes(), tc.wantDestroy, tc.wantKept, tc.wantLater, tc.wantChanges)
			}
			for _, w := range tc.wantNote {
				if !strings.Contains(r.Note, w) {
					t.Errorf("note %q lacks %q", r.Note, w)
				}
			}
			if tc.wantKept && r.Summary != "" {
				t.Errorf("a kept row carries the destroy's summary %q", r.Summary)
			}
		})
	}
}

// TestTargetsRetiredPeering: settings without bgp make the peering's
// destroy a target when the state backend keeps a catalog (not with the
// local backend), with the Services the controller counts as its users:
// LoadBalancer Services of the set's bgp variant, not another variant's,
// not a ClusterIP Service's.
func TestTargetsRetiredPeering(t *testing.T) {
	set, err := templates.LoadBuiltin("nodes")
	if err != nil {
		t.Fatal(err)
	}
	svc := func(name string, typ corev1.ServiceType, variant string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		if variant != "" {
			s.Annotations["tfccm.io/template"] = variant
		}
		return s
	}
	services := []*corev1.Service{
		svc("web", corev1.ServiceTypeLoadBalancer, "bgp"),
		svc("api", corev1.ServiceTypeLoadBalancer, "bgp"),
		svc("plain", corev1.ServiceTypeLoadBalancer, ""),
		svc("internal", corev1.ServiceTypeClusterIP, "bgp"),
	}
	for _, tc := range []struct {
		name, backend, settings string
		want                    bool
		wantUsers               string
	}{
		{"kubernetes backend, no bgp", `backend "kubernetes" {
  namespace = "tfccm"
}`, `namespace = "tfccm"`, true, "shop/api shop/web"},
		{"pg backend, no bgp", `backend "pg" {
  conn_str = "postgres://tfccm:s3cret@db/tfccm"
}`, `namespace = "tfccm"`, true, "shop/api shop/web"},
		{"local backend: no catalog", "", `namespace = "tfccm"`, false, ""},
		{"bgp: applied, not retired", `backend "kubernetes" {
  namespace = "tfccm"
}`, `namespace = "tfccm", bgp = { asn = 64512, peers = [], pools = [] }`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("cluster_name = \"c\"\ntemplate_set = \"nodes\"\n"+tc.backend+"\nload_balancer {\n  settings = { "+tc.settings+" }\n}\n"), "cloud.hcl")
			if err != nil {
				t.Fatal(err)
			}
			var got *Target
			for _, tg := range Targets(cfg, set, services, nil, nil) {
				if tg.Peering {
					got = &tg
				}
			}
			retired := got != nil && got.Retire != nil
			if retired != tc.want {
				t.Fatalf("retired peering target %+v, want %v", got, tc.want)
			}
			if !retired {
				return
			}
			if got.Err != nil || got.Spec != nil || got.ID() != templates.PeeringWorkspaceName {
				t.Errorf("target: err %v, spec %v, id %q", got.Err, got.Spec, got.ID())
			}
			if u := strings.Join(got.Retire.Users, " "); u != tc.wantUsers {
				t.Errorf("users %q, want %q", u, tc.wantUsers)
			}
			if got.Retire.Catalog == nil || got.Retire.Catalog.Name != "tfccm-catalog" {
				t.Errorf("catalog backend %+v", got.Retire.Catalog)
			}
			spec, err := got.Retire.Backend(workspace.Spec{Name: templates.PeeringWorkspaceName, Module: "bgp"})
			if err != nil || spec.Backend.Type != cfg.Backend.Type {
				t.Fatalf("the entry's backend: %+v, %v", spec.Backend, err)
			}
			// The peering's own state, where the controller applied it.
			key := map[string]string{"kubernetes": "secret_suffix", "pg": "schema_name"}[cfg.Backend.Type]
			want := map[string]string{"kubernetes": "bgp-peering", "pg": "tfccm_bgp_peering"}[cfg.Backend.Type]
			if v := spec.Backend.Attributes[key]; v.IsNull() || v.AsString() != want {
				t.Errorf("the entry's backend %s = %#v, want %q", key, v, want)
			}
		})
	}
}
