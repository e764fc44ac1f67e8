package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/instances/mapping"
	"github.com/tfccm/tfccm/templates"
)

// exampleSets are the template sets the chart's examples/ must cover.
var exampleSets = []string{"baremetal", "hcloud", "openstack", "digitalocean"}

// TestHelmExamples renders every values file of the chart's examples/ and
// checks what the CCM would do with it: its own config decoding accepts
// the cloud config, the template set (with the chart's override files)
// loads and renders a LoadBalancer Service with the example's settings,
// an instances mapping parses, and each credential key reaches the pod
// and terraform.pass_env.
func TestHelmExamples(t *testing.T) {
	root, bin := helm(t)
	files, err := filepath.Glob(filepath.Join(root, Chart, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := HelmTemplate(bin, root, "tfccm", "kube-system", []string{f})
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			var cloudConfig, baremetalValues string
			tmplFiles := map[string]string{}
			var pod corev1.PodSpec
			for _, o := range objs {
				switch v := o.(type) {
				case *corev1.ConfigMap:
					switch v.Name {
					case "tfccm-cloud-config":
						cloudConfig, baremetalValues = v.Data["cloud.hcl"], v.Data["baremetal.json"]
					case "tfccm-templates":
						tmplFiles = v.Data
					}
				case *appsv1.Deployment:
					pod = v.Spec.Template.Spec
				}
			}
			dir := t.TempDir()
			cfgFile := filepath.Join(dir, "cloud.hcl")
			if err := os.WriteFile(cfgFile, []byte(cloudConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			if baremetalValues != "" {
				if err := os.WriteFile(filepath.Join(dir, "baremetal.json"), []byte(baremetalValues), 0o644); err != nil {
					t.Fatal(err)
				}
				if !podMounts(pod, "config", "baremetal.json") {
					t.Error("the pod does not mount baremetal.json beside the cloud config")
				}
			}
			cfg, err := config.Load(cfgFile)
			if err != nil {
				t.Fatalf("the CCM refuses the rendered cloud config: %v\n%s", err, cloudConfig)
			}
			covered[cfg.TemplateSet] = true
			if cfg.Terraform.CLIConfigFile != image.CLIConfig || cfg.WorkDir != image.WorkDir {
				t.Errorf("cli_config_file %q, work_dir %q: not the image's", cfg.Terraform.CLIConfigFile, cfg.WorkDir)
			}
			// The override files as the pod sees them (the volume's items).
			if cfg.OverrideDir != "" {
				over := filepath.Join(dir, "templates")
				for _, v := range pod.Volumes {
					if v.Name != "templates" {
						continue
					}
					for _, it := range v.ConfigMap.Items {
						p := filepath.Join(over, it.Path)
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, []byte(tmplFiles[it.Key]), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				cfg.OverrideDir = over
			}
			loader, err := templates.NewLoader(cfg)
			if err != nil {
				t.Fatalf("template set %s: %v", cfg.TemplateSet, err)
			}
			set := loader.Set()
			if src, name, err := set.InstancesMapping(); err == nil {
				if _, err := mapping.Parse(src, name); err != nil {
					t.Errorf("instances mapping: %v", err)
				}
			} else if len(cfg.Instances.Sources) > 0 {
				t.Errorf("instances sources but no mapping: %v", err)
			}
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "0b5c6a1e-5a43-4f0e-9b4e-2b8f7f0d9c11"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
					{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://1"},
				Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.10"}}}}
			if _, err := set.RenderLoadBalancer(cfg, svc, []*corev1.Node{node}, templates.Addresses{}); err != nil {
				t.Errorf("a LoadBalancer Service does not render with the example's settings: %v", err)
			}
			// Credentials are declared once: env from the Secret and pass_env.
			env := map[string]bool{}
			for _, e := range pod.Containers[0].Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					env[e.Name] = true
				}
			}
			for k := range env {
				if !slices.Contains(cfg.Terraform.PassEnv, k) {
					t.Errorf("credential %s is not in terraform.pass_env %v", k, cfg.Terraform.PassEnv)
				}
			}
			if len(env) != len(cfg.Terraform.PassEnv) {
				t.Errorf("pass_env %v, credential variables %v", cfg.Terraform.PassEnv, env)
			}
			// The proxmox mapping is the set's own file, not a copy that drifts.
			if m, ok := tmplFiles[templateKeyOf(pod, "instances.hcl")]; ok && strings.Contains(m, "proxmox_virtual_environment_vm") {
				want, err := os.ReadFile(filepath.Join(root, "templates", "proxmox", "instances.hcl"))
				if err != nil {
					t.Fatal(err)
				}
				if m != string(want) {
					t.Errorf("%s's instances.hcl differs from templates/proxmox/instances.hcl: copy it again", filepath.Base(f))
				}
			}
		})
	}
	for _, s := range exampleSets {
		if !covered[s] {
			t.Errorf("no example for the %s set", s)
		}
	}
}

// podMounts reports whether the pod's volume vol holds ConfigMap key at
// the path of the same name.
func podMounts(pod corev1.PodSpec, vol, key string) bool {
	for _, v := range pod.Volumes {
		if v.Name == vol && v.ConfigMap != nil {
			for _, it := range v.ConfigMap.Items {
				if it.Key == key && it.Path == key {
					return true
				}
			}
		}
	}
	return false
}

// templateKeyOf is the templates ConfigMap key the pod mounts at path.
func templateKeyOf(pod corev1.PodSpec, path string) string {
	for _, v := range pod.Volumes {
		if v.Name == "templates" && v.ConfigMap != nil {
			for _, it := range v.ConfigMap.Items {
				if it.Path == path {
					return it.Key
				}
			}
		}
	}
	return ""
}
