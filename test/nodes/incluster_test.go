package nodes

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// imageArchive is the archive `make image` wrote: $IMAGE_DIR/tfccm.tar
// (make test-nodes passes IMAGE_DIR), else the Makefile's default
// .work/image/tfccm.tar.
func imageArchive(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("IMAGE_DIR")
	if dir == "" {
		root, err := repo.Root()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".work", "image")
	}
	archive := filepath.Join(dir, "tfccm.tar")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("image archive: %v (run `make image`, or `make test-nodes`, which builds it)", err)
	}
	return archive
}

// Paths inside the CCM's pod (volumes the test adds through the chart's
// extraVolumes and templates.files).
const (
	podKey       = "/etc/tfccm/ssh/id_ed25519" // the chart's sshKey
	podInventory = "/etc/tfccm/inventory"
)

// TestCCMInClusterOnRealNodes runs tfccm as a user of the Helm chart would
// on bare metal: the image from `make image` imported into the nodes'
// containerd, `helm install` of the chart with the baremetal set over SSH —
// two LB hosts (sshd, HAProxy, keepalived) for load balancers, the local
// cloud's router for the pod-range routes — the SSH key from a Secret, host
// keys pinned, the cloud's infra state as the instance inventory, state in
// Secrets. The pod has nothing of the host's: no kubeconfig (its
// ServiceAccount token and the kubernetes Service), no capabilities, no
// host tools. Both of the chart's layouts that can serve such a cluster
// run, on node-a (these nodes have no control-plane role): daemonset mode,
// and a Deployment with hostNetwork (tfccm routes the pod network, so it
// cannot run on it).
func TestCCMInClusterOnRealNodes(t *testing.T) {
	needNodes(t)
	archive := imageArchive(t)
	// Short subtest names: the nodes' containerd sockets live under the
	// test's temporary directory, and socket paths have at most 107 bytes.
	for _, layout := range []struct{ name, values string }{
		{"daemonset", "mode: daemonset\nnodeSelector:\n  kubernetes.io/hostname: node-a\n"},
		{"deployment", "mode: deployment\nreplicas: 1\nhostNetwork: true\nnodeSelector:\n  kubernetes.io/hostname: node-a\n"},
	} {
		t.Run(layout.name, func(t *testing.T) { testCCMInCluster(t, archive, layout.values) })
	}
}

// inCluster is a real-node cluster with tfccm installed by its chart: two
// nodes, the image imported, two LB hosts and the router's sshd for the
// baremetal set, the SSH key in a Secret.
type inCluster struct {
	c       *Cluster
	client  kubernetes.Interface
	hosts   *hosttest.Hosts
	ref     string // the image reference the pods run
	imageID string
	key     []byte // the SSH private key
	rel     *harness.Release
}

// installInCluster starts the cluster and helm-installs the chart with the
// layout values (mode, replicas, node selector, ...).
func installInCluster(t *testing.T, archive, layout string) *inCluster {
	t.Helper()
	return installInClusterFrom(t, archive, "", layout)
}

// installInClusterFrom is installInCluster of chart, a chart directory or
// a packaged chart (.tgz); "" is the repository's chart.
func installInClusterFrom(t *testing.T, archive, chart, layout string) *inCluster {
	t.Helper()
	ic := newInCluster(t, archive, 2)
	values, err := inClusterValues(ic.c, ic.hosts, ic.ref, layout)
	if err != nil {
		t.Fatal(err)
	}
	ic.install(t, chart, values)
	return ic
}

// newInCluster starts a cluster of nodes nodes, imports the image, starts
// the LB hosts and the router's sshd and creates the SSH key's Secret:
// everything but the chart.
func newInCluster(t *testing.T, archive string, nodes int) *inCluster {
	t.Helper()
	ctx := context.Background()
	ic := &inCluster{c: ForTest(t, Options{Nodes: nodes, HostRoute: true})}
	ic.client = ic.c.Client()
	var err error
	if ic.ref, ic.imageID, err = ic.c.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	ic.hosts = hosttest.ForTest(t, ic.c.Cloud)
	if err := ic.hosts.StartRouter(); err != nil {
		t.Fatal(err)
	}
	if ic.key, err = os.ReadFile(ic.hosts.PrivateKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-ssh"},
		Data:       map[string][]byte{"id_ed25519": ic.key},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod's user (65532) reads the inventory through a read-only
	// hostPath: let it.
	if err := worldReadable(ic.c.Cloud.InfraDir()); err != nil {
		t.Fatal(err)
	}
	return ic
}

// install helm-installs chart ("" the repository's) as release tfccm
// with values over the values files baseFiles, and uninstalls it when the
// test ends.
func (ic *inCluster) install(t *testing.T, chart, values string, baseFiles ...string) {
	t.Helper()
	var err error
	if chart == "" {
		ic.rel, err = harness.InstallChart(ic.c.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir(), baseFiles...)
	} else {
		ic.rel, err = harness.InstallChartFrom(ic.c.Kubeconfig(), "kube-system", "tfccm", chart, values, t.TempDir(), baseFiles...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ic.runnerSecret(t)
	t.Cleanup(func() {
		if err := ic.rel.Uninstall(2 * time.Minute); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("CCM pod log, last 80 lines:\n%s", ccmPodLogs(ic.client, 80))
		}
	})
}

// runnerSecret gives the runners' namespace, once the chart has created
// it (runner.enabled, at install or at an upgrade), the SSH key Secret its
// runner pods mount, as the admin does (values: runner.namespace).
func (ic *inCluster) runnerSecret(t *testing.T) {
	t.Helper()
	if _, err := ic.client.CoreV1().Namespaces().Get(context.Background(), runnersNamespace, metav1.GetOptions{}); err != nil {
		return
	}
	_, err := ic.client.CoreV1().Secrets(runnersNamespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-ssh"},
		Data:       map[string][]byte{"id_ed25519": ic.key},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// testCCMInCluster is TestCCMInClusterOnRealNodes with the chart's layout
// values.
func testCCMInCluster(t *testing.T, archive, layout string) {
	ctx := context.Background()
	start := time.Now()
	ic := installInCluster(t, archive, layout)
	c, client, hosts, ref, imageID, key, rel := ic.c, ic.client, ic.hosts, ic.ref, ic.imageID, ic.key, ic.rel
	ccmLog := func() string { return ccmPodLogs(client, 40) }

	// The CCM pod runs on node-a from the imported image, as the chart's
	// ServiceAccount, on the host network, with no kubeconfig.
	pod := waitCCMPod(t, client)
	ctr := pod.Spec.Containers[0]
	st := pod.Status.ContainerStatuses[0]
	if pod.Spec.NodeName != "node-a" || !pod.Spec.HostNetwork || pod.Spec.ServiceAccountName != "tfccm" {
		t.Errorf("CCM pod: node %q, hostNetwork %v, ServiceAccount %q; want node-a, true, tfccm", pod.Spec.NodeName, pod.Spec.HostNetwork, pod.Spec.ServiceAccountName)
	}
	if ctr.Image != ref || ctr.ImagePullPolicy != corev1.PullIfNotPresent || !strings.Contains(st.ImageID, strings.TrimPrefix(imageID, "sha256:")) {
		t.Errorf("CCM container: image %q (%s), running image ID %q; want %q (IfNotPresent), ID %s", ctr.Image, ctr.ImagePullPolicy, st.ImageID, ref, imageID)
	}
	if args := strings.Join(ctr.Args, " "); strings.Contains(args, "kubeconfig") || strings.Contains(args, "--master") {
		t.Errorf("CCM container has host credentials: %s", args)
	}

	nodes := checkNodesInitialized(t, c, ccmLog)
	waitNodesReady(t, client)
	waitPodRoutes(t, c, nodes)
	t.Logf("nodes initialized and pod ranges routed %s after the start", time.Since(start).Round(time.Second))

	// A Deployment of netexec, one pod per node, behind a LoadBalancer
	// Service; HTTP from the host through the VIP (VRRP master's HAProxy,
	// node ports, kube-proxy) reaches both pods.
	podNames := runNetexecDeployment(t, client, 2)
	vip := createLBService(t, client, "web", ccmLog)
	if !netip.MustParsePrefix(hosts.VIPPool).Contains(netip.MustParseAddr(vip)) {
		t.Errorf("VIP %s is not from the baremetal pool %s", vip, hosts.VIPPool)
	}
	waitServes(t, vip, podNames)
	if m := hosts.Master(vip); m == nil {
		t.Errorf("no LB host holds the VIP %s", vip)
	}
	for _, h := range hosts.Hosts {
		if len(h.Objects()) != 3 {
			t.Errorf("LB host %s has %v, want a claim, a frontend and a VRRP instance", h.Name, h.Objects())
		}
	}

	// The workspaces' state is in Secrets (the chart's kubernetes backend).
	states := stateSecrets(t, client)
	var lbState, routesState bool
	for _, s := range states {
		lbState = lbState || strings.Contains(s, `"lbhost_frontend"`)
		routesState = routesState || strings.Contains(s, `"lbhost_route"`)
	}
	if !lbState || !routesState {
		t.Errorf("state Secrets in %s: load balancer %v, routes %v (of %d)", stateNamespace, lbState, routesState, len(states))
	}

	// Nothing tfccm keeps or shows holds the private key: not the
	// ConfigMaps, Events, the pod's log, the state Secrets, nor the files
	// tfccm rendered in its work_dir.
	var places []string
	cms, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			places = append(places, hasKey(key, "ConfigMap "+cm.Namespace+"/"+cm.Name+" "+k, []byte(v))...)
		}
	}
	evs, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		places = append(places, hasKey(key, "Event "+e.Namespace+"/"+e.Name, []byte(e.Message))...)
	}
	podLog := ccmPodLogs(client, 0)
	places = append(places, hasKey(key, "CCM pod log", []byte(podLog))...)
	if !strings.Contains(podLog, "Using the inClusterConfig") {
		t.Error("the CCM pod's log does not say it uses the in-cluster config (its ServiceAccount token)")
	}
	for i, s := range states {
		places = append(places, hasKey(key, fmt.Sprintf("state Secret %d", i), []byte(s))...)
	}
	work := filepath.Join(nodeNamed(c, pod.Spec.NodeName).Dir, "kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "work")
	var files int
	err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		places = append(places, hasKey(key, "work_dir file "+strings.TrimPrefix(p, work), b)...)
		return nil
	})
	if err != nil || files == 0 {
		t.Errorf("the pod's work_dir %s: %d files, %v", work, files, err)
	}
	if len(places) > 0 {
		t.Errorf("the SSH private key appears in %v", places)
	}

	// Deleting the Service removes its VIP and frontends from the LB hosts.
	deleteLBService(t, client, hosts, "web", vip, ccmLog)

	// The pod ran through all of it (its liveness probe passed).
	if p, err := client.CoreV1().Pods("kube-system").Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("the CCM container restarted %d times", n)
	}

	// helm uninstall leaves nothing running.
	if t.Failed() {
		t.Logf("CCM pod log before helm uninstall, last 80 lines:\n%s", ccmPodLogs(client, 80))
	}
	if err := rel.Uninstall(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	err = harness.Eventually(ctx, time.Minute, "no CCM pod and no tfccm container left", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("pod %s still there", pods.Items[0].Name)
		}
		running, err := c.RunningContainers(ctx, ref)
		if err != nil {
			return err
		}
		if len(running) > 0 {
			return fmt.Errorf("containers of %s still running: %v", ref, running)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("in-cluster test done %s after the start", time.Since(start).Round(time.Second))
}

// ccmSelector selects the chart's pods of release "tfccm".
const ccmSelector = "app.kubernetes.io/name=tfccm,app.kubernetes.io/instance=tfccm"

// inClusterValues are the chart's values for the test: the imported image,
// the layout (mode, node selector), the CCM flags of real nodes, the baremetal set's
// cloud config with the pod's paths, the local set's instance mapping for
// the inventory, and the Secret and hostPath volumes.
func inClusterValues(c *Cluster, hosts *hosttest.Hosts, ref, layout string) (string, error) {
	return inClusterValuesLB(c, hosts, hosts.LBSettings(), ref, layout)
}

// inClusterValuesLB is inClusterValues with the load balancers' settings
// lb (the hosts' LBSettings, changed).
func inClusterValuesLB(c *Cluster, hosts *hosttest.Hosts, lb map[string]any, ref, layout string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	mapping, err := os.ReadFile(filepath.Join(root, "templates", "local", "instances.hcl"))
	if err != nil {
		return "", err
	}
	lb["ssh_private_key_file"] = podKey
	routes := hosts.RoutesSettings()
	routes["ssh_private_key_file"] = podKey
	inline := fmt.Sprintf(`%s
routes {
  batch_window = "1s"
  settings     = %s
}
instances {
  ttl = "5s"
  source "infra" {
    # The cloud's infra workspace, mounted read-only: a user would point
    # this at their inventory's remote state backend instead.
    dir = %q
  }
}
`, harness.Block("load_balancer", lb), harness.HCLObject(routes), podInventory)
	args := CCMFlags
	return fmt.Sprintf(`%s%sextraArgs: [%s]
cloudConfig:
  clusterName: incluster
  templateSet: baremetal
  inline: |
%s
# instances.hcl: the inventory's mapping (the chart sets override_dir).
templates:
  files:
    instances.hcl: |
%s
sshKey:
  existingSecret: tfccm-ssh
extraVolumes:
  - name: inventory
    hostPath:
      path: %q
      type: Directory
extraVolumeMounts:
  - {name: inventory, mountPath: %q, readOnly: true}
`, imageValues(ref), layout, strings.Join(args, ", "), indent(inline, "    "), indent(string(mapping), "      "),
		c.Cloud.InfraDir(), podInventory), nil
}

// imageValues are the chart's image values for the imported image ref.
func imageValues(ref string) string {
	repository, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repository, tag = ref[:i], ref[i+1:]
	}
	return fmt.Sprintf("image:\n  repository: %q\n  tag: %q\n  pullPolicy: IfNotPresent\n", repository, tag)
}

// deleteLBService deletes the Service name and checks that its load
// balancer is gone: nothing left on the LB hosts, vip does not answer.
func deleteLBService(t *testing.T, client kubernetes.Interface, hosts *hosttest.Hosts, name, vip string, ccmLog func() string) {
	t.Helper()
	ctx := context.Background()
	if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitServiceDeleted(ctx, client, "default", name, 2*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	noLoadBalancer(t, hosts, vip, "after the Service is gone")
	if _, err := httpGet(ctx, "http://"+vip+"/hostname"); err == nil {
		t.Errorf("the VIP %s still answers after the Service is gone", vip)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// worldReadable makes dir's tree readable (and its directories searchable)
// by every user.
func worldReadable(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o444
		if d.IsDir() {
			mode |= 0o111
		}
		return os.Chmod(p, mode)
	})
}

// waitCCMPod waits until the chart's one pod runs and returns it.
func waitCCMPod(t *testing.T, client kubernetes.Interface) *corev1.Pod {
	t.Helper()
	return &waitCCMPods(t, client, 1)[0]
}

// ccmPodLogs returns the chart's pods' logs (the last tail lines each; 0:
// all), read through the apiserver from the kubelet.
func ccmPodLogs(client kubernetes.Interface, tail int64) string {
	return podLogs(client, ccmSelector, tail)
}

// podLogs returns the logs of kube-system's pods matching selector.
func podLogs(client kubernetes.Interface, selector string, tail int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		opts := &corev1.PodLogOptions{}
		if tail > 0 {
			opts.TailLines = &tail
		}
		logs, err := client.CoreV1().Pods("kube-system").GetLogs(p.Name, opts).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&b, "pod %s: %v\n", p.Name, err)
			continue
		}
		fmt.Fprintf(&b, "pod %s:\n%s\n", p.Name, logs)
	}
	return b.String()
}

// runNetexecDeployment runs a Deployment "web" of agnhost netexec (HTTP on
// 8080) with one pod per node and returns its pods' names once they run.
func runNetexecDeployment(t *testing.T, client kubernetes.Interface, replicas int32) []string {
	t.Helper()
	dep := NetexecDeployment("web", replicas, corev1.DoNotSchedule)
	ctx := context.Background()
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	err := harness.Eventually(ctx, 2*time.Minute, "the Deployment's pods run, one per node", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		names = nil
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				names = append(names, p.Name)
				nodes[p.Spec.NodeName] = true
			}
		}
		if int32(len(names)) != replicas || int32(len(nodes)) != replicas {
			return fmt.Errorf("running %v on %v", names, nodes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// The chart's namespaces of their own (release tfccm): the kubernetes
// backend's state and, with runner.enabled, the runner Jobs.
const (
	stateNamespace   = "tfccm-state"
	runnersNamespace = "tfccm-runners"
)

// stateSecrets returns the Terraform states the kubernetes backend keeps
// in stateNamespace (Secrets tfstate-*, gzip'd), decompressed.
func stateSecrets(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	var out []string
	for _, d := range stateDocs(t, client) {
		out = append(out, d.json)
	}
	return out
}

// stateDoc is one state Secret: its name, the state (decompressed), and
// its last write as the Secret's managed fields record it.
type stateDoc struct {
	name, json string
	manager    string
	written    time.Time
}

// stateDocs returns the state Secrets in stateNamespace, in the order of
// their names.
func stateDocs(t *testing.T, client kubernetes.Interface) []stateDoc {
	t.Helper()
	secrets, err := client.CoreV1().Secrets(stateNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []stateDoc
	for _, s := range secrets.Items {
		if !strings.HasPrefix(s.Name, "tfstate-") {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(s.Data["tfstate"]))
		if err != nil {
			t.Fatalf("state Secret %s: %v", s.Name, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("state Secret %s: %v", s.Name, err)
		}
		d := stateDoc{name: s.Name, json: string(b)}
		for _, m := range s.ManagedFields {
			if m.Time != nil && !m.Time.Time.Before(d.written) {
				d.manager, d.written = m.Manager, m.Time.Time
			}
		}
		out = append(out, d)
	}
	return out
}

// hasKey returns where (as a one-element list) when data holds any line of
// the PEM private key's body.
func hasKey(key []byte, where string, data []byte) []string {
	for _, l := range bytes.Split(key, []byte("\n")) {
		if len(l) >= 16 && !bytes.HasPrefix(l, []byte("-----")) && bytes.Contains(data, l) {
			return []string{where}
		}
	}
	return nil
}

func nodeNamed(c *Cluster, name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return &Node{}
}
