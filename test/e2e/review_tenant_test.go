package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewTenantCannotApprove: in review mode a namespace tenant (a real
// ServiceAccount whose Role covers services, configmaps, secrets and events
// of its namespace only) cannot approve its own Service's plan: (a) the
// approval annotation on its Service is refused with a Warning Event naming
// the plan's ConfigMap in tfccm's namespace and `tfccm approve`, and nothing
// is applied; (b) a ConfigMap named like the plan, approval included, in
// its own namespace changes nothing; (c) patching the plan ConfigMap in
// tfccm's namespace is forbidden by the apiserver. Then an approver (a user
// in the approvers' group, whose Role is get/list/watch/patch on ConfigMaps
// in tfccm's namespace, nothing else) runs the real `tfccm approve`, and
// the plan is applied: the VIP serves.
func TestReviewTenantCannotApprove(t *testing.T) {
	const (
		tfccmNS  = "tfccm-system"
		tenantNS = "team-a"
	)
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	admin := cluster.Client()
	ctx := context.Background()
	for _, ns := range []string{tfccmNS, tenantNS} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("namespace = %q\n", tfccmNS)+harness.Block("load_balancer", cloud.LBSettings()), "review = true")
	serveNodes(t, cloud, 30080)
	createNode(t, admin, cloud, "node-a")
	startCCM(t, cluster, cfg)

	tenant := tenantClient(t, cluster, tenantNS, "tenant")
	svc, err := tenant.CoreV1().Services(tenantNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tenantNS},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the tenant creates its Service: %v", err)
	}
	var plan *corev1.ConfigMap
	eventually(t, 2*time.Minute, "the plan published in tfccm's namespace", func(ctx context.Context) error {
		cm, err := planConfigMapIn(ctx, admin, tfccmNS, svc)
		if err != nil {
			return err
		}
		if !annotations.ValidPlanHash(cm.Annotations[annotations.PlanHash]) {
			return fmt.Errorf("ConfigMap %s: hash %q", cm.Name, cm.Annotations[annotations.PlanHash])
		}
		if ev := harness.Events(ctx, admin, tenantNS, "web"); !strings.Contains(ev, lbcontroller.ReasonPlanPendingApproval) {
			return fmt.Errorf("no %s Event: %s", lbcontroller.ReasonPlanPendingApproval, ev)
		}
		plan = cm
		return nil
	})
	hash := plan.Annotations[annotations.PlanHash]
	if own, err := tenant.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID}); err != nil || len(own.Items) != 0 {
		t.Fatalf("plan objects in the tenant's namespace: %v %v", err, own)
	}
	if own, err := tenant.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID}); err != nil || len(own.Items) != 0 {
		t.Fatalf("plan Secrets in the tenant's namespace: %v %v", err, own)
	}
	// The plan shows the admin's settings (here the VIP pool; on bare
	// metal the LB hosts' addresses too) to the approver; nothing the
	// tenant can read carries them (#46: published plans in the Service's
	// namespace did).
	adminOnly := []string{cloud.VIPPool}
	if text := fmt.Sprint(plan.Data); !strings.Contains(text, cloud.VIPPool) {
		t.Fatalf("the published plan does not show settings.vip_pool %s: the check below would prove nothing; plan:\n%s", cloud.VIPPool, text)
	}
	var readable strings.Builder
	if cms, err := tenant.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{}); err == nil {
		fmt.Fprint(&readable, cms.Items)
	} else {
		t.Fatal(err)
	}
	if secs, err := tenant.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{}); err == nil {
		fmt.Fprint(&readable, secs.Items)
	} else {
		t.Fatal(err)
	}
	if s, err := tenant.CoreV1().Services(tenantNS).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		fmt.Fprint(&readable, s)
	} else {
		t.Fatal(err)
	}
	fmt.Fprint(&readable, harness.Events(ctx, admin, tenantNS, "web"))
	for _, v := range adminOnly {
		if strings.Contains(readable.String(), v) {
			t.Errorf("the tenant's namespace shows the admin's setting %q", v)
		}
	}
	notApplied := func(t *testing.T) {
		t.Helper()
		time.Sleep(5 * time.Second)
		s, err := admin.CoreV1().Services(tenantNS).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Fatalf("the plan was applied: VIP %v", s.Status.LoadBalancer.Ingress)
		}
		if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate")); len(states) != 0 {
			t.Fatalf("state written: %v", states)
		}
	}

	t.Run("the annotation on its Service is refused", func(t *testing.T) {
		patch := mergePatch(t, map[string]string{annotations.ApprovedPlan.Name: hash})
		if _, err := tenant.CoreV1().Services(tenantNS).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("the tenant annotates its Service: %v", err)
		}
		eventually(t, time.Minute, "a Warning Event saying why", func(ctx context.Context) error {
			ev := harness.Events(ctx, admin, tenantNS, "web")
			for _, want := range []string{lbcontroller.ReasonApprovalIgnored, "approves nothing", tfccmNS + "/" + plan.Name, "tfccm approve --namespace " + tenantNS + " --service web"} {
				if !strings.Contains(ev, want) {
					return fmt.Errorf("events lack %q: %s", want, ev)
				}
			}
			return nil
		})
		notApplied(t)
	})

	t.Run("a ConfigMap named like the plan in its namespace changes nothing", func(t *testing.T) {
		forged := plan.DeepCopy()
		forged.ObjectMeta = metav1.ObjectMeta{Name: plan.Name, Namespace: tenantNS, Labels: plan.Labels,
			Annotations: map[string]string{annotations.PlanHash: hash, annotations.ApprovedPlan.Name: hash}}
		if _, err := tenant.CoreV1().ConfigMaps(tenantNS).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the tenant writes its own ConfigMap: %v", err)
		}
		notApplied(t)
	})

	t.Run("the plan ConfigMap in tfccm's namespace is forbidden", func(t *testing.T) {
		patch := mergePatch(t, map[string]string{annotations.ApprovedPlan.Name: hash})
		if _, err := tenant.CoreV1().ConfigMaps(tfccmNS).Patch(ctx, plan.Name, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the tenant's patch of %s/%s: %v, want forbidden", tfccmNS, plan.Name, err)
		}
		if _, err := tenant.CoreV1().ConfigMaps(tfccmNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tfccm-plan-x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the tenant's create in %s: %v, want forbidden", tfccmNS, err)
		}
		if _, err := tenant.CoreV1().Secrets(tfccmNS).Get(ctx, plan.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the tenant's read of the sealed plan: %v, want forbidden", err)
		}
		notApplied(t)
	})

	// The approver: a user of the approvers' group, allowed only on
	// ConfigMaps in tfccm's namespace, runs the real CLI.
	approverKubeconfig := approverFor(t, cluster, tfccmNS, "alice", "tfccm-approvers")
	out, err := exec.Command(repo.Build(t, "./cmd/tfccm"), "approve", "--kubeconfig", approverKubeconfig, "--tfccm-namespace", tfccmNS,
		"--namespace", tenantNS, "--service", "web", "--plan-hash", hash).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Approved plan "+hash) {
		t.Fatalf("tfccm approve as the approver: %v\n%s", err, out)
	}
	start := time.Now()
	vip, err := harness.WaitForIngress(ctx, admin, tenantNS, "web", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("approved plan applied and the Service's status written %s after `tfccm approve`", time.Since(start).Round(time.Millisecond))
	backendsAre(t, vip, 80, "node-a")
	eventually(t, time.Minute, "plan ConfigMap and Secret removed after the apply", func(ctx context.Context) error {
		if _, err := planConfigMapIn(ctx, admin, tfccmNS, svc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap still there (%v)", err)
		}
		if s, err := admin.CoreV1().Secrets(tfccmNS).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID}); err != nil || len(s.Items) != 0 {
			return fmt.Errorf("plan Secrets left: %v", err)
		}
		return nil
	})
}

// tenantClient creates ServiceAccount name in namespace with a Role on
// services, configmaps, secrets and events there (what a namespace tenant
// owns) and returns a client acting as it, with a token from the
// TokenRequest API (what `kubectl create token` asks for).
func tenantClient(t *testing.T, cluster *devcluster.Cluster, namespace, name string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	admin := cluster.Client()
	if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services", "configmaps", "secrets", "events"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tok *authenticationv1.TokenRequest
	eventually(t, 30*time.Second, "a token for "+namespace+"/"+name, func(ctx context.Context) (err error) {
		tok, err = admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		return err
	})
	rc := cluster.RESTConfig()
	rc.TLSClientConfig = rest.TLSClientConfig{CAFile: cluster.CACert()}
	rc.CertFile, rc.KeyFile, rc.CertData, rc.KeyData = "", "", nil, nil
	rc.BearerToken = tok.Status.Token
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	// It is who it says: its own namespace's Services, nothing elsewhere.
	eventually(t, 30*time.Second, "the tenant's RBAC in force", func(ctx context.Context) error {
		if _, err := c.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if _, err := c.CoreV1().Services("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("the tenant lists Services in default: %v", err)
		}
		return nil
	})
	return c
}

// approverFor writes a kubeconfig for user in group, and a Role and
// RoleBinding giving group what an approver needs: get, list, watch and
// patch on ConfigMaps in tfccm's namespace, nothing else.
func approverFor(t *testing.T, cluster *devcluster.Cluster, tfccmNS, user, group string) string {
	t.Helper()
	ctx := context.Background()
	admin := cluster.Client()
	if _, err := admin.RbacV1().Roles(tfccmNS).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-approver"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(tfccmNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-approvers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tfccm-approver"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: group}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := cluster.UserKubeconfig(user, "127.0.0.1", user, group)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// mergePatch is the merge patch setting annotations.
func mergePatch(t *testing.T, annots map[string]string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annots}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
