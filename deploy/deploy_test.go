package deploy

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
)

func TestManifests(t *testing.T) {
	objs, err := Objects("base")
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, o := range objs {
		if v, ok := o.(*appsv1.Deployment); ok {
			dep = v
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
	// What the controllers need, cluster-wide; the leader Lease (the
	// binary's default, kube-system/tfccm, and the earlier releases') by name.
	got := strings.Join(grants(t, objs, dep.Namespace, dep.Spec.Template.Spec.ServiceAccountName), "\n")
	for _, want := range []string{
		"*  services/status patch", "*  services list", "*  services watch", "*  services patch",
		"*  nodes get", "*  nodes update", "*  nodes delete", "*  events create", "*  events patch",
		"kube-system coordination.k8s.io leases get tfccm,cloud-controller-manager", "kube-system coordination.k8s.io leases update tfccm,cloud-controller-manager", "kube-system coordination.k8s.io leases create",
		"tfccm-state  secrets get",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the base does not grant %q:\n%s", want, got)
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
	if cfg.Terraform.ProviderLockFile != image.ProviderLockFile {
		t.Errorf("base/cloud.hcl: provider_lock_file %q, want the image's %s", cfg.Terraform.ProviderLockFile, image.ProviderLockFile)
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

// TestBaseRenders: `kubectl kustomize deploy/base` (the repository's
// kubectl) renders a Deployment whose cloud config ConfigMap (name hashed
// by kustomize) the CCM accepts and which names the image's CLI config.
func TestBaseRenders(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(root, "bin", "kubectl")
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "deploy", "base")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/base: %v (run `make tools`)", err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	var dep *appsv1.Deployment
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if strings.HasPrefix(v.Name, "tfccm-cloud-config") {
				cm = v
			}
		case *appsv1.Deployment:
			dep = v
		}
	}
	if cm == nil || dep == nil {
		t.Fatalf("rendered base: cloud config %v, Deployment %v", cm != nil, dep != nil)
	}
	var mounted bool
	for _, v := range dep.Spec.Template.Spec.Volumes {
		mounted = mounted || v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
	}
	if !mounted {
		t.Errorf("the Deployment does not mount the cloud config ConfigMap %s", cm.Name)
	}
	cfg, err := config.Parse([]byte(cm.Data["cloud.hcl"]), "cloud.hcl")
	if err != nil {
		t.Fatalf("the rendered cloud config is refused: %v", err)
	}
	if cfg.Terraform.CLIConfigFile != image.CLIConfig {
		t.Errorf("the rendered cloud config's cli_config_file is %q, not the image's %s", cfg.Terraform.CLIConfigFile, image.CLIConfig)
	}
}
