package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/docs"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// quickstartNodesPage is the page TestQuickstartNodes runs.
const quickstartNodesPage = "docs/quickstart-nodes.md"

// The page's example pool and first address, replaced by addresses of the
// real nodes' network (NodeNetwork).
const (
	exampleNodesPool = "192.168.1.240-192.168.1.250"
	exampleNodesVIP  = "192.168.1.240"
	nodesPool        = "10.250.0.240-10.250.0.250"
	nodesVIP         = "10.250.0.240"
)

// TestQuickstartNodes runs docs/quickstart-nodes.md's values file and
// command blocks as a user would, on two real nodes (kubelet, containerd,
// kube-proxy) of one L2 network, to the curl through the VIP that kube-proxy
// on the holder serves (ipMode VIP), from the host (routed to the node
// network through the cloud's router, which ARPs for the VIP). It counts the
// commands (≤ 5) and times them; the pod ranges are routed by the set's
// routes module (no FailedToCreateRoute); then the Service's NodeVIPs name a holder
// among the labelled nodes, and deleting the Service leaves no NodeVIP and
// nothing answering at the VIP. What the test adds (a second values file
// for helm install, as TestQuickstart does): the image, the CCM's layout on
// node-a, the pod-range routes these nodes need through the cloud's router
// and their inventory (their kubelets run with --cloud-provider=external).
func TestQuickstartNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, quickstartNodesPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := docs.BlocksRunBy(quickstartNodesPage, string(src), "TestQuickstartNodes", "")
	if err != nil {
		t.Fatal(err)
	}
	files, err := docs.FilesOf(quickstartNodesPage, string(src))
	if err != nil {
		t.Fatal(err)
	}
	replace := strings.NewReplacer(exampleNodesPool, nodesPool, exampleNodesVIP, nodesVIP)
	archive := imageArchive(t)
	c := ForTest(t, Options{Nodes: 2, HostRoute: true})
	client := c.Client()
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts := routerWithKey(t, c)

	work := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(replace.Replace(body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env, err := quickstartNodesEnv(root, work, c, hosts, ref, replace.Replace(files["values.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := runBlock(work, env, `set +e
kubectl -n tfccm-system logs deploy/tfccm --tail=60
kubectl -n tfccm-system logs ds/tfccm-node-agent --all-containers --prefix --tail=30
kubectl get service web -o yaml
kubectl -n tfccm-system get nodevips -o yaml
kubectl get events -A --sort-by=.lastTimestamp | tail -30`)
			t.Logf("diagnostics:\n%s", out)
		}
		for _, cmd := range []string{
			"kubectl delete service web --ignore-not-found --wait --timeout=2m",
			"helm uninstall tfccm -n tfccm-system --wait --timeout 2m || true",
		} {
			if out, err := runBlock(work, env, cmd); err != nil {
				t.Errorf("cleanup %q: %v: %s", cmd, err, out)
			}
		}
	})

	commands, total, last := 0, time.Duration(0), ""
	for i, b := range blocks {
		n := countCommands(b)
		start := time.Now()
		out, err := runBlock(work, env, replace.Replace(b))
		took := time.Since(start)
		commands, total, last = commands+n, total+took, out
		t.Logf("block %d (%d commands, %s):\n%s\n%s", i+1, n, took.Round(time.Second), strings.TrimSpace(b), out)
		if err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
	}
	t.Logf("QUICKSTART nodes: %d commands typed, %s for the page's commands", commands, total.Round(time.Second))
	if commands > 5 {
		t.Errorf("the page has the user type %d commands, more than 5", commands)
	}
	list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, p := range list.Items {
		pods = append(pods, p.Name)
	}
	lines := strings.Split(strings.TrimSpace(last), "\n")
	if answer := lines[len(lines)-1]; !slices.Contains(pods, answer) {
		t.Errorf("the curl answered %q, not one of the pods %v", answer, pods)
	}

	// The pod ranges are routed (the set's routes module): no Node has a
	// FailedToCreateRoute Event.
	if evs, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedToCreateRoute"}); err != nil || len(evs.Items) > 0 {
		t.Errorf("FailedToCreateRoute Events: %v %v", err, evs)
	}

	// The VIP is the Service's, held by a labelled node, announced.
	svc, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("the Service web: %v %v", err, svc.Status)
	}
	if ing := svc.Status.LoadBalancer.Ingress[0]; ing.IP != nodesVIP || ing.IPMode == nil || *ing.IPMode != corev1.LoadBalancerIPModeVIP {
		t.Errorf("the Service's ingress %+v, want %s with ipMode VIP", ing, nodesVIP)
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(vipapi.GVR).Namespace("tfccm-system")
	vips, err := dyn.List(ctx, metav1.ListOptions{})
	if err != nil || len(vips.Items) != 1 {
		t.Fatalf("NodeVIPs: %v %d, want one", err, len(vips.Items))
	}
	v, err := vipapi.FromUnstructured(&vips.Items[0])
	if err != nil {
		t.Fatal(err)
	}
	if c := v.Status.Announced(); v.Spec.Address != nodesVIP || !slices.Contains([]string{"node-a", "node-b"}, v.Status.Holder) || c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("NodeVIP %s: address %s, holder %q, Announced %+v", v.Name, v.Spec.Address, v.Status.Holder, c)
	}

	// Deleting the Service leaves no NodeVIP and nothing answering.
	if out, err := runBlock(work, env, "kubectl delete service web --wait --timeout=2m"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	if err := waitFor(ctx, time.Minute, func() error {
		vips, err := dyn.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(vips.Items) > 0 {
			return fmt.Errorf("%d NodeVIPs left", len(vips.Items))
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	time.Sleep(2 * time.Second)
	if out, err := exec.Command("curl", "-sS", "--max-time", "3", "http://"+nodesVIP+"/hostname").CombinedOutput(); err == nil {
		t.Errorf("the VIP still answers after the Service was deleted: %s", out)
	}
}

// quickstartNodesEnv is the page's environment: kubectl and helm from bin/
// (helm install with the machine's values after the page's), the
// cluster's kubeconfig, a checkout's deploy/ in the working directory.
// pageValues is the page's values file: the machine's cloud config is its
// inline one with the routes and the inventory added.
func quickstartNodesEnv(root, work string, c *Cluster, hosts *hosttest.Hosts, ref, pageValues string) ([]string, error) {
	var page struct {
		CloudConfig struct {
			Inline string `json:"inline"`
		} `json:"cloudConfig"`
	}
	if err := yaml.Unmarshal([]byte(pageValues), &page); err != nil {
		return nil, fmt.Errorf("the page's values.yaml: %w", err)
	}
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(work, "deploy")); err != nil {
		return nil, err
	}
	wrap := filepath.Join(work, ".wrappers")
	if err := os.MkdirAll(wrap, 0o755); err != nil {
		return nil, err
	}
	values, err := machineValues(root, c, hosts, ref, page.CloudConfig.Inline, "sshKey:\n  existingSecret: tfccm-ssh\n")
	if err != nil {
		return nil, err
	}
	overrides := filepath.Join(work, ".machine-values.yaml")
	if err := os.WriteFile(overrides, []byte(values), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(wrap, "helm"), []byte(helmWrapper(root, overrides)), 0o755); err != nil {
		return nil, err
	}
	return append(os.Environ(), "PATH="+wrap+":"+filepath.Join(root, "bin")+":"+os.Getenv("PATH"), "KUBECONFIG="+c.Kubeconfig(), "HOME="+work), nil
}

// routerWithKey starts the router's sshd, for the pod-range routes, and
// puts its key in the Secret the machine's values name (tfccm-ssh), in the
// namespace the chart is installed into (tfccm-system, created here).
func routerWithKey(t *testing.T, c *Cluster) *hosttest.Hosts {
	t.Helper()
	ctx := context.Background()
	hosts := hosttest.ForTest(t, c.Cloud)
	if err := hosts.StartRouter(); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(hosts.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	client := c.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tfccm-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("tfccm-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tfccm-ssh"},
		Data: map[string][]byte{"id_ed25519": key}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return hosts
}
