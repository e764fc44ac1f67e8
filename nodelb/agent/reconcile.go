// The reconcile loop: hold the addresses this node is chosen for, release the others.

package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/announce"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// outcome is what this agent did with an address it was chosen for.
type outcome struct {
	reason, message string
	iface           string
}

// reconcile applies the decisions of the current view to this node and
// reports them.
func (a *Agent) reconcile(ctx context.Context) {
	nodes := map[string]*corev1.Node{}
	for _, n := range a.nodes() {
		nodes[n.Name] = n
	}
	w := view{nodes: nodes, members: a.members.members(), slices: a.slices}
	decisions := decide(a.vips(), w)
	mine := map[string]bool{}
	for _, d := range decisions {
		switch {
		case d.Invalid != "":
			if d.Reporter == a.cfg.NodeName {
				a.report(ctx, d, "", outcome{reason: vipapi.ReasonInvalid, message: d.Invalid})
			}
		case d.Holder == a.cfg.NodeName:
			mine[d.Address.String()] = true
			a.report(ctx, d, a.cfg.NodeName, a.take(d))
		case d.Holder == "" && d.Reporter == a.cfg.NodeName:
			a.report(ctx, d, "", outcome{reason: vipapi.ReasonNoEligibleNode, message: d.Why})
		}
	}
	for addr, h := range a.held {
		if !mine[addr] {
			a.release(addr, h)
		}
	}
}

// take puts d's address on this node (once) and announces it.
func (a *Agent) take(d decision) outcome {
	addr := d.Address.String()
	ifi, err := announce.Interface(d.Address, d.Interface)
	if err != nil {
		reason := vipapi.ReasonCannotAnnounce
		if errors.Is(err, announce.ErrOutside) {
			reason = vipapi.ReasonOutsideNetworks
		}
		delete(a.held, addr) // nothing to keep
		return outcome{reason: reason, message: "node " + a.cfg.NodeName + ": " + err.Error()}
	}
	h := announce.Held{Interface: ifi.Name, Address: d.Address}
	if prev, ok := a.held[addr]; ok && prev == h {
		if on, err := announce.Has(ifi, d.Address); err == nil && on {
			return outcome{reason: vipapi.ReasonAnnounced, iface: ifi.Name, message: a.heldMessage(ifi, d.Address)}
		}
		klog.InfoS("a VIP this node holds was removed behind its back; adding it again", "address", addr, "interface", ifi.Name)
	} else if ok {
		a.release(addr, prev)
	}
	if err := a.record.Set(h, true); err != nil {
		return outcome{reason: vipapi.ReasonCannotAnnounce, message: err.Error()}
	}
	if err := announce.Add(ifi, d.Address); err != nil {
		// Not allowed here: say so in the gossip, so another node holds it.
		a.members.setSelf(meta{Why: err.Error()})
		return outcome{reason: vipapi.ReasonCannotAnnounce, message: "node " + a.cfg.NodeName + ": " + err.Error()}
	}
	a.held[addr] = h
	klog.InfoS("holding VIP", "address", addr, "interface", ifi.Name, "candidates", d.Candidates)
	go announceNow(ifi, d.Address)
	return outcome{reason: vipapi.ReasonAnnounced, iface: ifi.Name, message: a.heldMessage(ifi, d.Address)}
}

func (a *Agent) heldMessage(ifi *net.Interface, addr netip.Addr) string {
	return "held by " + a.cfg.NodeName + " on " + ifi.Name + ", announced by " + announce.Method(addr)
}

// announceNow announces a new holder three times (a lost packet leaves no
// neighbour behind).
func announceNow(ifi *net.Interface, addr netip.Addr) {
	if err := announce.Announce(ifi, addr, 3, 300*time.Millisecond); err != nil {
		klog.ErrorS(err, "announce VIP")
	}
}

// release takes a VIP off this node.
func (a *Agent) release(addr string, h announce.Held) {
	ifi, err := net.InterfaceByName(h.Interface)
	if err == nil {
		if err := announce.Remove(ifi, h.Address); err != nil {
			klog.ErrorS(err, "release VIP", "address", addr)
			return
		}
	}
	delete(a.held, addr)
	if err := a.record.Set(h, false); err != nil {
		klog.ErrorS(err, "record released VIP", "address", addr)
	}
	klog.InfoS("released VIP", "address", addr, "interface", h.Interface)
}

// loadRecord takes over the VIPs a previous run of this agent added: the
// first reconcile keeps those still chosen and removes the rest.
func (a *Agent) loadRecord() error {
	list, err := a.record.List()
	if err != nil {
		return err
	}
	for _, h := range list {
		a.held[h.Address.String()] = h
	}
	return nil
}
