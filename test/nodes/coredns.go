package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
)

// ClusterDNS is the kube-dns Service's cluster IP (kubelet's clusterDNS).
const ClusterDNS = "10.0.0.10"

// corednsUser is CoreDNS's client-certificate user, granted read access to
// what its kubernetes plugin watches.
const corednsUser = "tfccm:coredns"

// startCoreDNS runs CoreDNS on the host, listening on address (the host's
// end of the cloud link, which pods reach through the cloud's router), and
// makes the kube-dns Service point at it: a Service without selector and
// an EndpointSlice with that address.
func startCoreDNS(ctx context.Context, cp *devcluster.Cluster, client kubernetes.Interface, dir, bin, address string, detach bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := grantCoreDNS(ctx, client); err != nil {
		return err
	}
	kubeconfig, err := cp.UserKubeconfig("coredns", "127.0.0.1", corednsUser)
	if err != nil {
		return err
	}
	corefile := strings.Join([]string{
		".:53 {",
		"    bind " + address,
		"    errors",
		"    kubernetes cluster.local in-addr.arpa ip6.arpa {",
		"        kubeconfig " + kubeconfig + " devcluster",
		"        pods insecure",
		"        fallthrough in-addr.arpa ip6.arpa",
		"    }",
		"    cache 30",
		"    loadbalance",
		"}",
		"",
	}, "\n")
	path := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		return err
	}
	if _, err := devcluster.StartProcess(dir, "coredns", detach, filepath.Join(bin, "coredns"), "-conf", path); err != nil {
		return err
	}
	return kubeDNSService(ctx, client, address)
}

func grantCoreDNS(ctx context.Context, client kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: corednsUser},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: corednsUser}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns: %w", err)
	}
	return nil
}

func kubeDNSService(ctx context.Context, client kubernetes.Interface, address string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNS,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if _, err := client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns: kube-dns Service: %w", err)
	}
	ready := true
	port := func(name string, proto corev1.Protocol) discoveryv1.EndpointPort {
		p := int32(53)
		return discoveryv1.EndpointPort{Name: &name, Port: &p, Protocol: &proto}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-host", Namespace: "kube-system", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "tfccm-devcluster",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{address}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns: kube-dns EndpointSlice: %w", err)
	}
	return nil
}
