package harness

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func addresses(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		out = append(out, string(a.Type)+"="+a.Address)
	}
	return out
}

func condition(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestRegisterNode(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	for _, tc := range []struct {
		node      Node
		addrs     []string
		tainted   bool
		ready     corev1.ConditionStatus
		netUnavai corev1.ConditionStatus
	}{
		// Registered before the CCM knows its address (no --node-ip).
		{Node{Name: "a", Uninitialized: true, NotReady: true}, nil, true, corev1.ConditionFalse, ""},
		// With --node-ip: the InternalIP and then the Hostname.
		{Node{Name: "b", InternalIPs: []string{"10.0.0.2"}}, []string{"InternalIP=10.0.0.2", "Hostname=b"}, false, corev1.ConditionTrue, ""},
		// Dual-stack with pod CIDRs, waiting for its routes.
		{Node{Name: "c", InternalIPs: []string{"10.0.0.3", "fd00::3"}, PodCIDRs: []string{"10.244.3.0/24", "fd00:244:3::/64"}, NetworkUnavailable: true},
			[]string{"InternalIP=10.0.0.3", "InternalIP=fd00::3", "Hostname=c"}, false, corev1.ConditionTrue, corev1.ConditionTrue},
	} {
		created, err := RegisterNode(ctx, client, tc.node)
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.CoreV1().Nodes().Get(ctx, tc.node.Name, metav1.GetOptions{})
		if err != nil || got.Name != created.Name {
			t.Fatalf("%s: %v", tc.node.Name, err)
		}
		if got.Labels[corev1.LabelHostname] != tc.node.Name {
			t.Errorf("%s: labels %v", got.Name, got.Labels)
		}
		if a := addresses(got); !slices.Equal(a, tc.addrs) {
			t.Errorf("%s: addresses %v, want %v", got.Name, a, tc.addrs)
		}
		tainted := len(got.Spec.Taints) == 1 && got.Spec.Taints[0].Key == UninitializedTaint && got.Spec.Taints[0].Effect == corev1.TaintEffectNoSchedule
		if tainted != tc.tainted || (!tc.tainted && len(got.Spec.Taints) != 0) {
			t.Errorf("%s: taints %v", got.Name, got.Spec.Taints)
		}
		if !slices.Equal(got.Spec.PodCIDRs, tc.node.PodCIDRs) || (len(tc.node.PodCIDRs) > 0 && got.Spec.PodCIDR != tc.node.PodCIDRs[0]) {
			t.Errorf("%s: pod CIDRs %q %v", got.Name, got.Spec.PodCIDR, got.Spec.PodCIDRs)
		}
		if s := condition(got, corev1.NodeReady); s != tc.ready {
			t.Errorf("%s: Ready=%s, want %s", got.Name, s, tc.ready)
		}
		if s := condition(got, corev1.NodeNetworkUnavailable); s != tc.netUnavai {
			t.Errorf("%s: NetworkUnavailable=%s, want %s", got.Name, s, tc.netUnavai)
		}
	}
}
