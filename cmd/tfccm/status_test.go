package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
)

const (
	statusNS      = "tfccm-system"
	leaderPodName = "tfccm-7d4f9-x1abc"
)

// statusCluster is a cluster as tfccm leaves it, written by hand into a
// real apiserver: the leader Lease and pod in tfccm-system, Services of
// two tenants (shop: one applied, one refused; other: one failing, one
// not a LoadBalancer) with tfccm's conditions, and a plan awaiting
// approval.
func statusCluster(t *testing.T) (*devcluster.Cluster, kubernetes.Interface) {
	t.Helper()
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	for _, ns := range []string{statusNS, "shop", "other"} {
		mustCreate(t, func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, func() error {
			_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		})
	}
	writeLease(t, client, leaderPodName+"_5f1c", time.Now())
	mustCreate(t, func() error {
		_, err := client.CoreV1().Pods(statusNS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: leaderPodName, Labels: map[string]string{"app.kubernetes.io/version": "v9.8.7"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: leaderContainer, Image: "ghcr.io/tfccm/tfccm:v9.8.7",
				Args: []string{"--cloud-provider=terraform", "--cloud-config=/etc/tfccm/config/cloud.hcl"}}}},
		}, metav1.CreateOptions{})
		return err
	})
	lbService(t, client, "shop", "web", metav1.Condition{Type: lbcontroller.ConditionProgrammed, Status: metav1.ConditionTrue, Reason: lbcontroller.CondReasonApplied})
	lbService(t, client, "shop", "dns", metav1.Condition{Type: lbcontroller.ConditionAccepted, Status: metav1.ConditionFalse, Reason: lbcontroller.CondReasonInvalidInput, Message: "port 53/UDP unsupported"})
	lbService(t, client, "other", "db", metav1.Condition{Type: lbcontroller.ConditionProgrammed, Status: metav1.ConditionFalse, Reason: lbcontroller.CondReasonApplyFailed, Message: "apply: quota exceeded"})
	mustCreate(t, func() error {
		_, err := client.CoreV1().Services("other").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := client.CoreV1().ConfigMaps(statusNS).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: annotations.PlanConfigMapName("lb-x"),
				Labels: map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanKind: annotations.PlanOfLoadBalancer,
					annotations.PlanServiceNamespace: "other", annotations.PlanServiceName: "db"},
				Annotations: map[string]string{annotations.PlanHash: strings.Repeat("ab", 32)}},
			Data: map[string]string{"summary": "1 to add, 0 to change, 0 to destroy"},
		}, metav1.CreateOptions{})
		return err
	})
	return cluster, client
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

// writeLease creates or replaces the leader Lease: held by holder ("" for
// none), taken an hour ago, last renewed at renewed.
func writeLease(t *testing.T, client kubernetes.Interface, holder string, renewed time.Time) {
	t.Helper()
	ctx := context.Background()
	leases := client.CoordinationV1().Leases(statusNS)
	_ = leases.Delete(ctx, annotations.LeaderLease, metav1.DeleteOptions{})
	acquired, renew := metav1.NewMicroTime(time.Now().Add(-time.Hour)), metav1.NewMicroTime(renewed)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: annotations.LeaderLease},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &acquired, RenewTime: &renew}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	mustCreate(t, func() error { _, err := leases.Create(ctx, l, metav1.CreateOptions{}); return err })
}

func lbService(t *testing.T, client kubernetes.Interface, ns, name string, cond metav1.Condition) {
	t.Helper()
	ctx := context.Background()
	svc, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond.LastTransitionTime = metav1.Now()
	svc.Status.Conditions = []metav1.Condition{cond}
	if _, err := client.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// tenantKubeconfig is a kubeconfig of user alice, who may read Services
// in shop and nothing else.
func tenantKubeconfig(t *testing.T, cluster *devcluster.Cluster, client kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, func() error {
		_, err := client.RbacV1().Roles("shop").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "services-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := client.RbacV1().RoleBindings("shop").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "services-reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}, metav1.CreateOptions{})
		return err
	})
	kc, err := cluster.UserKubeconfig("alice", "127.0.0.1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestStatusFromWorkstation runs `tfccm status` against a real apiserver
// as the admin and as a tenant: the admin sees the leader (pod, since
// when, version), every served Service by phase, those not served with
// their condition's reason and message, and the pending plan; the tenant,
// whose RBAC allows reading Services in shop only, sees shop's Services
// and, for the rest, which right they lack, never another tenant's
// Service.
func TestStatusFromWorkstation(t *testing.T) {
	cluster, client := statusCluster(t)
	admin := []string{"status", "--kubeconfig", cluster.Kubeconfig(), "--tfccm-namespace", statusNS}

	code, out, errOut := runCmd(admin...)
	if code != exitOK {
		t.Fatalf("admin: exit %d: %s\n%s", code, errOut, out)
	}
	t.Logf("tfccm status as the admin:\n%s", out)
	wantLines(t, "admin status", out,
		"Leader:     pod "+leaderPodName+" (Lease tfccm-system/tfccm; leading since ", "(60m ago)", "renewed ",
		"Version:    image ghcr.io/tfccm/tfccm:v9.8.7, app.kubernetes.io/version v9.8.7",
		"Services:   3 served: 1 Applied, 1 ApplyFailed, 1 InvalidInput",
		"In flight:  0",
		"other      db    ApplyFailed   apply: quota exceeded",
		"shop       dns   InvalidInput  port 53/UDP unsupported",
		"other      service/db", "1 to add")
	if strings.Contains(out, " ci ") || strings.Contains(out, "web  ") {
		t.Errorf("a Service that is served, or not tfccm's, is listed as not served:\n%s", out)
	}

	tenant := []string{"status", "--kubeconfig", tenantKubeconfig(t, cluster, client), "--tfccm-namespace", statusNS, "--namespace", "shop"}
	code, out, errOut = runCmd(tenant...)
	if code != exitOK {
		t.Fatalf("tenant: exit %d: %s\n%s", code, errOut, out)
	}
	t.Logf("tfccm status as tenant alice:\n%s", out)
	wantLines(t, "tenant status", out,
		"no permission: you may not get leases.coordination.k8s.io tfccm in namespace tfccm-system",
		"Services:   2 served in namespace shop (you may not list services cluster-wide): 1 Applied, 1 InvalidInput",
		"shop       dns",
		"no permission: you may not list configmaps in namespace tfccm-system")
	if strings.Contains(out, "db") || strings.Contains(out, "quota") || strings.Contains(out, leaderPodName) {
		t.Errorf("the tenant sees what their RBAC does not allow:\n%s", out)
	}
	code, out, _ = runCmd(append(tenant[:len(tenant)-1], "other")...)
	if code != exitOK || !strings.Contains(out, "no permission: you may not list services in namespace other") || strings.Contains(out, "quota") {
		t.Errorf("tenant in another namespace: exit %d:\n%s", code, out)
	}
}

// TestStatusLeaderErrors: no Lease (tfccm not installed, or an earlier
// release's Lease only), a Lease without holder and a stale Lease each
// exit 1 with what to check; the rest of the status is still shown.
func TestStatusLeaderErrors(t *testing.T) {
	cluster, client := statusCluster(t)
	admin := []string{"status", "--kubeconfig", cluster.Kubeconfig(), "--tfccm-namespace", statusNS}
	ctx := context.Background()

	writeLease(t, client, leaderPodName+"_5f1c", time.Now().Add(-time.Minute))
	code, out, errOut := runCmd(admin...)
	if code != exitError || !strings.Contains(errOut, "the leader Lease is stale") || !strings.Contains(out, "STALE: renewed 60s ago") {
		t.Errorf("stale Lease: exit %d, %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "3 served") {
		t.Errorf("the Services are not shown beside a stale leader:\n%s", out)
	}

	writeLease(t, client, "", time.Now())
	if code, _, errOut := runCmd(admin...); code != exitError || !strings.Contains(errOut, "no leader: the Lease has no holder") {
		t.Errorf("Lease without holder: exit %d, %s", code, errOut)
	}

	if err := client.CoordinationV1().Leases(statusNS).Delete(ctx, annotations.LeaderLease, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(admin...); code != exitError || !strings.Contains(errOut, "no leader Lease tfccm-system/tfccm: tfccm is not installed there") {
		t.Errorf("no Lease: exit %d, %s", code, errOut)
	}
	old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: annotations.PreviousLeaderLease}}
	if _, err := client.CoordinationV1().Leases(statusNS).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(admin...); code != exitError || !strings.Contains(errOut, "an earlier tfccm release leads through it") {
		t.Errorf("only the previous release's Lease: exit %d, %s", code, errOut)
	}
}

// TestRemoteCommandsFromWorkstation: workspaces and unlock without
// --config go to the leader's pod with the user's rights. A tenant is
// refused before anything runs, with the right named; an unlock of a name
// that is no workspace's is refused before the cluster is asked; against
// this apiserver (no kubelet) the admin's exec reaches the pod's
// subresource and fails there, named.
func TestRemoteCommandsFromWorkstation(t *testing.T) {
	cluster, client := statusCluster(t)
	tenant := tenantKubeconfig(t, cluster, client)
	for _, args := range [][]string{
		{"workspaces", "--kubeconfig", tenant, "--tfccm-namespace", statusNS},
		{"unlock", "--kubeconfig", tenant, "--tfccm-namespace", statusNS, "--workspace", "routes"},
	} {
		code, _, errOut := runCmd(args...)
		if code != exitError || !strings.Contains(errOut, "no permission: you may not get leases.coordination.k8s.io tfccm in namespace tfccm-system") {
			t.Errorf("tenant %s: exit %d, %s", args[0], code, errOut)
		}
	}
	if code, _, errOut := runCmd("unlock", "--kubeconfig", cluster.Kubeconfig(), "--workspace", "../../etc"); code != exitUsage || !strings.Contains(errOut, "is not a workspace name") {
		t.Errorf("unlock of a path: exit %d, %s", code, errOut)
	}
	code, _, errOut := runCmd("workspaces", "--kubeconfig", cluster.Kubeconfig(), "--tfccm-namespace", statusNS, "--timeout", "20s")
	if code != exitError || !strings.Contains(errOut, "(in the leader, pod tfccm-system/"+leaderPodName+")") || !strings.Contains(errOut, "run in pod tfccm-system/"+leaderPodName) {
		t.Errorf("admin workspaces against a pod without a kubelet: exit %d, %s", code, errOut)
	}
	t.Logf("admin workspaces against a pod without a kubelet: %s", errOut)
}

// TestLeaderCommand is the argument vector run in the leader's pod: the
// cloud config its CCM container was started with.
func TestLeaderCommand(t *testing.T) {
	pod := func(c corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    string
		wantErr string
	}{
		{"chart pod", pod(corev1.Container{Name: leaderContainer, Args: []string{"--v=2", "--cloud-config=/etc/tfccm/config/cloud.hcl"}}),
			"tfccm workspaces --config /etc/tfccm/config/cloud.hcl --locks=true", ""},
		{"config in command", pod(corev1.Container{Name: leaderContainer, Command: []string{"/ccm", "--cloud-config=/c.hcl"}}),
			"tfccm workspaces --config /c.hcl --locks=true", ""},
		{"no cloud config", pod(corev1.Container{Name: leaderContainer, Args: []string{"--v=2"}}), "", "has no --cloud-config= argument"},
		{"not a tfccm pod", pod(corev1.Container{Name: "nginx"}), "", "has no container cloud-controller-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := leaderCommand(tc.pod, "workspaces", []string{"--locks=true"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestLeaderOf: the leader's pod is the one the leader named on its Lease
// while that naming is the holder's (host networking: the identity names
// the node), else the identity's host name; a Lease not renewed for its
// duration is stale.
func TestLeaderOf(t *testing.T) {
	now := time.Now()
	lf := leaderFlags{namespace: "tfccm-system", lease: annotations.LeaderLease}
	lease := func(holder string, renewed time.Time, ann map[string]string) *coordinationv1.Lease {
		r := metav1.NewMicroTime(renewed)
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: &r, LeaseDurationSeconds: ptr.To[int32](15)}}
	}
	named := map[string]string{annotations.LeaderIdentity: "node-a_1", annotations.LeaderPod: "tfccm-6c-abcde"}
	for _, tc := range []struct {
		name, pod, err string
		lease          *coordinationv1.Lease
	}{
		{"pod network: the identity's host", "tfccm-6c-xyz12", "", lease("tfccm-6c-xyz12_1", now, nil)},
		{"host network: the pod the leader named", "tfccm-6c-abcde", "", lease("node-a_1", now, named)},
		{"named by an earlier holder: not trusted", "node-b", "", lease("node-b_2", now, named)},
		{"stale", "tfccm-6c-xyz12", "the leader Lease is stale", lease("tfccm-6c-xyz12_1", now.Add(-20*time.Second), nil)},
		{"no holder", "", "no leader", lease("", now, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := leaderOf(tc.lease, lf, now)
			if l.pod != tc.pod || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("pod %q, error %v; want %q, %q", l.pod, err, tc.pod, tc.err)
			}
		})
	}
}
