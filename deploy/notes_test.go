package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// notes renders the chart's NOTES.txt for values files (helm template
// leaves NOTES out, and helm install needs a cluster): a copy of the chart
// whose one extra template is a ConfigMap holding NOTES.txt rendered with
// tpl in the release's context.
func notes(t *testing.T, values ...string) string {
	t.Helper()
	root, bin := helm(t)
	tmp := t.TempDir()
	chart := filepath.Join(tmp, Chart)
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(root, Chart))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(chart, "templates", "NOTES.txt"), filepath.Join(chart, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: notes }\ndata:\n  notes: {{ tpl (.Files.Get \"notes.txt\") . | toJson }}\n"
	if err := os.WriteFile(filepath.Join(chart, "templates", "notes-test.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := HelmTemplate(bin, tmp, "tfccm", "kube-system", values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "notes" {
			return cm.Data["notes"]
		}
	}
	t.Fatal("no notes rendered")
	return ""
}

// TestNotesPrintTheNextCommands: after a baremetal install, NOTES.txt
// prints the next three commands (check the hosts, create a Service, curl
// its address); other sets get none of them.
func TestNotesPrintTheNextCommands(t *testing.T) {
	root, _ := helm(t)
	examples := filepath.Join(root, Chart, "examples")
	got := notes(t, filepath.Join(examples, "baremetal.yaml"))
	for _, want := range []string{
		"helm test tfccm -n kube-system --logs",
		"kubectl expose deployment web --type=LoadBalancer --port=80",
		"curl http://$(kubectl get service web -o jsonpath='{.status.loadBalancer.ingress[0].ip}')/",
		"VIPs from 192.168.10.128/25",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the baremetal NOTES do not print %q:\n%s", want, got)
		}
	}
	if testing.Verbose() {
		t.Log(got)
	}
	if other := notes(t, filepath.Join(examples, "hcloud.yaml")); strings.Contains(other, "helm test") {
		t.Errorf("the hcloud NOTES print the LB hosts' check:\n%s", other)
	}
}
