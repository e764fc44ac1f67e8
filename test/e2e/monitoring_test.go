package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/nodelb/agent"
	"github.com/tfccm/tfccm/test/harness"
)

// emptyState is a Terraform state with no resources: a state source
// tfccm reads (and so reports the staleness of).
const emptyState = `{"version":4,"terraform_version":"1.12.6","serial":1,"lineage":"0b0e5a3e-1d5c-4c5e-9a53-4c1b1e0f0d2a","outputs":{},"resources":[],"check_results":null}`

// metricRE finds tfccm's metric names in PromQL.
var metricRE = regexp.MustCompile(`\btfccm_[a-z_]+`)

// monitoredMetrics are the tfccm metrics the chart's alerts and dashboard
// name.
func monitoredMetrics(t *testing.T) []string {
	t.Helper()
	set := map[string]bool{}
	for _, f := range []string{"alerts.yaml", "dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "helm", "tfccm", "files", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricRE.FindAllString(string(b), -1) {
			set[m] = true
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	if len(out) < 8 {
		t.Fatalf("only %d metrics found in the alerts and dashboard: %v", len(out), out)
	}
	return out
}

// TestMonitoredMetricsAreExported: every metric the chart's alerts and
// dashboard use is served by a running CCM (one applied Service whose
// template reads backend health, one of an active-active variant, one
// state source), read by a Prometheus ServiceAccount that the chart's
// monitoring.metricsReaders ClusterRole and binding authorize (and that is
// refused without them).
func TestMonitoredMetricsAreExported(t *testing.T) {
	stateFile := writeFile(t, t.TempDir(), "infra.tfstate", emptyState)
	// A health module, read every second: the backends gauges.
	cluster, ccm := sleepCCM(t, 0, true, fmt.Sprintf("instances {\n  source \"infra\" {\n    state_file = %q\n  }\n}\n", stateFile),
		"load_balancer {\n  health_interval = \"1s\"\n}\n")
	client := cluster.Client()
	ctx := context.Background()
	createLBService(t, client, "web", corev1.ProtocolTCP)
	waitVIP(t, client, "web")
	// One of the active-active (BGP) variant: the announcers gauge.
	ecmp := portService("web-ecmp", corev1.ProtocolTCP)
	ecmp.Annotations = map[string]string{"tfccm.io/template": "ecmp"}
	if _, err := client.CoreV1().Services("default").Create(ctx, ecmp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVIP(t, client, "web-ecmp")

	token := serviceAccountToken(t, client, "monitoring", "prometheus")
	if code, _ := getWithToken(t, ccm, token); code != http.StatusForbidden {
		t.Fatalf("/metrics without the chart's role: %d, want 403", code)
	}
	out, err := deploy.HelmTemplate(filepath.Join(repoRoot(t), "bin", "helm"), repoRoot(t), "tfccm", "kube-system",
		[]string{filepath.Join(repoRoot(t), "deploy", "testdata", "helm", "default.values.yaml")},
		"monitoring.metricsReaders[0].name=prometheus", "monitoring.metricsReaders[0].namespace=monitoring")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch v := o.(type) {
		case *rbacv1.ClusterRole:
			if strings.HasSuffix(v.Name, ":metrics-reader") {
				if _, err := client.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		case *rbacv1.ClusterRoleBinding:
			if strings.HasSuffix(v.Name, ":metrics-reader") {
				if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var missing []string
	eventually(t, time.Minute, "every monitored metric exported", func(context.Context) error {
		code, body := getWithToken(t, ccm, token)
		if code != http.StatusOK {
			return fmt.Errorf("/metrics with the chart's role: %d", code)
		}
		missing = missing[:0]
		for _, m := range monitoredMetrics(t) {
			if slices.Contains(agent.Metrics, m) { // served by the node agents, not the CCM
				continue
			}
			if !regexp.MustCompile(`(?m)^` + m + `[{ ]`).MatchString(body) {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not exported: %v", missing)
		}
		return nil
	})
}

// serviceAccountToken creates namespace/name and returns a token for it.
func serviceAccountToken(t *testing.T, client kubernetes.Interface, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tok *authenticationv1.TokenRequest
	eventually(t, 30*time.Second, "a token for "+namespace+"/"+name, func(ctx context.Context) (err error) {
		tok, err = client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		return err
	})
	return tok.Status.Token
}

// getWithToken GETs the CCM's /metrics as a bearer of token.
func getWithToken(t *testing.T, ccm *harness.CCM, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", ccm.Port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
