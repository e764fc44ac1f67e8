// What the holder rule needs to know, read from the watches and the gossip.

package agent

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/tfccm/tfccm/nodelb/holder"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// view is one consistent look at the cluster, for one reconcile.
type view struct {
	nodes   map[string]*corev1.Node
	members map[string]member
	// slices returns the EndpointSlices of a Service.
	slices func(namespace, name string) []*discoveryv1.EndpointSlice
}

// Taints that take a node out like a cordon does.
var leavingTaints = []string{
	"ToBeDeletedByClusterAutoscaler",
	"node.kubernetes.io/out-of-service",
	corev1.TaintNodeUnschedulable,
}

// nodeState is the holder rule's picture of a node for v (its Service's
// local endpoints with externalTrafficPolicy Local).
func (w view) nodeStates(v *vipapi.NodeVIP) map[string]holder.Node {
	local := localEndpointNodes(w.slices(v.Spec.Service.Namespace, v.Spec.Service.Name))
	out := map[string]holder.Node{}
	for _, name := range v.Spec.Nodes {
		n, ok := w.nodes[name]
		if !ok {
			continue
		}
		m, alive := w.members[name]
		out[name] = holder.Node{
			Ready:         nodeReady(n),
			Unschedulable: nodeLeaving(n),
			AgentAlive:    alive,
			AgentEligible: alive && m.Eligible,
			LocalEndpoint: local[name],
		}
	}
	return out
}

// why explains, node by node, why v has no candidate.
func (w view) why(v *vipapi.NodeVIP, states map[string]holder.Node) string {
	if len(v.Spec.Nodes) == 0 {
		return "no node may hold it: the node selector matches no node"
	}
	local := v.Spec.ExternalTrafficPolicy == vipapi.PolicyLocal
	var parts []string
	for _, name := range v.Spec.Nodes {
		n, ok := states[name]
		r := holder.Reason(n, ok, local)
		if !ok {
			r = "no such Node"
		}
		if r == holder.AgentIneligible && w.members[name].Why != "" {
			r += " (" + w.members[name].Why + ")"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", name, r))
		if len(parts) == 10 && len(v.Spec.Nodes) > 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(v.Spec.Nodes)-10))
			break
		}
	}
	return "no eligible node: " + strings.Join(parts, "; ")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeLeaving(n *corev1.Node) bool {
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return true
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return slices.Contains(leavingTaints, t.Key) })
}

// localEndpointNodes are the nodes with a ready endpoint in slices.
func localEndpointNodes(slices []*discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.NodeName == nil || e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			out[*e.NodeName] = true
		}
	}
	return out
}

// internalIP is the node's first InternalIP, IPv4 first.
func internalIP(n *corev1.Node) string {
	var v6 string
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if !strings.Contains(a.Address, ":") {
			return a.Address
		}
		if v6 == "" {
			v6 = a.Address
		}
	}
	return v6
}
