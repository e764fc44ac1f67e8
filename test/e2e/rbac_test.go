package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// TestCCMRunsUnderShippedRBAC applies deploy/base's ServiceAccount and RBAC
// to a real apiserver and runs the CCM with that ServiceAccount's token: it
// must take the leader Lease, add the load-balancer finalizer to a Service
// and record Events — all through the permissions we ship, nothing more.
func TestCCMRunsUnderShippedRBAC(t *testing.T) {
	cluster := devcluster.ForTest(t)
	admin := cluster.Client()
	ctx := context.Background()

	objs, err := deploy.Objects(filepath.Join(repoRoot(t), "deploy", "base"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Namespace:
			_, err = admin.CoreV1().Namespaces().Create(ctx, v, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = admin.CoreV1().ServiceAccounts(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = admin.RbacV1().Roles(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = admin.RbacV1().RoleBindings(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			t.Fatalf("apply %T: %v", o, err)
		}
	}
	kubeconfig, _ := serviceAccountKubeconfig(t, cluster, "cloud-controller-manager")
	cfg, _ := writeCloudConfig(t, t.TempDir(), "")
	ccmUsesOnlyItsGrants(t, cluster, kubeconfig, cfg, "rbac")
}

// ccmUsesOnlyItsGrants runs the CCM with kubeconfig (a ServiceAccount's
// token): it must take the leader Lease, add the load-balancer finalizer
// to a Service named svcName and record Events, and never be refused a
// call ("is forbidden" in its log).
func ccmUsesOnlyItsGrants(t *testing.T, cluster *devcluster.Cluster, kubeconfig, cfg, svcName string) {
	t.Helper()
	admin := cluster.Client()
	ctx := context.Background()
	ccm := startCCMWithKubeconfig(t, kubeconfig, cfg)
	eventually(t, time.Minute, "leader Lease taken by the ServiceAccount", func(ctx context.Context) error {
		if ccm.Exited() {
			return fmt.Errorf("CCM exited: %s", ccm.LogTail(20))
		}
		l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil {
			return fmt.Errorf("no holder")
		}
		return nil
	})

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: "default"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}},
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "finalizer added and Events recorded", func(ctx context.Context) error {
		s, err := admin.CoreV1().Services("default").Get(ctx, svcName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Finalizers) == 0 {
			return fmt.Errorf("no finalizer yet")
		}
		ev := harness.Events(ctx, admin, s.Namespace, s.Name)
		// The local template needs settings this config does not give:
		// the render fails, and says so on the Service.
		if !strings.Contains(ev, "EnsuringLoadBalancer") || !strings.Contains(ev, "TerraformRenderFailed") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	if log := ccm.Log(); strings.Contains(log, "is forbidden") {
		i := strings.Index(log, "is forbidden")
		t.Errorf("the CCM hit a permission it was not granted: ...%s", log[max(0, i-300):min(len(log), i+200)])
	}
}
