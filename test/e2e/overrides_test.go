package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// configMapVolume lays files out as the kubelet does for a ConfigMap
// volume: the data in a timestamped directory, ..data a symlink to it, and
// each path a symlink through ..data. swap replaces the content
// atomically, as the kubelet does on a ConfigMap update.
type configMapVolume struct {
	dir string
	n   int
}

func (v *configMapVolume) swap(t *testing.T, files map[string]string) {
	t.Helper()
	v.n++
	data := filepath.Join(v.dir, fmt.Sprintf("..2026_11_23_%02d", v.n))
	for p, content := range files {
		full := filepath.Join(data, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(data), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for p := range files {
		top := strings.SplitN(p, "/", 2)[0]
		link := filepath.Join(v.dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", top), link); err != nil {
			t.Fatal(err)
		}
	}
}

// localModule reads the built-in local set's loadbalancer module as files.
func localModule(t *testing.T) map[string]string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "templates", "local", "loadbalancer")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["loadbalancer/"+e.Name()] = string(b)
	}
	return files
}

// withFile is files with path set to content.
func withFile(files map[string]string, path, content string) map[string]string {
	out := maps.Clone(files)
	out[path] = content
	return out
}

// TestOverrideRollout: a valid change to an override module in a
// ConfigMap volume reaches existing Services without touching them (their
// workspaces are re-rendered and re-applied); an invalid change is an
// Event on each Service and the last good templates keep serving.
func TestOverrideRollout(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	vol := &configMapVolume{dir: t.TempDir()}
	v1 := localModule(t)
	vol.swap(t, v1)
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("override_dir = %q\n", vol.dir)+harness.Block("load_balancer", cloud.LBSettings()))
	serveNodes(t, cloud, 30090)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30090, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a")
	lbDir := lbWorkspaceDir(t, workDir)

	// A valid change: one more file in the module.
	v2 := withFile(v1, "loadbalancer/rollout.tf", "locals {\n  rollout = \"v2\"\n}\n")
	vol.swap(t, v2)
	eventually(t, time.Minute, "the changed module reaches the existing Service's workspace", func(context.Context) error {
		b, err := os.ReadFile(filepath.Join(lbDir, "rollout.tf"))
		if err != nil || !strings.Contains(string(b), "v2") {
			return fmt.Errorf("rollout.tf not there yet (%v)", err)
		}
		st, err := os.ReadFile(filepath.Join(lbDir, ".tfccm", "applied.json"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(st), "applied_hash") {
			return fmt.Errorf("not applied yet")
		}
		return nil
	})
	backendsAre(t, vip, 80, "node-a")

	// An invalid change: rejected, an Event on the Service, nothing changes.
	before := settledTree(t, lbDir)
	v3 := withFile(v2, "loadbalancer/rollout.tf", "locals {\n  rollout = \n}\n")
	vol.swap(t, v3)
	eventually(t, time.Minute, "TemplateRejected Event on the Service", func(ctx context.Context) error {
		ev := harness.Events(ctx, client, "default", "web")
		if !strings.Contains(ev, "TerraformTemplateRejected") || !strings.Contains(ev, "rollout.tf") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	if after := readTree(t, lbDir); after != before {
		t.Errorf("workspace changed after an invalid override")
	}
	backendsAre(t, vip, 80, "node-a")
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "web", time.Minute)
}
