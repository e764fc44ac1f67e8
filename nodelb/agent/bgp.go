// BGP mode: the NodeVIPs with announce bgp are announced by every
// eligible node at once, through the node's own FRR (package nodelb/bgp),
// instead of by one holder over ARP/NDP.

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/bgp"
	"github.com/tfccm/tfccm/nodelb/holder"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// bgpDecision is one address announced over BGP: the nodes that announce
// it (every candidate), and who reports its status.
type bgpDecision struct {
	Address    netip.Addr
	VIPs       []*vipapi.NodeVIP
	Candidates []string
	Why        string
	WhyReason  string
	Reporter   string
	Invalid    string
}

// splitBGP separates the NodeVIPs announced over BGP from the others.
func splitBGP(vips []*vipapi.NodeVIP) (l2, viaBGP []*vipapi.NodeVIP) {
	for _, v := range vips {
		if v.Spec.BGP() {
			viaBGP = append(viaBGP, v)
		} else {
			l2 = append(l2, v)
		}
	}
	return l2, viaBGP
}

// decideBGP: every node that is a candidate for every NodeVIP sharing an
// address announces it (ECMP at the routers; kube-proxy on each serves).
func decideBGP(vips []*vipapi.NodeVIP, w view) []bgpDecision {
	byAddr := map[string][]*vipapi.NodeVIP{}
	for _, v := range vips {
		if v.DeletionTimestamp != nil || v.Spec.Standby {
			continue
		}
		byAddr[v.Spec.Address] = append(byAddr[v.Spec.Address], v)
	}
	var alive []string
	for name := range w.members {
		alive = append(alive, name)
	}
	var out []bgpDecision
	for addr, group := range byAddr {
		sort.Slice(group, func(i, j int) bool {
			return group[i].Namespace+"/"+group[i].Name < group[j].Namespace+"/"+group[j].Name
		})
		d := bgpDecision{VIPs: group, Reporter: holder.Choose(addr, alive)}
		a, err := netip.ParseAddr(addr)
		if err != nil {
			d.Invalid = "address " + addr + " is not an IP address"
			out = append(out, d)
			continue
		}
		d.Address = a
		for i, v := range group {
			c := holder.Candidates(v.Spec.Nodes, w.nodeStates(v), v.Spec.ExternalTrafficPolicy == vipapi.PolicyLocal)
			if i == 0 {
				d.Candidates = c
			} else {
				d.Candidates = slices.DeleteFunc(d.Candidates, func(n string) bool { return !slices.Contains(c, n) })
			}
			if len(c) == 0 && d.Why == "" {
				d.Why, d.WhyReason = w.why(v, w.nodeStates(v)), vipapi.ReasonNoEligibleNode
				if noLocalEndpoint(v, w) {
					d.WhyReason = vipapi.ReasonNoLocalEndpoint
				}
			}
		}
		slices.Sort(d.Candidates)
		if len(d.Candidates) == 0 && d.Why == "" {
			d.Why, d.WhyReason = "no eligible node serves every Service sharing the address", vipapi.ReasonNoEligibleNode
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VIPs[0].Spec.Address < out[j].VIPs[0].Spec.Address })
	return out
}

// bgpState is the agent's BGP side.
type bgpState struct {
	dir     string
	dyn     dynamic.ResourceInterface
	spec    func() *vipapi.NodeBGP
	secrets func(ctx context.Context, name string) (*corev1.Secret, error)
	// problem is the last error configuring this node's FRR ("" none),
	// reported once as a Warning when it changes.
	problem string
	// announced: the addresses this node's FRR announces.
	announced map[string]bool
	// configured: the node's FRR holds the peering (with nothing wrong).
	configured bool
	// passwords caches the Secrets' keys read (never logged), so a
	// reconcile every few seconds does not read them each time.
	passwords map[vipapi.SecretKeyRef]cachedPassword
	// sessions are the node's BGP sessions as last read (sessions.go).
	sessions sessionWatch
}

// cachedPassword is one password and when it was read.
type cachedPassword struct {
	value string
	read  time.Time
}

// passwordTTL is how long a password read from a Secret is used before
// it is read again (a rotated password reaches FRR within it).
const passwordTTL = 30 * time.Second

// password is the key ref of its Secret, cached for passwordTTL.
func (s *bgpState) password(ctx context.Context, ref vipapi.SecretKeyRef, now time.Time) (string, error) {
	if c, ok := s.passwords[ref]; ok && now.Sub(c.read) < passwordTTL {
		return c.value, nil
	}
	sec, err := s.secrets(ctx, ref.Name)
	if err != nil {
		return "", err
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		return "", errors.New("no such key")
	}
	if s.passwords == nil {
		s.passwords = map[vipapi.SecretKeyRef]cachedPassword{}
	}
	pw := strings.TrimSpace(string(v))
	s.passwords[ref] = cachedPassword{value: pw, read: now}
	return pw, nil
}

// reconcileBGP announces this node's share of the BGP NodeVIPs, reports
// them, and returns nothing: problems are statuses and Events.
func (a *Agent) reconcileBGP(ctx context.Context, vips []*vipapi.NodeVIP, w view, self *corev1.Node) {
	decisions := decideBGP(vips, w)
	var mine []netip.Addr
	for _, d := range decisions {
		if d.Invalid == "" && slices.Contains(d.Candidates, a.cfg.NodeName) && !a.cut.isCut() {
			mine = append(mine, d.Address)
		}
	}
	if a.bgp.dir != "" && (len(vips) > 0 || len(a.bgp.announced) > 0 || a.bgp.configured || a.bgp.spec() != nil) {
		a.applyBGP(ctx, mine, self)
	}
	configured := a.bgpConfiguredNodes()
	for _, d := range decisions {
		if d.Reporter != a.cfg.NodeName {
			continue
		}
		var announcers []string
		for _, n := range d.Candidates {
			if configured[n] {
				announcers = append(announcers, n)
			}
		}
		o := outcome{reason: vipapi.ReasonAnnounced, message: "announced over BGP by " + strings.Join(announcers, ", ")}
		switch {
		case d.Invalid != "":
			o = outcome{reason: vipapi.ReasonInvalid, message: d.Invalid}
		case len(d.Candidates) == 0:
			o = outcome{reason: d.WhyReason, message: d.Why}
		case len(announcers) == 0:
			o = outcome{reason: vipapi.ReasonNoBGP, message: "no eligible node's FRR announces it (" + strings.Join(d.Candidates, ", ") + "): " + a.bgpWhy()}
		}
		a.reportBGP(ctx, d, announcers, o)
	}
}

// bgpConfiguredNodes are the nodes whose agents report their FRR holds the
// peering, from the NodeBGP's status (this node's from its own state).
func (a *Agent) bgpConfiguredNodes() map[string]bool {
	out := map[string]bool{}
	if b := a.bgp.spec(); b != nil {
		for _, n := range b.Status.Nodes {
			if n.Configured && n.ObservedGeneration == b.Generation {
				out[n.Name] = true
			}
		}
	}
	out[a.cfg.NodeName] = a.bgp.configured
	return out
}

func (a *Agent) bgpWhy() string {
	if a.bgp.dir == "" {
		return "the node agents run without BGP mode (chart value nodeAgent.bgp.enabled)"
	}
	if a.bgp.spec() == nil {
		return fmt.Sprintf("no NodeBGP object %s/%s configures the nodes' peering (the nodes set's bgp module writes it)", a.cfg.Namespace, vipapi.BGPName)
	}
	return "see the NodeBGP object's status"
}

// applyBGP configures this node's FRR to announce mine.
func (a *Agent) applyBGP(ctx context.Context, mine []netip.Addr, self *corev1.Node) {
	b := a.bgp.spec()
	var want frr.Node
	gen := int64(0)
	if b != nil {
		gen = b.Generation
		c, err := bgp.Config(b.Spec, nodeOf(self), func(ref vipapi.SecretKeyRef) (string, error) {
			return a.bgp.password(ctx, ref, time.Now())
		})
		if err != nil {
			a.bgpProblem(ctx, b, gen, "NodeBGP: "+err.Error())
			return
		}
		want.Config = c
		want.Announce = inPools(mine, c.Pools)
	}
	res, err := bgp.Apply(ctx, a.bgp.dir, want)
	if err != nil {
		a.bgp.configured = false
		a.dropSessions()
		if b == nil {
			return
		}
		var me *bgp.MissingError
		if errors.As(err, &me) {
			a.bgpProblem(ctx, b, gen, "node "+a.cfg.NodeName+": "+err.Error())
			return
		}
		a.bgpProblem(ctx, b, gen, "node "+a.cfg.NodeName+": configuring FRR: "+err.Error())
		return
	}
	if res.Added+res.Removed > 0 {
		klog.InfoS("BGP: node's FRR configured", "announced", res.Announced, "added", res.Added, "removed", res.Removed)
	}
	a.bgp.announced = map[string]bool{}
	for _, ad := range res.Announced {
		a.bgp.announced[ad.String()] = true
	}
	a.bgp.configured = b != nil && len(want.Peers) > 0
	if a.bgp.configured {
		a.readSessions(ctx, b)
	} else {
		a.dropSessions()
	}
	if b != nil {
		a.bgpProblem(ctx, b, gen, "")
	}
}

// inPools keeps the addresses inside a pool (a NodeVIP outside every pool
// cannot be announced: the CCM's IPAM gives pool addresses only).
func inPools(addrs []netip.Addr, pools []frr.Pool) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		for _, p := range pools {
			if slices.ContainsFunc(p.Prefixes, func(pr netip.Prefix) bool { return pr.Contains(a) }) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// bgpProblem records this node's state in the NodeBGP's status, and a
// Warning Event on it when a problem is new.
func (a *Agent) bgpProblem(ctx context.Context, b *vipapi.NodeBGP, gen int64, msg string) {
	if msg != "" && msg != a.bgp.problem {
		klog.ErrorS(nil, "BGP mode: this node cannot announce", "problem", msg)
		a.events.warnObject(&corev1.ObjectReference{APIVersion: vipapi.Group + "/" + vipapi.Version, Kind: vipapi.BGPKind,
			Namespace: b.Namespace, Name: b.Name, UID: b.UID}, "BGPNotConfigured", msg)
	}
	a.bgp.problem = msg
	if msg != "" {
		a.dropSessions()
	}
	want := vipapi.NodeBGPNode{Name: a.cfg.NodeName, Configured: msg == "" && a.bgp.configured, Message: msg, ObservedGeneration: gen}
	if want.Configured {
		want.Sessions = a.bgp.sessions.reported
	}
	for _, n := range b.Status.Nodes {
		if n.Equal(want) {
			return
		}
	}
	c := *b
	c.Status.Nodes = slices.DeleteFunc(slices.Clone(b.Status.Nodes), func(n vipapi.NodeBGPNode) bool { return n.Name == a.cfg.NodeName })
	c.Status.Nodes = append(c.Status.Nodes, want)
	sort.Slice(c.Status.Nodes, func(i, j int) bool { return c.Status.Nodes[i].Name < c.Status.Nodes[j].Name })
	u, err := vipapi.BGPToUnstructured(&c)
	if err != nil {
		return
	}
	if _, err := a.bgp.dyn.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		// A conflict (another node's entry): the next reconcile retries.
		klog.V(2).InfoS("NodeBGP status not written", "err", err)
	}
}

// reportBGP writes the status of the NodeVIPs of d.
func (a *Agent) reportBGP(ctx context.Context, d bgpDecision, announcers []string, o outcome) {
	for _, v := range d.VIPs {
		want := v.Status.DeepCopyStatus()
		want.ObservedGeneration = v.Generation
		want.Candidates = d.Candidates
		want.Announcers = announcers
		want.Holder, want.Interface, want.Contenders = "", "", nil
		want.Announcement = ""
		status := metav1.ConditionFalse
		if o.reason == vipapi.ReasonAnnounced {
			status = metav1.ConditionTrue
			want.Announcement = "BGP"
		}
		old := v.Status.Announced()
		apimeta.SetStatusCondition(&want.Conditions, metav1.Condition{
			Type: vipapi.ConditionAnnounced, Status: status, Reason: o.reason, Message: o.message, ObservedGeneration: v.Generation,
		})
		if sameStatus(v.Status, want) && slices.Equal(v.Status.Announcers, want.Announcers) {
			continue
		}
		if status == metav1.ConditionFalse && o.reason != vipapi.ReasonNoLocalEndpoint && (old == nil || old.Reason != o.reason || old.Message != o.message) {
			a.events.warn(v, o.reason, o.message)
		}
		c := *v
		c.Status = want
		u, err := vipapi.ToUnstructured(&c)
		if err != nil {
			continue
		}
		if _, err := a.dyn.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			klog.V(2).InfoS("NodeVIP status not written", "nodevip", v.Name, "err", err)
		}
	}
}

// withdrawBGP withdraws every announcement of this node, keeping the
// peering (a restarted agent does not reset the sessions).
func (a *Agent) withdrawBGP(self *corev1.Node) {
	if len(a.bgp.announced) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.applyBGP(ctx, nil, self)
	klog.InfoS("BGP: every announcement of this node withdrawn")
}

// nodeOf is what the speaker needs of the node: labels, its router ID
// from its InternalIPs (bgp.RouterID), and its interfaces' networks.
func nodeOf(n *corev1.Node) bgp.Node {
	out := bgp.Node{}
	if n != nil {
		out.Labels = n.Labels
		var internal []netip.Addr
		for _, ad := range n.Status.Addresses {
			if ad.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(ad.Address); err == nil {
				internal = append(internal, ip)
			}
		}
		out.RouterID = bgp.RouterID(internal)
	}
	ifaces, _ := net.Interfaces()
	for _, ifi := range ifaces {
		addrs, _ := ifi.Addrs()
		for _, ad := range addrs {
			if p, err := netip.ParsePrefix(ad.String()); err == nil && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
				out.Networks = append(out.Networks, p.Masked())
			}
		}
	}
	return out
}
