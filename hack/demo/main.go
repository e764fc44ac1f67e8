// Command demo runs tfccm's main job on the local embedded default, for
// `make demo`: a local control plane, the local cloud (network namespaces,
// HAProxy), the CCM binary, the nodes of the local cloud registered as
// Nodes, a server on each node's NodePort, and examples/local/service.yaml.
// It prints `kubectl get svc` and the reply of a request through the load
// balancer, then keeps everything running until Ctrl-C (or, with --once,
// tears it down at once), deleting the Service first so the load balancer
// is destroyed through tfccm.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/localcloud"
)

func main() {
	once := flag.Bool("once", false, "tear everything down after printing the result")
	work := flag.String("dir", ".work/demo", "working directory (control plane, cloud, CCM state)")
	prefix := flag.String("prefix", "demo", "name prefix of the local cloud's network namespaces and links")
	flag.Parse()
	if err := run(*work, *prefix, *once); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(work, prefix string, once bool) (err error) {
	root, err := repo.Root()
	if err != nil {
		return err
	}
	work, err = filepath.Abs(work)
	if err != nil {
		return err
	}
	_ = os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var cleanups []func()
	defer func() {
		say("tearing down")
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	say("starting the local control plane (etcd + kube-apiserver)")
	cluster, err := devcluster.Start(ctx, devcluster.Options{Dir: filepath.Join(work, "cluster")})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = cluster.Stop() })
	client := cluster.Client()

	say("bringing up the local cloud with OpenTofu (examples/local/infra)")
	cloud, err := localcloud.Up(ctx, localcloud.Options{Prefix: prefix, WorkDir: filepath.Join(work, "cloud"), Tofu: filepath.Join(bin, "tofu")})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() {
		if err := cloud.Down(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "demo: local cloud:", err)
		}
	})
	for _, n := range cloud.Nodes() {
		for _, srv := range []func() (func(), error){
			func() (func(), error) { return cloud.ServeHTTP(n, 30080, "hello from "+n+"\n") },
			func() (func(), error) { return cloud.ServeHealthz(n, 0) },
		} {
			stopSrv, err := srv()
			if err != nil {
				return err
			}
			cleanups = append(cleanups, stopSrv)
		}
	}

	cfgPath := filepath.Join(work, "cloud.hcl")
	if err := os.WriteFile(cfgPath, []byte(cloudConfig(work, bin, cloud)), 0o644); err != nil {
		return err
	}
	say("starting terraform-cloud-controller-manager (log: %s)", filepath.Join(work, "ccm.log"))
	ccm, err := startCCM(bin, cluster, cfgPath, filepath.Join(work, "ccm.log"))
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { stopProcess(ccm) })

	say("registering the local cloud's nodes and applying examples/local/service.yaml")
	for i, n := range cloud.Nodes() {
		if err := registerNode(ctx, client, cloud.Node(n), fmt.Sprintf("10.244.%d.0/24", i+1)); err != nil {
			return err
		}
	}
	svc, err := readService(filepath.Join(root, "examples", "local", "service.yaml"))
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	cleanups = append(cleanups, func() { deleteService(client, svc) })

	vip, err := waitForIngress(ctx, client, svc)
	if err != nil {
		return err
	}
	if err := waitInitialized(ctx, client); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"get", "svc", "-o", "wide"},
		{"get", "nodes", "-o", "custom-columns=NAME:.metadata.name,PROVIDER-ID:.spec.providerID,ZONE:.metadata.labels.topology\\.kubernetes\\.io/zone,TYPE:.metadata.labels.node\\.kubernetes\\.io/instance-type,INTERNAL-IP:.status.addresses[0].address"},
	} {
		say("kubectl %s", strings.Join(args[:2], " "))
		kubectl := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
		kubectl.Stdout, kubectl.Stderr = os.Stdout, os.Stderr
		if err := kubectl.Run(); err != nil {
			return fmt.Errorf("kubectl: %w", err)
		}
	}
	if err := waitRoutes(ctx, cloud); err != nil {
		return err
	}
	say("ip -n %s route   (pod CIDRs routed to the nodes by tfccm's routes workspace)", cloud.CloudNetns)
	ipRoute := exec.Command("ip", "-n", cloud.CloudNetns, "route", "show", "root", "10.244.0.0/16")
	ipRoute.Stdout, ipRoute.Stderr = os.Stdout, os.Stderr
	if err := ipRoute.Run(); err != nil {
		return fmt.Errorf("ip route: %w", err)
	}
	say("curl http://%s/", vip)
	reply, err := get(ctx, "http://"+vip+"/")
	if err != nil {
		return err
	}
	fmt.Print(reply)
	if once {
		return nil
	}
	fmt.Printf(`
The demo is running:
  export KUBECONFIG=%s
  bin/kubectl get svc,nodes -o wide        # tfccm initialized the nodes and the LB
  curl http://%s/                   # through HAProxy to a node's NodePort
  bin/kubectl describe svc hello           # Terraform plan/apply Events
  ls %s                   # the workspaces tfccm rendered and applied
Press Ctrl-C to stop: the Service is deleted (tfccm destroys its load
balancer), then the CCM, the local cloud and the control plane are removed.
`, cluster.Kubeconfig(), vip, filepath.Join(work, "tfccm"))
	<-ctx.Done()
	return nil
}

// cloudConfig is the demo's --cloud-config: the built-in local template
// set, local state under the work dir, the local cloud's settings, and its
// infra workspace as the instance inventory.
func cloudConfig(work, bin string, cloud *localcloud.Cloud) string {
	lb := cloud.LBSettings()
	routes := cloud.RoutesSettings()
	return fmt.Sprintf(`# Generated by make demo.
cluster_name = "demo"
work_dir     = %q
template_set = "local"

terraform {
  binary          = %q
  cli_config_file = %q # the lbhost provider from bin/providers (make build)
}

load_balancer {
  settings = {
    state_dir   = %q
    cloud_netns = %q
    vip_pool    = %q
  }
}

routes {
  settings = {
    cloud_netns = %q
  }
}

instances {
  source "infra" {
    dir = %q
  }
}
`, filepath.Join(work, "tfccm"), filepath.Join(bin, "tofu"), filepath.Join(bin, "lbhost.tfrc"), lb["state_dir"], lb["cloud_netns"], lb["vip_pool"], routes["cloud_netns"], cloud.InfraDir())
}

func startCCM(bin string, cluster *devcluster.Cluster, cfg, logPath string) (*exec.Cmd, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "terraform-cloud-controller-manager"),
		"--kubeconfig="+cluster.Kubeconfig(),
		"--authentication-kubeconfig="+cluster.Kubeconfig(),
		"--authorization-kubeconfig="+cluster.Kubeconfig(),
		"--cloud-provider=terraform",
		"--cloud-config="+cfg,
		"--leader-elect=true",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--configure-cloud-routes=true",
		"--cluster-cidr=10.244.0.0/16",
		"--route-reconciliation-period=10s",
		"--cert-dir="+filepath.Join(filepath.Dir(logPath), "ccm-certs"),
		"--v=2",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start CCM: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd, nil
}

func stopProcess(cmd *exec.Cmd) {
	_ = devcluster.StopPID(cmd.Process.Pid, 30*time.Second)
}

// registerNode creates a Node the way a kubelet with
// --cloud-provider=external does: tainted uninitialized, so the CCM's node
// controller fills in providerID, addresses, instance type and topology
// from Terraform state. The InternalIP is set too, as kubelet reports it,
// and a podCIDR, as kube-controller-manager's IPAM would allocate it; the
// CCM's route controller then routes it in the local cloud's router.
func registerNode(ctx context.Context, client kubernetes.Interface, n localcloud.NodeInfo, podCIDR string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name}},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}, Taints: []corev1.Taint{{
			Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.Address}, {Type: corev1.NodeHostName, Address: n.Name}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
		},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// waitInitialized waits until the CCM's node controller has initialized
// every Node from Terraform state (the uninitialized taint is gone).
func waitInitialized(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		pending := 0
		if err == nil {
			for _, n := range nodes.Items {
				for _, t := range n.Spec.Taints {
					if t.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
						pending++
					}
				}
			}
			if pending == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not initialized from Terraform state after 2m (%d pending, %v)", pending, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitRoutes waits until the router has a route for every node's podCIDR.
func waitRoutes(ctx context.Context, cloud *localcloud.Cloud) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		out, err := exec.CommandContext(ctx, "ip", "-n", cloud.CloudNetns, "route", "show", "root", "10.244.0.0/16").Output()
		if err == nil && strings.Count(string(out), "\n") >= len(cloud.Nodes()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod CIDR routes not in the router after 2m: %q", out)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func readService(path string) (*corev1.Service, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(b, &svc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if svc.Namespace == "" {
		svc.Namespace = "default"
	}
	return &svc, nil
}

func waitForIngress(ctx context.Context, client kubernetes.Interface, svc *corev1.Service) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		s, err := client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].IP != "" {
			return s.Status.LoadBalancer.Ingress[0].IP, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no EXTERNAL-IP after 3m; recent events: %s", events(client, svc))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func events(client kubernetes.Interface, svc *corev1.Service) string {
	evs, err := client.CoreV1().Events(svc.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + svc.Name})
	if err != nil {
		return err.Error()
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

// get fetches url, retrying while HAProxy's first health checks settle.
func get(ctx context.Context, url string) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	var last error
	for i := 0; i < 30; i++ {
		resp, err := c.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == 200 {
				return string(b), nil
			}
			err = errors.Join(rerr, fmt.Errorf("HTTP %d", resp.StatusCode))
		}
		last = err
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return "", fmt.Errorf("GET %s: %w", url, last)
}

// deleteService deletes the Service and waits (up to 2m) until tfccm has
// destroyed its load balancer and released the finalizer.
func deleteService(client kubernetes.Interface, svc *corev1.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		return
	}
	for ctx.Err() == nil {
		if _, err := client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "demo: the Service still has its finalizer after 2m")
}
