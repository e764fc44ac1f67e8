package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// noHookPods turns the chart's uninstall guard off: the local control
// plane has no kubelet to run its Job (test/nodes runs it on real nodes).
const noHookPods = "uninstall: {loadBalancers: none}\n"

// helmInstall installs the chart as release "tfccm" in kube-system of
// cluster with the given values (YAML) and uninstalls it when the test
// ends. It returns the name of the chart's ServiceAccount.
func helmInstall(t *testing.T, cluster *devcluster.Cluster, values string) string {
	t.Helper()
	rel, err := harness.InstallChart(cluster.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rel.Uninstall(60 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return "tfccm"
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount kube-system/name with a fresh token, and waits until the
// apiserver's authorizer sees its grants.
func serviceAccountKubeconfig(t *testing.T, cluster *devcluster.Cluster, name string) (kubeconfig, token string) {
	t.Helper()
	ctx := context.Background()
	tok, err := cluster.Client().CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	rc := cluster.RESTConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthority: rc.TLSClientConfig.CAFile}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "c"
	kubeconfig = filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	eventually(t, 30*time.Second, "ServiceAccount grants visible", func(ctx context.Context) error {
		// Not found is an answer: the leader Lease, by name, is granted.
		if _, err := sa.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err := sa.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		return err
	})
	return kubeconfig, tok.Status.Token
}

// TestCCMRunsUnderChartRBAC is TestCCMRunsUnderShippedRBAC for the Helm
// chart: `helm install` into the local control plane, then the CCM runs
// with exactly the chart's ServiceAccount and must take the Lease, add the
// finalizer and record Events without a single forbidden call.
func TestCCMRunsUnderChartRBAC(t *testing.T) {
	cluster := devcluster.ForTest(t)
	sa := helmInstall(t, cluster, "replicas: 1\ncloudConfig: {clusterName: e2e, templateSet: local}\n"+noHookPods)
	kubeconfig, _ := serviceAccountKubeconfig(t, cluster, sa)
	cfg, _ := writeCloudConfig(t, t.TempDir(), "")

	ccmUsesOnlyItsGrants(t, cluster, kubeconfig, cfg, "chart-rbac")
}

// TestChartRefusesStateLeftInReleaseNamespace: a chart from before the
// state's namespace of its own kept the kubernetes backend's state in the
// release namespace; `helm install` (or upgrade) over such a namespace
// fails naming the Secret and where the state goes now, instead of
// starting a CCM that finds no state and creates every load balancer anew.
func TestChartRefusesStateLeftInReleaseNamespace(t *testing.T) {
	cluster := devcluster.ForTest(t)
	ctx := context.Background()
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tfstate-default-lb-e2e-0123456789", Namespace: "kube-system",
		Labels: map[string]string{"tfstate": "true"}}}
	if _, err := cluster.Client().CoreV1().Secrets("kube-system").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	values := "replicas: 1\ncloudConfig: {clusterName: e2e, templateSet: local}\n" + noHookPods
	_, err := harness.InstallChart(cluster.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "holds Terraform state (Secret tfstate-default-lb-e2e-0123456789, label tfstate=true)") || !strings.Contains(err.Error(), "now lives in tfccm-state") {
		t.Fatalf("helm install over state left in kube-system: %v", err)
	}
	// Moved: the install goes through.
	if err := cluster.Client().CoreV1().Secrets("kube-system").Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	helmInstall(t, cluster, values)
}

// TestChartGuardsPreviousLeaseOnce: `helm upgrade` passes
// --leader-elect-previous-lease only while tfccm's own Lease does not
// exist (an upgrade from a release that led through upstream's
// cloud-controller-manager); once a leader has led through tfccm's Lease,
// later upgrades do not wait for whoever holds the old one (another CCM in
// the namespace).
func TestChartGuardsPreviousLeaseOnce(t *testing.T) {
	cluster := devcluster.ForTest(t)
	ctx := context.Background()
	values := "replicas: 1\ncloudConfig: {clusterName: e2e, templateSet: local}\n" + noHookPods
	rel, err := harness.InstallChart(cluster.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rel.Uninstall(60 * time.Second); err != nil {
			t.Error(err)
		}
	})
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, deploy.Chart)
	guarded := func() bool {
		t.Helper()
		d, err := cluster.Client().AppsV1().Deployments("kube-system").Get(ctx, "tfccm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool {
			return strings.HasPrefix(a, "--leader-elect-previous-lease=")
		})
	}
	if guarded() {
		t.Fatal("a fresh install guards the previous Lease")
	}
	if err := rel.Upgrade(chart, values); err != nil {
		t.Fatal(err)
	}
	if !guarded() {
		t.Fatal("an upgrade with no tfccm Lease yet (from a release before it) does not guard the previous Lease")
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "tfccm", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a_0b6c7a52")}}
	if _, err := cluster.Client().CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rel.Upgrade(chart, values); err != nil {
		t.Fatal(err)
	}
	if guarded() {
		t.Error("an upgrade of a release that already leads through tfccm's Lease still waits for the previous one")
	}
}
