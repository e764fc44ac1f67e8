// Package lbnodes holds the one rule for which nodes back load balancers:
// the cloud-provider service controller's stable node set, which the CCM's
// class loop and the offline fleet plan must both hand to templates.
package lbnodes

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ToBeDeletedTaint is the cluster autoscaler's taint on a node it is
// removing (k8s.io/cloud-provider's service controller, ToBeDeletedTaint;
// kept here so the CLI does not link the service controller).
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// Eligible reports whether n backs load balancers: not being deleted, not
// excluded by node.kubernetes.io/exclude-from-external-load-balancers (an
// unreadable value excludes, as upstream), not tainted for deletion by
// the autoscaler. Readiness is left to the load balancer's health check,
// as in the service controller.
func Eligible(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return false
	}
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		if exclude, err := strconv.ParseBool(v); err != nil || exclude {
			return false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return false
		}
	}
	return true
}

// Filter returns the nodes of nodes that are Eligible, in their order.
func Filter(nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if Eligible(n) {
			out = append(out, n)
		}
	}
	return out
}
