package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/repo"
)

// TestAlertRules: the chart's alerting rules pass `promtool check rules`
// and their unit tests (deploy/monitoring/alerts_test.yaml: each alert
// fires on its series, only after its `for`, with its runbook link).
func TestAlertRules(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	promtool := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool not found at %s: run `make tools`", promtool)
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(root, Chart, "files", "alerts.yaml")},
		{"test", "rules", filepath.Join(root, "deploy", "monitoring", "alerts_test.yaml")},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRunbooks: every alert has a runbook link to a section of
// docs/operations.md that exists.
func TestAlertRunbooks(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, Chart, "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "https://github.com/tfccm/tfccm/blob/main/docs/operations.md#"
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, prefix)
			if !ok {
				t.Errorf("%s: runbook_url %q is not a section of docs/operations.md", r.Alert, url)
				continue
			}
			if anchor != strings.ToLower(r.Alert) || !regexp.MustCompile(`(?m)^### `+r.Alert+`$`).Match(ops) {
				t.Errorf("%s: docs/operations.md has no section %q (anchor %q)", r.Alert, "### "+r.Alert, anchor)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts")
	}
}

// TestHelmMonitoring: the monitoring values render the rules file as a
// PrometheusRule, the dashboard as a labelled ConfigMap, and a
// ClusterRole bound to the given ServiceAccounts that grants get on
// /metrics; without them none of it is rendered.
func TestHelmMonitoring(t *testing.T) {
	root, _ := helm(t)
	want, err := os.ReadFile(filepath.Join(root, Chart, "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wantSpec map[string]any
	if err := yaml.Unmarshal(want, &wantSpec); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objects(t, "monitoring") {
		switch v := o.(type) {
		case *unstructured.Unstructured:
			kinds[v.GetKind()]++
			if v.GetKind() == "PrometheusRule" {
				got, _ := yaml.Marshal(v.Object["spec"])
				w, _ := yaml.Marshal(wantSpec)
				if string(got) != string(w) {
					t.Errorf("PrometheusRule spec differs from files/alerts.yaml:\n%s", got)
				}
			}
		case *rbacv1.ClusterRole:
			if strings.HasSuffix(v.Name, ":metrics-reader") {
				kinds["ClusterRole"]++
				if len(v.Rules) != 1 || strings.Join(v.Rules[0].NonResourceURLs, ",") != "/metrics" || strings.Join(v.Rules[0].Verbs, ",") != "get" {
					t.Errorf("metrics reader rules %+v", v.Rules)
				}
			}
		case *rbacv1.ClusterRoleBinding:
			if strings.HasSuffix(v.Name, ":metrics-reader") {
				kinds["ClusterRoleBinding"]++
				if len(v.Subjects) != 1 || v.Subjects[0].Name != "prometheus-k8s" || v.Subjects[0].Namespace != "monitoring" {
					t.Errorf("metrics reader subjects %+v", v.Subjects)
				}
			}
		}
	}
	for _, k := range []string{"PrometheusRule", "ClusterRole", "ClusterRoleBinding"} {
		if kinds[k] != 1 {
			t.Errorf("%d %s, want 1 (%v)", kinds[k], k, kinds)
		}
	}
	out := string(render(t, "monitoring"))
	if !strings.Contains(out, "grafana_dashboard: \"1\"") || !strings.Contains(out, "tfccm.json: |-") {
		t.Error("no dashboard ConfigMap labelled for Grafana's sidecar")
	}
	def := string(render(t, "default"))
	for _, s := range []string{"PrometheusRule", "metrics-reader", "tfccm.json"} {
		if strings.Contains(def, s) {
			t.Errorf("default values render %s", s)
		}
	}
}
