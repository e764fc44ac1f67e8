package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
		if _, err := sa.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
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
