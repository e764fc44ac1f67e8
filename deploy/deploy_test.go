package deploy

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tfccm/tfccm/config"
)

func TestManifests(t *testing.T) {
	objs, err := Objects("base")
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	verbs := map[string]map[string]bool{} // "group/resource" -> verbs
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			dep = v
		case *rbacv1.ClusterRole:
			for _, r := range v.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						key := g + "/" + res
						if verbs[key] == nil {
							verbs[key] = map[string]bool{}
						}
						for _, verb := range r.Verbs {
							verbs[key][verb] = true
						}
					}
				}
			}
		}
	}
	if dep == nil {
		t.Fatal("no Deployment")
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Command, " ")
	for _, want := range []string{"--cloud-provider=terraform", "--leader-elect=true", "--cloud-config=/etc/tfccm/config/cloud.hcl"} {
		if !strings.Contains(args, want) {
			t.Errorf("Deployment command lacks %s: %s", want, args)
		}
	}
	for key, want := range map[string][]string{
		"/services/status": {"patch"}, "/services": {"list", "watch", "patch"}, "/nodes": {"*"},
		"/events": {"create", "patch"}, "coordination.k8s.io/leases": {"get", "update", "create"},
	} {
		for _, v := range want {
			if !verbs[key][v] && !verbs[key]["*"] {
				t.Errorf("ClusterRole lacks %s on %s", v, key)
			}
		}
	}
	// The example cloud config is valid.
	if _, err := config.Load("base/cloud.hcl"); err != nil {
		t.Errorf("base/cloud.hcl: %v", err)
	}
}
