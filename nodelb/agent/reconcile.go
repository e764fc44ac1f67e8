// The reconcile loop: hold the addresses this node is chosen for, release the others.

package agent

import (
	"context"
	"errors"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/announce"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// outcome is what this agent did with an address it was chosen for.
type outcome struct {
	reason, message string
	iface           string
	// contenders: the nodes answering for the address at once (split
	// brain), when this node holds it and is not alone.
	contenders []string
}

// reconcile applies the decisions of the current view to this node and
// reports them.
func (a *Agent) reconcile(ctx context.Context) {
	nodes := map[string]*corev1.Node{}
	for _, n := range a.nodes() {
		nodes[n.Name] = n
	}
	w := view{nodes: nodes, members: a.members.members(), slices: a.slices}
	l2, viaBGP := splitBGP(a.vips())
	a.reconcileBGP(ctx, viaBGP, w, nodes[a.cfg.NodeName])
	if a.cut.isCut() {
		// Cut off: whatever it decides, another node is serving.
		for addr, h := range a.held {
			a.release(addr, h)
		}
		return
	}
	decisions := decide(a.confirmed(ctx, l2), w)
	mine, waiting := map[string]bool{}, map[string]bool{}
	for _, d := range decisions {
		switch {
		case d.Invalid != "":
			if d.Reporter == a.cfg.NodeName {
				a.report(ctx, d, "", outcome{reason: vipapi.ReasonInvalid, message: d.Invalid})
			}
		case d.Standby:
			if d.Reporter == a.cfg.NodeName {
				a.report(ctx, d, "", outcome{reason: vipapi.ReasonStandby,
					message: "on standby (spec.standby): no node holds the address; another speaker announces it"})
			}
		case d.Holder == a.cfg.NodeName:
			addr := d.Address.String()
			if _, held := a.held[addr]; !held && a.waitHandover(d, w.members, time.Now()) {
				waiting[addr] = true
				continue
			}
			mine[addr] = true
			o := a.take(d)
			if o.reason == vipapi.ReasonAnnounced {
				var fresh string
				o.contenders, fresh = a.contention.observe(a.cfg.NodeName, d, w.members, time.Now())
				if fresh != "" {
					a.splitBrain(d, fresh)
				}
			}
			if other, ok := a.mayOverwrite(d, time.Now()); ok {
				if a.report(ctx, d, a.cfg.NodeName, o) > 0 && other {
					a.overwrote[d.Address.String()] = time.Now()
				}
			}
		case d.Holder == "" && d.Reporter == a.cfg.NodeName:
			a.report(ctx, d, "", outcome{reason: d.WhyReason, message: d.Why})
		}
	}
	for addr, h := range a.held {
		if !mine[addr] {
			a.release(addr, h)
		}
	}
	for addr := range a.handover {
		if !waiting[addr] {
			delete(a.handover, addr)
		}
	}
}

// confirmed replaces, in vips, each NodeVIP whose status names this node
// as holder while this node does not hold its address (it was cut off,
// restarted, or ineligible) with a fresh copy read from the API server: a
// watch that has not caught up after the node's link came back would
// otherwise name this node, and it would take back (the holder keeps its
// VIPs) what another node now holds. A NodeVIP that cannot be read is left
// out of this round.
func (a *Agent) confirmed(ctx context.Context, vips []*vipapi.NodeVIP) []*vipapi.NodeVIP {
	out := vips[:0:0]
	for _, v := range vips {
		if _, held := a.held[v.Spec.Address]; v.Status.Holder != a.cfg.NodeName || held {
			out = append(out, v)
			continue
		}
		u, err := a.dyn.Get(ctx, v.Name, metav1.GetOptions{})
		if err != nil {
			klog.V(2).InfoS("NodeVIP not confirmed", "nodevip", v.Name, "err", err)
			continue
		}
		fresh, err := vipapi.FromUnstructured(u)
		if err != nil {
			continue
		}
		out = append(out, fresh)
	}
	return out
}

// handoverDelay is how long a new holder waits for the old one to let go
// when the old one is alive and still eligible in the gossip (cordoned,
// drained, not Ready, its endpoint gone: what every agent learns from the
// API server, each at its own moment). Nothing is lost meanwhile:
// kube-proxy on the old holder still serves what reaches it.
const handoverDelay = 500 * time.Millisecond

// waitHandover: whether this agent, chosen for d's address it does not
// hold, waits before it takes it, because the holder d's status names is
// a live, eligible agent that will release it itself (a planned hand-over:
// taking at once would answer beside it for a moment). A holder that is
// gone or gossips itself not eligible (its kubelet stopped: it released
// first) is replaced at once. It waits handoverDelay at most, then takes
// the address anyway.
func (a *Agent) waitHandover(d decision, members map[string]member, now time.Time) bool {
	addr := d.Address.String()
	planned := false
	for _, h := range currentHolders(d.VIPs) {
		if m, ok := members[h]; ok && h != a.cfg.NodeName && m.Eligible {
			planned = true
		}
	}
	if !planned {
		delete(a.handover, addr)
		return false
	}
	since, ok := a.handover[addr]
	if !ok {
		a.handover[addr] = now
		time.AfterFunc(handoverDelay, a.kick)
		return true
	}
	return now.Sub(since) < handoverDelay
}

// overwriteEvery is how often an agent may write itself as holder over a
// status that names another node as holding the address.
const overwriteEvery = 5 * time.Second

// mayOverwrite: whether this agent, d's holder, may write d's status now,
// and whether the status names another holder. Taking over from a holder
// that is gone is one write (retried at once when it fails). Two agents
// that both hold the address (they do not hear each other: a partition)
// would each overwrite the other's status at once, every time, in a loop
// of API writes; once one has overwritten it (reconcile records when), it
// waits overwriteEvery before it does again.
func (a *Agent) mayOverwrite(d decision, now time.Time) (other, ok bool) {
	for _, v := range d.VIPs {
		if c := v.Status.Announced(); c != nil && c.Status == metav1.ConditionTrue && v.Status.Holder != "" && v.Status.Holder != a.cfg.NodeName {
			other = true
		}
	}
	if !other {
		return false, true
	}
	addr := d.Address.String()
	if last, ok := a.overwrote[addr]; ok && now.Sub(last) < overwriteEvery {
		return true, false
	}
	for k, t := range a.overwrote {
		if now.Sub(t) >= overwriteEvery {
			delete(a.overwrote, k)
		}
	}
	return true, true
}

// heldVIP is one VIP this node answers for.
type heldVIP struct {
	ifindex int
	iface   string
	addr    netip.Addr
}

// take makes this node answer for d's address (announcing it when new).
func (a *Agent) take(d decision) outcome {
	addr := d.Address.String()
	ifi, err := announce.Interface(d.Address, d.Interface)
	if err != nil {
		reason := vipapi.ReasonCannotAnnounce
		if errors.Is(err, announce.ErrOutside) {
			reason = vipapi.ReasonOutsideNetworks
		}
		if prev, ok := a.held[addr]; ok {
			a.release(addr, prev)
		}
		return outcome{reason: reason, message: "node " + a.cfg.NodeName + ": " + err.Error()}
	}
	h := heldVIP{ifindex: ifi.Index, iface: ifi.Name, addr: d.Address}
	if prev, ok := a.held[addr]; ok && prev != h {
		a.release(addr, prev)
	}
	if err := a.speaker.Hold(ifi, d.Address); err != nil {
		// Not allowed here: say so in the gossip, so another node holds it.
		a.members.setSelf(meta{Why: err.Error()})
		return outcome{reason: vipapi.ReasonCannotAnnounce, message: "node " + a.cfg.NodeName + ": " + err.Error()}
	}
	if _, ok := a.held[addr]; !ok {
		klog.InfoS("holding VIP", "address", addr, "interface", ifi.Name, "candidates", d.Candidates)
	}
	a.held[addr] = h
	heldGauge.WithLabelValues(addr, a.cfg.NodeName).Set(1)
	return outcome{reason: vipapi.ReasonAnnounced, iface: ifi.Name,
		message: "held by " + a.cfg.NodeName + " on " + ifi.Name + ", announced by " + announce.Method(d.Address)}
}

// release stops answering for a VIP.
func (a *Agent) release(addr string, h heldVIP) {
	a.speaker.Release(h.ifindex, h.addr)
	delete(a.held, addr)
	a.contention.forget(addr)
	heldGauge.DeleteLabelValues(addr, a.cfg.NodeName)
	klog.InfoS("released VIP", "address", addr, "interface", h.iface)
}
