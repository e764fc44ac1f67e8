// TestRenderMatchesController: `tfccm render` and `tfccm plan` render what
// the controller applied, addresses from pools and sharing included; and
// the tfccm CLI built for it.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestRenderMatchesController runs the local set with an address pool: two
// Services share one address (tfccm.io/allow-shared-ip) and a third gets
// one from the pool. Once the controller applied them, `tfccm render` of
// each live Service writes byte for byte the files of the controller's
// workspace (module files and rendered inputs), and `tfccm plan` against
// the live cluster finds nothing to change for any of them.
func TestRenderMatchesController(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	pool := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	pool[3] = 16
	blocks := fmt.Sprintf(`load_balancer {
  settings = %s
  address_pool "auto" {
    addresses = [%q]
  }
}
`, harness.HCLObject(cloud.LBSettings()), netip.AddrFrom4(pool).String()+"/30")
	cfg, workDir := writeCloudConfig(t, t.TempDir(), blocks)
	serveNodes(t, cloud, 30080, 30081, 30082)
	createNode(t, client, cloud, "node-a")
	ccm := startCCM(t, cluster, cfg)

	for _, s := range []struct {
		name     string
		port     int32
		nodePort int32
		ann      map[string]string
	}{
		{"web", 80, 30080, map[string]string{"tfccm.io/allow-shared-ip": "front"}},
		{"api", 8080, 30081, map[string]string{"tfccm.io/allow-shared-ip": "front"}},
		{"solo", 80, 30082, nil},
	} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "default", Annotations: s.ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": s.name},
				Ports: []corev1.ServicePort{{Port: s.port, NodePort: s.nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	shared := waitVIP(t, client, "web")
	if got := waitVIP(t, client, "api"); got != shared {
		t.Fatalf("api got %s, web %s: want one shared address", got, shared)
	}
	if got := waitVIP(t, client, "solo"); got == shared {
		t.Fatalf("solo got the shared address %s", got)
	}
	eventually(t, 2*time.Minute, "the engine idle", func(context.Context) error {
		return engineIdle(ccmMetrics(t, cluster, ccm))
	})

	dir := t.TempDir()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes.APIVersion, nodes.Kind = "v1", "NodeList"
	nodesFile := writeYAML(t, dir, "nodes.yaml", nodes)
	for _, name := range []string{"web", "api", "solo"} {
		t.Run("tfccm render "+name+" is the controller's workspace", func(t *testing.T) {
			svc, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			svc.APIVersion, svc.Kind = "v1", "Service"
			out := filepath.Join(dir, name)
			stdout := runTfccm(t, 0, "render", "--config", cfg, "--service", writeYAML(t, dir, name+".yaml", svc), "--nodes", nodesFile, "--out", out)
			m := regexp.MustCompile(`Wrote workspace (\S+) `).FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("tfccm render said: %s", stdout)
			}
			sameFiles(t, out, filepath.Join(workDir, m[1]))
		})
	}

	t.Run("tfccm plan finds no change", func(t *testing.T) {
		stdout := runTfccm(t, -1, "plan", "--config", cfg, "--kubeconfig", cluster.Kubeconfig(), "--format", "json")
		var report struct {
			Rows []struct {
				Target, Error        string
				Add, Change, Destroy int
			} `json:"workspaces"`
		}
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("tfccm plan: %v\n%s", err, stdout)
		}
		seen := 0
		for _, r := range report.Rows {
			switch r.Target {
			case "default/web", "default/api", "default/solo":
				seen++
				if r.Error != "" || r.Add+r.Change+r.Destroy > 0 {
					t.Errorf("%s: +%d ~%d -%d %s", r.Target, r.Add, r.Change, r.Destroy, r.Error)
				}
			}
		}
		if seen != 3 {
			t.Errorf("the plan has %d of the three Services:\n%s", seen, stdout)
		}
	})
}

// sameFiles fails unless every file under rendered is in live with the
// same bytes.
func sameFiles(t *testing.T, rendered, live string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(rendered, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(rendered, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(live, rel))
		if err != nil {
			t.Errorf("%s: not in the controller's workspace: %v", rel, err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n--- tfccm render\n%s\n--- controller\n%s", rel, want, got)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("tfccm render wrote nothing into %s", rendered)
	}
}

// writeYAML writes obj as YAML into dir and returns the file's path.
func writeYAML(t *testing.T, dir, name string, obj any) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(b))
}

// runTfccm runs the tfccm CLI of this tree and returns its stdout; it
// fails unless the exit code is want (-1: any).
func runTfccm(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tfccmBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("tfccm %s: %v", args[0], err)
	}
	if code := cmd.ProcessState.ExitCode(); want >= 0 && code != want {
		t.Fatalf("tfccm %s: exit %d, want %d\n%s%s", args[0], code, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var (
	tfccmOnce sync.Once
	tfccmPath string
	tfccmErr  error
)

// tfccmBinary builds the tfccm CLI from this tree once per test run (in
// the CCM binary's directory, removed by TestMain).
func tfccmBinary(t *testing.T) string {
	t.Helper()
	tfccmOnce.Do(func() {
		tfccmPath = filepath.Join(filepath.Dir(ccmBinary(t)), "tfccm")
		tfccmErr = repo.BuildTo("./cmd/tfccm", tfccmPath)
	})
	if tfccmErr != nil {
		t.Fatal(tfccmErr)
	}
	return tfccmPath
}
