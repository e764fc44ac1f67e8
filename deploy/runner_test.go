package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
)

// TestHelmRunner: runner.enabled writes terraform { runner = "job" } with
// the CCM's image, which tfccm accepts, and ships the runners'
// ServiceAccount with only its result Secrets and the state backend's
// Secrets and Leases (in the state's namespace of its own, tfccm-state by
// default); the CCM may drive Jobs in the runner namespace.
func TestHelmRunner(t *testing.T) {
	objs := objects(t, "default", "runner.enabled=true", "runner.hostNetwork=true", "runner.namespace=tfccm-runners", "runner.nodeSelector.pool=tofu", "runner.tolerations[0]=dedicated=tofu:NoSchedule", "sshKey.existingSecret=ssh")
	var cfg *config.Config
	var runnerSA, ccmSA *corev1.ServiceAccount
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if v.Name == "tfccm-cloud-config" {
				var err error
				if cfg, err = chartCloudConfig(t, v); err != nil {
					t.Fatal(err)
				}
			}
		case *corev1.ServiceAccount:
			if v.Name == "tfccm-runner" {
				runnerSA = v
			} else if v.Annotations["helm.sh/hook"] == "" {
				ccmSA = v
			}
		}
	}
	if cfg == nil || runnerSA == nil || ccmSA == nil {
		t.Fatal("cloud config or a ServiceAccount missing")
	}
	j := cfg.Terraform.Job
	_, spec := podSpec(t, objs)
	if cfg.Terraform.Runner != config.RunnerJob || j.Image != spec.Containers[0].Image || j.Namespace != "tfccm-runners" || !j.HostNetwork || j.SecretMounts["/etc/tfccm/ssh"] != "ssh" || j.NodeSelector["pool"] != "tofu" || !slices.Equal(j.Tolerations, []string{"dedicated=tofu:NoSchedule"}) {
		t.Errorf("job settings %+v (CCM image %s)", j, spec.Containers[0].Image)
	}
	got := grants(t, objs, runnerSA.Namespace, runnerSA.Name)
	want := []string{
		"tfccm-runners  secrets create",
		"tfccm-state  secrets create", "tfccm-state  secrets delete", "tfccm-state  secrets get", "tfccm-state  secrets list", "tfccm-state  secrets update",
		"tfccm-state coordination.k8s.io leases create", "tfccm-state coordination.k8s.io leases delete", "tfccm-state coordination.k8s.io leases get", "tfccm-state coordination.k8s.io leases list", "tfccm-state coordination.k8s.io leases update",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runner grants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ccm := strings.Join(grants(t, objs, ccmSA.Namespace, ccmSA.Name), "\n")
	for _, g := range []string{"tfccm-runners batch jobs create", "tfccm-runners batch jobs patch", "tfccm-runners  pods list", "tfccm-runners apps deployments delete"} {
		if !strings.Contains(ccm, g) {
			t.Errorf("the CCM lacks %q", g)
		}
	}
	// Without runner.pool the CCM execs into nothing.
	for _, g := range []string{"pods/exec", "deployments create", "pods delete"} {
		if strings.Contains(ccm, g) {
			t.Errorf("without runner.pool the CCM has %q", g)
		}
	}
	if j.Pool != 0 {
		t.Errorf("pool %d without runner.pool", j.Pool)
	}
}

// TestHelmRunnerPool: runner.pool writes terraform.job.pool and grants the
// CCM the pool's rules in the runners' namespace only (a Role): pods/exec
// get and create (WebSocket exec needs both), pods get, list, delete, deployments get, create, update, delete.
func TestHelmRunnerPool(t *testing.T) {
	objs := objects(t, "default", "runner.enabled=true", "runner.namespace=tfccm-runners", "runner.pool=3")
	var cfg *config.Config
	var ccmSA *corev1.ServiceAccount
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if v.Name == "tfccm-cloud-config" {
				var err error
				if cfg, err = chartCloudConfig(t, v); err != nil {
					t.Fatal(err)
				}
			}
		case *corev1.ServiceAccount:
			if v.Name != "tfccm-runner" && v.Annotations["helm.sh/hook"] == "" {
				ccmSA = v
			}
		}
	}
	if cfg == nil || ccmSA == nil {
		t.Fatal("cloud config or the CCM's ServiceAccount missing")
	}
	if cfg.Terraform.Job.Pool != 3 {
		t.Errorf("terraform.job.pool = %d, want 3", cfg.Terraform.Job.Pool)
	}
	var pool []string
	for _, g := range grants(t, objs, ccmSA.Namespace, ccmSA.Name) {
		if strings.Contains(g, "pods") || strings.Contains(g, "deployments") {
			pool = append(pool, g)
		}
	}
	want := []string{
		"tfccm-runners  pods delete", "tfccm-runners  pods get", "tfccm-runners  pods list", "tfccm-runners  pods/exec create", "tfccm-runners  pods/exec get",
		"tfccm-runners apps deployments create", "tfccm-runners apps deployments delete", "tfccm-runners apps deployments get", "tfccm-runners apps deployments update",
	}
	slices.Sort(pool)
	slices.Sort(want)
	if strings.Join(pool, "\n") != strings.Join(want, "\n") {
		t.Errorf("the CCM's pod and Deployment grants:\n%s\nwant (the runners' namespace only):\n%s", strings.Join(pool, "\n"), strings.Join(want, "\n"))
	}
}
