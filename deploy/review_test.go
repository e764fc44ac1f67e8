package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tfccm/tfccm/annotations"
)

// TestHelmReview: in a release namespace of its own, review.enabled writes
// review = true and tfccm's namespace (the release's, also the leader
// Lease's); the CCM gets ConfigMaps and Secrets there and nowhere else, and
// the approvers exactly get, list, watch and patch on that namespace's
// ConfigMaps.
func TestHelmReview(t *testing.T) {
	objs := objects(t, "review")
	var approvers *rbacv1.RoleBinding
	var approverRole *rbacv1.Role
	var policy *admissionv1.ValidatingAdmissionPolicy
	for _, o := range objs {
		switch v := o.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			policy = v
		case *corev1.ConfigMap:
			if v.Name != "tfccm-cloud-config" {
				continue
			}
			cfg, err := chartCloudConfig(t, v)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.Terraform.Review || cfg.Namespace != "tfccm-system" || cfg.BackendNamespace() != "tfccm-state" || cfg.Terraform.Job.Namespace != "tfccm-runners" {
				t.Errorf("cloud config: review %v, namespace %q, state %q, runners %q", cfg.Terraform.Review, cfg.Namespace, cfg.BackendNamespace(), cfg.Terraform.Job.Namespace)
			}
		case *rbacv1.RoleBinding:
			if v.Name == "tfccm:approvers" {
				approvers = v
			}
		case *rbacv1.Role:
			if v.Name == "tfccm:approvers" {
				approverRole = v
			}
		}
	}
	_, spec := podSpec(t, objs)
	if !slices.Contains(spec.Containers[0].Args, "--leader-elect-resource-namespace=tfccm-system") {
		t.Errorf("args %v: the leader Lease is not in the release namespace", spec.Containers[0].Args)
	}
	if approvers == nil || approverRole == nil || approvers.Namespace != "tfccm-system" || approverRole.Namespace != "tfccm-system" {
		t.Fatalf("approvers: RoleBinding %+v, Role %+v", approvers, approverRole)
	}
	var subjects []string
	for _, s := range approvers.Subjects {
		subjects = append(subjects, s.Kind+"/"+s.Name+"/"+s.APIGroup)
	}
	if got := strings.Join(subjects, " "); got != "Group/tfccm-approvers/rbac.authorization.k8s.io User/alice/rbac.authorization.k8s.io" {
		t.Errorf("approvers: %s", got)
	}
	if len(approverRole.Rules) != 1 || strings.Join(approverRole.Rules[0].Resources, " ") != "configmaps" || strings.Join(approverRole.Rules[0].Verbs, " ") != "get list watch patch" {
		t.Errorf("approvers may %+v", approverRole.Rules)
	}
	// The approvers' admission policy knows the published plans' names
	// (TestChartAccessMatrix checks what it lets through).
	if policy == nil || len(policy.Spec.Validations) != 1 || !strings.Contains(policy.Spec.Validations[0].Expression, "startsWith('"+annotations.PlanConfigMapPrefix+"')") {
		t.Errorf("approvers' admission policy %+v: not limited to plans %s*", policy, annotations.PlanConfigMapPrefix)
	}
	// The CCM: ConfigMaps and Secrets only in tfccm's namespaces, Secrets
	// nowhere cluster-wide.
	for _, g := range grants(t, objs, "tfccm-system", "tfccm") {
		f := strings.Fields(g)
		if len(f) < 4 || (f[2] != "secrets" && f[2] != "configmaps") {
			continue
		}
		if !slices.Contains([]string{"tfccm-system", "tfccm-state", "tfccm-runners"}, f[0]) && g != "kube-system  configmaps get extension-apiserver-authentication" {
			t.Errorf("the CCM may %s", g)
		}
	}
}

// TestHelmRejectsBadNamespaces: what only a release namespace of its own
// can show: runners beside tfccm or its state, bad approvers.
func TestHelmRejectsBadNamespaces(t *testing.T) {
	root, bin := helm(t)
	for _, tc := range []struct{ values, want string }{
		{"runner: {enabled: true, namespace: tfccm-system}", "runner.namespace tfccm-system is the state's or the release's namespace"},
		{"runner: {enabled: true}\nstateBackend: {kubernetes: {namespace: tfccm-system}}", "stateBackend.kubernetes.namespace tfccm-system is the release namespace: with runner.enabled"},
		{"review: {approvers: [{kind: Role, name: x}]}", "review.approvers: kind Role must be Group, User or ServiceAccount"},
		{"review: {approvers: [{kind: ServiceAccount, name: x}]}", "review.approvers: ServiceAccount x needs a namespace"},
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(tc.values), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := HelmTemplate(bin, root, "tfccm", "tfccm-system", append(caseValues("default"), f))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %s: got %v, want an error containing %q", tc.values, err, tc.want)
		}
	}
}
