// Running node agents (`tfccm node-agent`) in the segment's nodes, and the NodeVIP CRD.

package l2seg

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/repo"
)

// Tfccm builds the tfccm binary into the test's temporary directory (go's
// build cache makes it quick) and returns its path.
func Tfccm(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tfccm")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tfccm")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build tfccm: %v\n%s", err, out)
	}
	return bin
}

// Agent is one node agent process.
type Agent struct {
	Node string
	Cmd  *exec.Cmd
}

// StartAgent runs `tfccm node-agent` for node in its namespace, against
// the cluster of kubeconfig (reachable from the segment), watching
// namespace; extra flags follow. Its log goes to dir/agent-<node>.log.
func (s *Segment) StartAgent(t testing.TB, bin, node, kubeconfig, namespace, dir string, extra ...string) *Agent {
	t.Helper()
	args := []string{"netns", "exec", s.Netns(node)}
	if slices.Contains(s.opts.NoNetRaw, node) {
		args = append(args, "setpriv", "--bounding-set", "-net_raw", "--inh-caps", "-net_raw", "--")
	}
	args = append(append(args, bin, "node-agent",
		"--kubeconfig", kubeconfig, "--node-name", node, "--namespace", namespace,
		"--gossip-address", s.NodeAddr(node), "--kubelet-healthz", "", "--v", "2"), extra...)
	cmd := exec.Command("ip", args...)
	log, err := os.OpenFile(filepath.Join(dir, "agent-"+node+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	return &Agent{Node: node, Cmd: cmd}
}

// Kill kills the agent (SIGKILL) and waits for it.
func (a *Agent) Kill() {
	_ = a.Cmd.Process.Kill()
	_ = a.Cmd.Wait()
}

// InstallNodeVIPCRD creates the chart's NodeVIP CRD and waits until it is served.
func InstallNodeVIPCRD(t testing.TB, rc *rest.Config) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "tfccm", "crds", "tfccm.io_nodevips.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the NodeVIP CRD: %v", err)
	}
	gvr := schema.GroupVersionResource{Group: "tfccm.io", Version: "v1alpha1", Resource: "nodevips"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the NodeVIP CRD is not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
