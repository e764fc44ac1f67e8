// The holder rule: which nodes may hold a VIP, and which one does.

package holder

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Node is what the rule knows about one node.
type Node struct {
	// Ready: the Node's Ready condition is True.
	Ready bool
	// Unschedulable: cordoned (spec.unschedulable), or tainted as being
	// deleted or drained.
	Unschedulable bool
	// AgentAlive: the node's agent is a live member of the gossip cluster.
	AgentAlive bool
	// AgentEligible: the agent says it can serve (it can announce, its
	// kubelet answers, its node is not cordoned).
	AgentEligible bool
	// LocalEndpoint: the Service has a ready endpoint on the node (only
	// read with externalTrafficPolicy Local).
	LocalEndpoint bool
}

// Why a node is not a candidate: the first rule it fails.
const (
	NotListed       = "not selected for the VIP"
	NotReady        = "not Ready"
	NotSchedulable  = "cordoned or being removed"
	NoAgent         = "its agent is not alive"
	AgentIneligible = "its agent cannot serve"
	NoLocalEndpoint = "no ready local endpoint (externalTrafficPolicy: Local)"
)

// Reason is why node n may not hold a VIP ("" when it may), given the
// VIP's traffic policy (local: externalTrafficPolicy Local).
func Reason(n Node, known bool, local bool) string {
	switch {
	case !known:
		return NotListed
	case !n.Ready:
		return NotReady
	case n.Unschedulable:
		return NotSchedulable
	case !n.AgentAlive:
		return NoAgent
	case !n.AgentEligible:
		return AgentIneligible
	case local && !n.LocalEndpoint:
		return NoLocalEndpoint
	}
	return ""
}

// Candidates are the nodes of listed (the VIP's spec.nodes) that may hold
// it, sorted.
func Candidates(listed []string, nodes map[string]Node, local bool) []string {
	var out []string
	for _, name := range listed {
		n, ok := nodes[name]
		if Reason(n, ok, local) == "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Choose is the holder of address among candidates: the highest
// rendezvous hash of (address, node), ties broken by name; "" when there
// is no candidate. Services sharing one address share its holder.
func Choose(address string, candidates []string) string {
	best, bestScore := "", uint64(0)
	for _, c := range candidates {
		s := score(address, c)
		if best == "" || s > bestScore || s == bestScore && c < best {
			best, bestScore = c, s
		}
	}
	return best
}

// Sticky is the holder of address among candidates when current (the
// holders the VIP's status names) already hold it: the current holder while
// it stays a candidate, so a node that returns does not take its VIPs back
// (that would be a second short move, with requests lost, for nothing);
// Choose among candidates when no current holder is one. Should the
// statuses name several current holders that are candidates, Choose picks
// among them, so every agent still agrees.
func Sticky(address string, candidates, current []string) string {
	var kept []string
	for _, c := range current {
		if slices.Contains(candidates, c) {
			kept = append(kept, c)
		}
	}
	if len(kept) > 0 {
		return Choose(address, kept)
	}
	return Choose(address, candidates)
}

// score is the rendezvous weight of node for address.
func score(address, node string) uint64 {
	h := sha256.New()
	h.Write([]byte(address))
	h.Write([]byte{0})
	h.Write([]byte(node))
	return binary.BigEndian.Uint64(h.Sum(nil))
}
