package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/nodes"
)

// runNodes is the demo on real nodes (make demo NODES=n): the control plane
// with n nodes running containerd, kubelet and kube-proxy in the local
// cloud, tfccm as their CCM, a Deployment of the locally built agnhost
// image (netexec, HTTP on 8080) and two LoadBalancer Services in front of
// it: `hello` (HAProxy on a VIP, to the nodes' NodePorts) and
// `hello-routed` (the `routed` variant: the VIP routed to the nodes with a
// pod, served by kube-proxy, client addresses kept).
func runNodes(ctx context.Context, work, bin, prefix string, n int, once bool) (err error) {
	var cleanups []func()
	defer func() {
		say("tearing down")
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	say("starting the control plane, CoreDNS and %d real nodes (containerd, kubelet, kube-proxy) in the local cloud", n)
	dir := filepath.Join(work, "cluster")
	cluster, err := nodes.Up(ctx, nodes.Options{Dir: dir, Nodes: n, Prefix: prefix, HostRoute: true})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() {
		if err := nodes.Down(context.Background(), dir); err != nil {
			fmt.Fprintln(os.Stderr, "demo: nodes down:", err)
		}
	})
	client := cluster.Client()
	cfgPath := filepath.Join(work, "cloud.hcl")
	if err := cloudConfig(work, bin, cluster.Cloud).Write(cfgPath); err != nil {
		return err
	}
	say("starting terraform-cloud-controller-manager (log: %s)", filepath.Join(work, "ccm.log"))
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Binary: filepath.Join(bin, "terraform-cloud-controller-manager"), Kubeconfig: cluster.Kubeconfig(),
		CloudConfig: cfgPath, Dir: work, StopGrace: 30 * time.Second,
		Flags: []string{"--configure-cloud-routes=true", "--cluster-cidr=10.244.0.0/16",
			"--route-reconciliation-period=10s", "--concurrent-service-syncs=4"},
	})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, ccm.Stop)
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		return err
	}

	say("deploying hello (%s, netexec) and two LoadBalancer Services", nodes.AgnhostImage)
	labels := map[string]string{"app": "hello"}
	deploy := nodes.NetexecDeployment("hello", int32(n), corev1.ScheduleAnyway)
	if _, err := client.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		return err
	}
	port := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	services := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: labels, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hello-routed", Namespace: "default", Annotations: map[string]string{"tfccm.io/template": "routed"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: labels, Ports: port,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}},
	}
	vips := map[string]string{}
	for _, svc := range services {
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		cleanups = append(cleanups, func() { deleteService(client, svc) })
	}
	for _, svc := range services {
		if vips[svc.Name], err = harness.WaitForIngress(ctx, client, "default", svc.Name, 3*time.Minute); err != nil {
			return err
		}
	}
	// The routed VIP goes to every node with a pod once their checks pass.
	if err := harness.Eventually(ctx, time.Minute, "the routed VIP routed to every node", func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "ip", "-n", cluster.Cloud.CloudNetns, "-4", "route", "show", vips["hello-routed"]+"/32").Output()
		if err != nil {
			return err
		}
		if got := strings.Count(string(out), " via "); got < n {
			return fmt.Errorf("route %q", out)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"get", "nodes", "-o", "wide"},
		{"get", "pods", "-o", "wide"},
		{"get", "svc", "-o", "wide"},
	} {
		say("kubectl %s", strings.Join(args[:2], " "))
		kubectl := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
		kubectl.Stdout, kubectl.Stderr = os.Stdout, os.Stderr
		if err := kubectl.Run(); err != nil {
			return fmt.Errorf("kubectl: %w", err)
		}
	}
	say("ip -n %s route   (pod CIDRs and the routed VIP, applied by tfccm)", cluster.Cloud.CloudNetns)
	ipRoute := exec.Command("ip", "-n", cluster.Cloud.CloudNetns, "-4", "route")
	ipRoute.Stdout, ipRoute.Stderr = os.Stdout, os.Stderr
	if err := ipRoute.Run(); err != nil {
		return fmt.Errorf("ip route: %w", err)
	}
	for _, name := range []string{"hello", "hello-routed"} {
		for _, path := range []string{"hostname", "clientip"} {
			url := "http://" + vips[name] + "/" + path
			say("curl %s   (%s)", url, name)
			reply, err := get(ctx, url)
			if err != nil {
				return err
			}
			fmt.Println(reply)
		}
	}
	if once {
		return nil
	}
	fmt.Printf(`
The demo is running on real nodes:
  export KUBECONFIG=%s
  bin/kubectl get nodes,pods,svc -o wide
  curl http://%s/hostname          # hello: HAProxy -> NodePort -> kube-proxy -> a pod
  curl http://%s/clientip          # hello-routed: VIP routed to a node with a pod; your own address
Press Ctrl-C to stop: the Services are deleted (tfccm destroys their load
balancers), then the CCM, the nodes, the cloud and the control plane.
`, cluster.Kubeconfig(), vips["hello"], vips["hello-routed"])
	<-ctx.Done()
	return nil
}
