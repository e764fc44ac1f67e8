package nodes

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/test/harness"
)

// udpAsk sends one agnhost netexec UDP command ("hostname", "clientip")
// to addr from the host and returns the reply.
func udpAsk(addr, cmd string) (string, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// TestL4LoadBalancerOnRealNodes: a mixed-protocol LoadBalancer Service
// (80/TCP and 53/UDP) of the local set's `l4` variant with
// externalTrafficPolicy: Local, served by one pod, as the upstream
// "preserve source IP" (ESIPP) specs check it: the cloud's router DNATs the
// VIP only to the node whose kube-proxy reports a local endpoint (the
// Service's healthCheckNodePort), kube-proxy there forwards to the pod
// without SNAT, and the pod sees the caller's own address over TCP and UDP.
func TestL4LoadBalancerOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	startTfccm(t, c)
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitNodesReady(t, client)
	pod := runPod(t, client, "dns", "node-b")

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "default", Annotations: map[string]string{"tfccm.io/template": "l4"}},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Selector:              map[string]string{"app": "netexec"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(8081)},
			},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip, err := harness.WaitForIngress(ctx, client, "default", "dns", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Services("default").Get(ctx, "dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ingress ipMode %v, want VIP", m)
	}
	for i := range 10 { // spread over the nodes, the traffic only reaches node-b's pod
		var host, clientIP, udpHost, udpClient string
		err = harness.Eventually(ctx, time.Minute, "TCP and UDP through the VIP from the host", func(ctx context.Context) error {
			var err error
			if host, err = httpGet(ctx, "http://"+vip+"/hostname"); err != nil {
				return err
			}
			if clientIP, err = httpGet(ctx, "http://"+vip+"/clientip"); err != nil {
				return err
			}
			if udpHost, err = udpAsk(net.JoinHostPort(vip, "53"), "hostname"); err != nil {
				return err
			}
			udpClient, err = udpAsk(net.JoinHostPort(vip, "53"), "clientip")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if host != pod.Name || udpHost != pod.Name {
			t.Errorf("request %d answered by %q (TCP), %q (UDP), want %s", i, host, udpHost, pod.Name)
		}
		for proto, seen := range map[string]string{"TCP": clientIP, "UDP": udpClient} {
			if ip, _, _ := strings.Cut(seen, ":"); ip != c.Cloud.HostAddress {
				t.Errorf("over %s the pod saw client %q, want the host's own address %s", proto, seen, c.Cloud.HostAddress)
			}
		}
	}
	if err := client.CoreV1().Services("default").Delete(ctx, "dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitServiceDeleted(ctx, client, "default", "dns", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.Eventually(ctx, 10*time.Second, "the VIP's rules removed", func(context.Context) error {
		out, _ := exec.Command("ip", "netns", "exec", c.Cloud.CloudNetns, "nft", "list", "table", "ip", "lbhost_l4").CombinedOutput()
		if strings.Contains(string(out), vip) {
			return fmt.Errorf("table:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}
