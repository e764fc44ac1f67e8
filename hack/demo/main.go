// Command demo runs tfccm's main job on the local embedded default, for
// `make demo`. It starts a local control plane, the local cloud (network
// namespaces, HAProxy), the CCM binary, the nodes of the local cloud
// registered as Nodes and a server on each node's NodePort, and applies
// examples/local/service.yaml.
// With --nodes N (make demo NODES=N) it runs on real nodes instead (see
// runNodes).
// It prints `kubectl get svc` and the reply of a request through the load
// balancer, then keeps everything running until Ctrl-C (or, with --once,
// tears it down at once), deleting the Service first so the load balancer
// is destroyed through tfccm.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/manifest"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

func main() {
	once := flag.Bool("once", false, "tear everything down after printing the result")
	work := flag.String("dir", ".work/demo", "working directory (control plane, cloud, CCM state)")
	prefix := flag.String("prefix", "demo", "name prefix of the local cloud's network namespaces and links")
	set := flag.String("set", "local", "template set: local (HAProxy in the cloud namespace) or baremetal (two LB hosts over SSH)")
	n := flag.Int("nodes", 0, "run on this many real nodes (make tools-nodes builds their parts) instead of API-only ones")
	flag.Parse()
	if *set != "local" && *set != "baremetal" {
		fmt.Fprintf(os.Stderr, "demo: --set %q: use local or baremetal\n", *set)
		os.Exit(2)
	}
	if *n > 0 && *set != "local" {
		fmt.Fprintf(os.Stderr, "demo: --nodes runs the local set only (got --set %s)\n", *set)
		os.Exit(2)
	}
	if err := run(*work, *prefix, *set, *n, *once); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(work, prefix, set string, n int, once bool) (err error) {
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
	if n > 0 {
		return runNodes(ctx, work, bin, prefix, n, once)
	}

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

	cfg := cloudConfig(work, bin, cloud)
	var hosts *hosttest.Hosts
	if set == "baremetal" {
		say("starting two LB hosts (sshd, HAProxy, keepalived in network namespaces) on the cloud's node network")
		if hosts, err = hosttest.Start(ctx, hosttest.Options{Cloud: cloud, Dir: filepath.Join(work, "lbhosts")}); err != nil {
			return err
		}
		cleanups = append(cleanups, func() {
			if err := hosts.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "demo: LB hosts:", err)
			}
		})
		cfg = baremetalConfig(cfg, root, cloud, hosts)
	}
	cfgPath := filepath.Join(work, "cloud.hcl")
	if err := cfg.Write(cfgPath); err != nil {
		return err
	}
	say("starting terraform-cloud-controller-manager (log: %s)", filepath.Join(work, "ccm.log"))
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Binary:      filepath.Join(bin, "terraform-cloud-controller-manager"),
		Kubeconfig:  cluster.Kubeconfig(),
		CloudConfig: cfgPath,
		Dir:         work,
		Flags: []string{
			"--configure-cloud-routes=true",
			"--cluster-cidr=10.244.0.0/16",
			"--route-reconciliation-period=10s",
		},
		StopGrace: 30 * time.Second,
	})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, ccm.Stop)

	say("registering the local cloud's nodes and applying examples/local/service.yaml")
	// Each Node as a kubelet with --cloud-provider=external registers it
	// (tainted uninitialized, so the CCM's node controller fills in
	// providerID, addresses, instance type and topology from Terraform
	// state), with its InternalIP, as kubelet reports it, and a podCIDR, as
	// kube-controller-manager's IPAM would allocate it: the CCM's route
	// controller then routes it in the local cloud's router.
	for i, n := range cloud.Nodes() {
		node := harness.Node{Name: n, InternalIPs: []string{cloud.Node(n).Address}, PodCIDRs: []string{fmt.Sprintf("10.244.%d.0/24", i+1)}, Uninitialized: true}
		if _, err := harness.RegisterNode(ctx, client, node); err != nil {
			return err
		}
	}
	svc, err := manifest.ReadService(filepath.Join(root, "examples", "local", "service.yaml"))
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	cleanups = append(cleanups, func() { deleteService(client, svc) })

	vip, err := harness.WaitForIngress(ctx, client, svc.Namespace, svc.Name, 3*time.Minute)
	if err != nil {
		return err
	}
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
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
	router := cloud.CloudNetns
	if hosts != nil {
		router = hosts.Hosts[0].Netns // the baremetal set's router host
	}
	if err := waitRoutes(ctx, router, len(cloud.Nodes())); err != nil {
		return err
	}
	say("ip -n %s route   (pod CIDRs routed to the nodes by tfccm's routes workspace)", router)
	ipRoute := exec.Command("ip", "-n", router, "route", "show", "root", "10.244.0.0/16")
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
	if hosts != nil {
		if err := showFailover(hosts, vip); err != nil {
			return err
		}
	}
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
func cloudConfig(work, bin string, cloud *localcloud.Cloud) harness.CloudConfig {
	return harness.CloudConfig{
		Header:      "Generated by make demo.",
		ClusterName: "demo",
		WorkDir:     filepath.Join(work, "tfccm"),
		TemplateSet: "local",
		Tofu:        filepath.Join(bin, "tofu"),
		// The local set uses the lbhost provider from bin/providers (make
		// build), held to the checksums make build wrote beside it.
		Terraform: []string{fmt.Sprintf("cli_config_file = %q", filepath.Join(bin, "lbhost.tfrc")),
			fmt.Sprintf("provider_lock_file = %q", filepath.Join(bin, "providers.lock.hcl"))},
		Blocks: harness.Block("load_balancer", cloud.LBSettings()) +
			harness.Block("routes", cloud.RoutesSettings()) +
			fmt.Sprintf("instances {\n  source \"infra\" {\n    dir = %q\n  }\n}\n", cloud.InfraDir()),
	}
}

// baremetalConfig switches cfg to the baremetal set on hosts: LB hosts and
// router over SSH; instances still from the local cloud's infra, through
// the local set's mapping (the baremetal set has none).
func baremetalConfig(cfg harness.CloudConfig, root string, cloud *localcloud.Cloud, hosts *hosttest.Hosts) harness.CloudConfig {
	cfg.TemplateSet = "baremetal"
	cfg.Blocks = harness.Block("load_balancer", hosts.LBSettings()) +
		harness.Block("routes", hosts.RoutesSettings()) +
		fmt.Sprintf("instances {\n  mapping = %q\n  source \"infra\" {\n    dir = %q\n  }\n}\n",
			filepath.Join(root, "templates", "local", "instances.hcl"), cloud.InfraDir())
	return cfg
}

// showFailover stops keepalived on the VIP's VRRP master while requests
// go to the VIP, prints what happened, and restarts it (as a backup).
func showFailover(hosts *hosttest.Hosts, vip string) error {
	for _, h := range hosts.Hosts {
		role := "backup"
		if h.HasAddress(vip) {
			role = "MASTER"
		}
		say("LB host %s (%s, ssh root@%s): VRRP %s for %s", h.Name, h.Netns, h.Address, role, vip)
	}
	say("stopping keepalived on the master while 20 requests per second go to http://%s/", vip)
	f, err := hosts.MeasureFailover(vip, 80, func(m *hosttest.Host) { m.StopKeepalived(syscall.SIGTERM) })
	if err != nil {
		return err
	}
	fmt.Printf("failover %s\n", f)
	return hosts.Host(f.From).StartKeepalived()
}

// waitRoutes waits until router has a route for each of n podCIDRs.
func waitRoutes(ctx context.Context, router string, n int) error {
	return harness.Eventually(ctx, 2*time.Minute, "pod CIDR routes in the router", func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "ip", "-n", router, "route", "show", "root", "10.244.0.0/16").Output()
		if err != nil {
			return err
		}
		if strings.Count(string(out), "\n") < n {
			return fmt.Errorf("routes: %q", out)
		}
		return nil
	})
}

// get fetches url, retrying while HAProxy's first health checks settle.
func get(ctx context.Context, url string) (string, error) {
	return testkit.GetEventually(ctx, nil, url, 30*time.Second)
}

// deleteService deletes the Service and waits (up to 2m) until tfccm has
// destroyed its load balancer and released the finalizer.
func deleteService(client kubernetes.Interface, svc *corev1.Service) {
	ctx := context.Background()
	if err := client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		return
	}
	if err := harness.WaitServiceDeleted(ctx, client, svc.Namespace, svc.Name, 2*time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
	}
}
