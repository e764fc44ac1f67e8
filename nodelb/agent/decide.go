// The decision for every address: who holds it, among which candidates.

package agent

import (
	"net/netip"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/nodelb/holder"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// decision is the holder of one address and the NodeVIPs that carry it
// (Services sharing an address have one NodeVIP each).
type decision struct {
	Address    netip.Addr
	VIPs       []*vipapi.NodeVIP
	Interface  string
	Holder     string
	Candidates []string
	// Why there is no holder, and the Announced reason that says it:
	// NoEligibleNode, or NoLocalEndpoint when the only thing the nodes
	// lack is a ready endpoint of an externalTrafficPolicy Local Service.
	Why       string
	WhyReason string
	// Reporter writes the status when there is no holder: the live agent
	// the rule would pick among all of them.
	Reporter string
	// Invalid: the NodeVIPs disagree on the interface, or the address does
	// not parse.
	Invalid string
	// Standby: every NodeVIP of the address is on standby (spec.standby):
	// no node holds it; the Reporter says so.
	Standby bool
}

// decide applies the holder rule to every address of vips.
func decide(vips []*vipapi.NodeVIP, w view) []decision {
	byAddr := map[string][]*vipapi.NodeVIP{}
	for _, v := range vips {
		if v.DeletionTimestamp != nil {
			continue
		}
		byAddr[v.Spec.Address] = append(byAddr[v.Spec.Address], v)
	}
	var alive []string
	for name := range w.members {
		alive = append(alive, name)
	}
	var out []decision
	for addr, group := range byAddr {
		sort.Slice(group, func(i, j int) bool {
			return group[i].Namespace+"/"+group[i].Name < group[j].Namespace+"/"+group[j].Name
		})
		d := decision{VIPs: group, Reporter: holder.Choose(addr, alive), Interface: group[0].Spec.Interface}
		a, err := netip.ParseAddr(addr)
		if err != nil {
			d.Invalid = "address " + addr + " is not an IP address"
			out = append(out, d)
			continue
		}
		d.Address = a
		// Every Service sharing the address must be served by the holder:
		// the candidates are those every one of them allows.
		var cands []string
		for i, v := range group {
			if v.Spec.Interface != d.Interface {
				d.Invalid = "the NodeVIPs of address " + addr + " name different interfaces"
			}
			c := holder.Candidates(v.Spec.Nodes, w.nodeStates(v), v.Spec.ExternalTrafficPolicy == vipapi.PolicyLocal)
			if i == 0 {
				cands = c
			} else {
				cands = slices.DeleteFunc(cands, func(n string) bool { return !slices.Contains(c, n) })
			}
			if len(c) == 0 && d.Why == "" {
				d.Why, d.WhyReason = w.why(v, w.nodeStates(v)), vipapi.ReasonNoEligibleNode
				if noLocalEndpoint(v, w) {
					d.WhyReason = vipapi.ReasonNoLocalEndpoint
				}
			}
		}
		d.Standby = allStandby(group)
		if d.Invalid == "" {
			d.Candidates = cands
		}
		if d.Invalid == "" && !d.Standby {
			d.Holder = holder.Sticky(addr, cands, currentHolders(group))
			if d.Holder == "" && d.Why == "" {
				d.Why, d.WhyReason = "no eligible node serves every Service sharing the address", vipapi.ReasonNoEligibleNode
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VIPs[0].Spec.Address < out[j].VIPs[0].Spec.Address })
	return out
}

// noLocalEndpoint: v's traffic policy is Local, and some of its nodes
// could hold it but for a ready local endpoint: a Service without a ready
// pod (scaled to zero, starting), which no node is meant to answer for.
func noLocalEndpoint(v *vipapi.NodeVIP, w view) bool {
	if v.Spec.ExternalTrafficPolicy != vipapi.PolicyLocal {
		return false
	}
	states := w.nodeStates(v)
	return len(holder.Candidates(v.Spec.Nodes, states, true)) == 0 && len(holder.Candidates(v.Spec.Nodes, states, false)) > 0
}

// allStandby: every NodeVIP of an address is on standby (one that is not
// needs the address held).
func allStandby(group []*vipapi.NodeVIP) bool {
	for _, v := range group {
		if !v.Spec.Standby {
			return false
		}
	}
	return len(group) > 0
}

// currentHolders are the holders the statuses of group name as announcing
// the address: the holder keeps it while it stays a candidate.
func currentHolders(group []*vipapi.NodeVIP) []string {
	var out []string
	for _, v := range group {
		if c := v.Status.Announced(); c != nil && c.Status == metav1.ConditionTrue && v.Status.Holder != "" {
			out = append(out, v.Status.Holder)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
