package harness

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// UninitializedTaint is the taint a kubelet with --cloud-provider=external
// registers its Node with; the CCM's node controller removes it once it
// has initialized the Node from the cloud.
const UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// Node describes a Node as a kubelet (and the components that set a
// Node's fields before any CCM sees it) would register it.
type Node struct {
	Name string
	// InternalIPs are the node's addresses (a kubelet's --node-ip, IPv4
	// and/or IPv6). With none, the Node has no addresses at all, as a
	// kubelet with --cloud-provider=external and no --node-ip registers
	// it; with some, the Hostname address follows them.
	InternalIPs []string
	// PodCIDRs are the pod CIDRs, as kube-controller-manager's IPAM would
	// allocate them.
	PodCIDRs []string
	// Uninitialized taints the Node node.cloudprovider.kubernetes.io/uninitialized.
	Uninitialized bool
	// NotReady reports the Ready condition False instead of True.
	NotReady bool
	// NetworkUnavailable reports NetworkUnavailable=True, as a CNI plugin
	// does before the routes to the node exist.
	NetworkUnavailable bool
}

// Object is the Node API object n describes.
func (n Node) Object() *corev1.Node {
	now := metav1.Now()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{corev1.LabelHostname: n.Name}}}
	if len(n.PodCIDRs) > 0 {
		node.Spec.PodCIDR, node.Spec.PodCIDRs = n.PodCIDRs[0], append([]string(nil), n.PodCIDRs...)
	}
	if n.Uninitialized {
		node.Spec.Taints = []corev1.Taint{{Key: UninitializedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, ip := range n.InternalIPs {
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	if len(n.InternalIPs) > 0 {
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}
	if n.NotReady {
		ready.Status, ready.Reason = corev1.ConditionFalse, "KubeletNotReady"
	}
	node.Status.Conditions = []corev1.NodeCondition{ready}
	if n.NetworkUnavailable {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: "NoRouteCreated", LastTransitionTime: now,
		})
	}
	return node
}

// RegisterNode creates the Node n describes, with its status, in one call
// as a kubelet does, and returns what the apiserver stored.
func RegisterNode(ctx context.Context, client kubernetes.Interface, n Node) (*corev1.Node, error) {
	return client.CoreV1().Nodes().Create(ctx, n.Object(), metav1.CreateOptions{})
}
