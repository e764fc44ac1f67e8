package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// The helpers here are test/harness for a *testing.T: they fail the test
// where the harness returns an error, and tie what they start to the test.

var (
	buildOnce sync.Once
	ccmPath   string
	buildErr  error
)

// repoRoot is the repository root (tests run in test/e2e).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestMain removes the CCM binary built for this run when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if ccmPath != "" {
		os.RemoveAll(filepath.Dir(ccmPath))
	}
	os.Exit(code)
}

// ccmBinary builds the CCM binary once per test run into a temp dir, so the
// tests always exercise the code under test rather than a stale bin/.
func ccmBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tfccm-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		ccmPath = filepath.Join(dir, "terraform-cloud-controller-manager")
		buildErr = repo.BuildTo("./cmd/terraform-cloud-controller-manager", ccmPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return ccmPath
}

// startCCM runs the CCM binary against cluster with the given cloud config
// and extra flags, and stops it when the test ends.
func startCCM(t *testing.T, cluster *devcluster.Cluster, cloudConfig string, extra ...string) *harness.CCM {
	t.Helper()
	return startCCMWithKubeconfig(t, cluster.Kubeconfig(), cloudConfig, extra...)
}

// startCCMWithKubeconfig runs the CCM with the given credentials (for all
// of its clients, including delegated authn/authz).
func startCCMWithKubeconfig(t *testing.T, kubeconfig, cloudConfig string, extra ...string) *harness.CCM {
	t.Helper()
	c, err := harness.StartCCM(harness.CCMOptions{
		Binary:      ccmBinary(t),
		Kubeconfig:  kubeconfig,
		CloudConfig: cloudConfig,
		Dir:         t.TempDir(),
		Flags:       extra,
		Env:         []string{"PATH=" + filepath.Join(repoRoot(t), "bin") + ":" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("CCM log (%s), last 60 lines:\n%s", c.LogPath, c.LogTail(60))
		}
	})
	return c
}

// eventually polls cond until it returns nil or timeout passes, then fails
// the test with the last error.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := harness.Eventually(context.Background(), timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}

// registerNode registers n as a kubelet does and returns the stored Node.
func registerNode(t testing.TB, client kubernetes.Interface, n harness.Node) *corev1.Node {
	t.Helper()
	created, err := harness.RegisterNode(context.Background(), client, n)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// waitVIP waits for the Service's load balancer ingress IP.
func waitVIP(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	vip, err := harness.WaitForIngress(context.Background(), client, "default", name, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return vip
}

// waitServiceDeleted waits until the Service and its finalizer are gone.
func waitServiceDeleted(t testing.TB, client kubernetes.Interface, name string, timeout time.Duration) {
	t.Helper()
	if err := harness.WaitServiceDeleted(context.Background(), client, "default", name, timeout); err != nil {
		t.Fatal(err)
	}
}

// writeCloudConfig writes a cloud config for cluster "e2e" with work_dir
// under dir, the pinned OpenTofu and the lbhost provider's CLI config plus
// terraformLines in the terraform block,
// and the given extra blocks. It returns the config's path and the work dir.
func writeCloudConfig(t testing.TB, dir, blocks string, terraformLines ...string) (cfg, workDir string) {
	t.Helper()
	workDir = filepath.Join(dir, "work")
	cfg = filepath.Join(dir, "cloud.hcl")
	// The local set uses tfccm's lbhost provider from the repository's
	// mirror, unless the test brings its own CLI config.
	tf := terraformLines
	if !slices.ContainsFunc(terraformLines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "cli_config_file") }) {
		tf = append([]string{fmt.Sprintf("cli_config_file = %q", repo.LBHost(t))}, terraformLines...)
	}
	c := harness.CloudConfig{ClusterName: "e2e", WorkDir: workDir, Tofu: repo.Tofu(t), Terraform: tf, Blocks: blocks}
	if err := c.Write(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg, workDir
}

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serveNodes runs, on every node of the cloud, a server on each of ports
// answering with the node's name and kube-proxy's /healthz, until the test
// ends.
func serveNodes(t testing.TB, cloud *localcloud.Cloud, ports ...int) {
	t.Helper()
	for _, n := range cloud.Nodes() {
		for _, port := range ports {
			stop, err := cloud.ServeHTTP(n, port, n)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
		stop, err := cloud.ServeHealthz(n, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
}

// ccmMetrics is the CCM's /metrics, read with the cluster admin's client
// certificate (the CCM authorizes it through the apiserver).
func ccmMetrics(t testing.TB, cluster *devcluster.Cluster, ccm *harness.CCM) string {
	t.Helper()
	cert, key := cluster.AdminCert()
	var body string
	eventually(t, 30*time.Second, "authorized /metrics", func(context.Context) error {
		code, b, err := ccm.Get("/metrics", cert, key)
		if err != nil || code != 200 {
			return fmt.Errorf("/metrics: %d %v", code, err)
		}
		body = b
		return nil
	})
	return body
}

// engineCounts are the workspace engine's apply decisions read from the
// CCM's /metrics.
type engineCounts struct {
	applyNoop int // applies found to have nothing to do
	applyRuns int // tofu apply runs, whatever their result
}

// countEngine reads the engine's apply counters from a /metrics body.
func countEngine(body string) engineCounts {
	var c engineCounts
	eachSample(body, "tfccm_workspace_operations_total", func(labels map[string]string, v float64) {
		switch {
		case labels["operation"] != "apply", labels["result"] == "refused":
		case labels["result"] == "noop":
			c.applyNoop += int(v)
		default:
			c.applyRuns += int(v)
		}
	})
	return c
}

// engineIdle reports an error unless a /metrics body shows the workspace
// engine with nothing queued, running or waiting to run.
func engineIdle(body string) error {
	var busy []string
	for _, name := range []string{"tfccm_workspace_queue_depth", "tfccm_workspace_runs_in_flight", "tfccm_workspaces"} {
		found := false
		eachSample(body, name, func(labels map[string]string, v float64) {
			found = true
			if p := labels["phase"]; (p == "" || p == "Pending" || p == "Running") && v != 0 {
				busy = append(busy, fmt.Sprintf("%s%v %g", name, labels, v))
			}
		})
		if !found {
			return fmt.Errorf("/metrics lacks %s", name)
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("engine busy: %s", strings.Join(busy, ", "))
	}
	return nil
}

// eachSample calls fn with the labels and value of each sample of the
// metric name in a /metrics body (none if the body does not parse).
func eachSample(body, name string, fn func(labels map[string]string, v float64)) {
	ms := testutil.NewMetrics()
	if err := testutil.ParseMetrics(body, &ms); err != nil {
		return
	}
	for _, s := range ms[name] {
		labels := map[string]string{}
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		fn(labels, float64(s.Value))
	}
}
