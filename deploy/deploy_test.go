package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/templates"
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
	// The base's cloud config is valid and names the image's paths and a
	// built-in set: the lbhost provider installs from the image's mirror.
	cfg, err := config.Load("base/cloud.hcl")
	if err != nil {
		t.Fatalf("base/cloud.hcl: %v", err)
	}
	if cfg.Terraform.CLIConfigFile != image.CLIConfig || cfg.WorkDir != image.WorkDir {
		t.Errorf("base/cloud.hcl: cli_config_file %q, work_dir %q; want the image's %s and %s", cfg.Terraform.CLIConfigFile, cfg.WorkDir, image.CLIConfig, image.WorkDir)
	}
	if _, err := templates.LoadBuiltin(cfg.TemplateSet); err != nil {
		t.Errorf("base/cloud.hcl: template_set %q is not built in: %v", cfg.TemplateSet, err)
	}
	mounts := map[string]bool{}
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, p := range []string{filepath.Dir(flagValue(args, "--cloud-config")), cfg.WorkDir, cfg.OverrideDir} {
		if !mounts[p] {
			t.Errorf("the base's Deployment mounts nothing at %s", p)
		}
	}
}

// flagValue is the value of --name=value in the space-separated args.
func flagValue(args, name string) string {
	for _, a := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
