// Which LB host (or node) holds each VIP (tfccm.io/VIPHeld and
// tfccm_load_balancer_vip_holders), from the health modules' vip_holders.

package lbcontroller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
)

// vipHoldersGauge: one series per Service and IP family whose health
// module outputs vip_holders (baremetal, nodes), the number of LB hosts
// (nodes) holding the VIP in the last reading; dropped with the Service. Labels are the
// Service's, as the backends gauges', and the family: at most two series
// per load balancer, whatever the addresses. TfccmVIPSplitBrain (>= 2)
// and TfccmVIPLost (0) read it.
var vipHoldersGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Subsystem:      "tfccm_load_balancer",
	Name:           "vip_holders",
	Help:           "LB hosts or nodes holding each load balancer's VIP now (1 is right; 2 or more: split brain; 0: lost), by Service (service_namespace, service_name) and IP family (family); only for template sets whose health module outputs vip_holders (baremetal: LB hosts; nodes: the node holding it, or the contenders in a split brain; no series for a family vip_idle names).",
	StabilityLevel: metrics.ALPHA,
}, []string{"service_namespace", "service_name", "family"})

// vipAnnouncersGauge is vipHoldersGauge for the active-active kinds (BGP
// with ECMP), where any number of holders is right but none is not: the
// number of nodes announcing each VIP. TfccmVIPNotAnnounced (0) reads it.
var vipAnnouncersGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Subsystem:      "tfccm_load_balancer",
	Name:           "vip_announcers",
	Help:           "Nodes announcing each load balancer's VIP over BGP now (active-active: 1 or more is right; 0: no route to the VIP), by Service (service_namespace, service_name) and IP family (family); only for template sets whose health module says its holders are active-active (nodes' bgp variant; no series for a family vip_idle names).",
	StabilityLevel: metrics.ALPHA,
}, []string{"service_namespace", "service_name", "family"})

// ipFamilies are the families a VIP may have, in the order messages name them.
var ipFamilies = []string{"IPv4", "IPv6"}

// reportVIPHolders sets the Service's VIPHeld condition and holders gauges
// from a reading (nil: the set reads no holders; nothing is reported; nor
// while the Service is prepared only); idle are the families no holder is
// meant to hold, with the reason (vip_idle: no gauge series, so no
// TfccmVIPLost); kind is what holds the VIPs (vip_holder_kind: "node", ""
// LB hosts). A split brain is also a Warning Event VIPSplitBrain.
func (l *loadBalancers) reportVIPHolders(svc *corev1.Service, holders map[string][]string, idle map[string]string, kind string) {
	if holders == nil && idle == nil {
		return
	}
	if standby, err := l.takeover.standby(svc); standby || err != nil {
		return // prepared, not announced: no holder is right (takeover.go)
	}
	words := holderKinds[kind]
	for _, f := range ipFamilies {
		hs, ok := holders[f]
		gauge, other := vipHoldersGauge, vipAnnouncersGauge
		if words.activeActive {
			gauge, other = other, gauge
		}
		other.DeleteLabelValues(svc.Namespace, svc.Name, f)
		if ok {
			gauge.WithLabelValues(svc.Namespace, svc.Name, f).Set(float64(len(hs)))
		} else {
			gauge.DeleteLabelValues(svc.Namespace, svc.Name, f)
		}
	}
	c := vipHeldCondition(holders, idle, kind)
	if c.Reason == CondReasonSplitBrain && l.event != nil {
		// Repeats of the same message are recorded once (events.event).
		l.event(svc, corev1.EventTypeWarning, ReasonVIPSplitBrain, c.Message)
	}
	l.conds.set(svc, c)
}

// dropVIPHolders removes a Service's holders and announcers gauges.
func dropVIPHolders(namespace, name string) {
	for _, f := range ipFamilies {
		vipHoldersGauge.DeleteLabelValues(namespace, name, f)
		vipAnnouncersGauge.DeleteLabelValues(namespace, name, f)
	}
}

// The parts of VIPHeld's message VIPHolders reads back: per family
// "<family> VIP held by <hosts>", joined by "; ".
const heldBy = " VIP held by "

// holderWords are VIPHeld's words for a VIP no holder answers for, the
// suffix naming a split brain, and the words for a VIP no holder is meant
// to hold (vip_idle NoLocalEndpoint), by kind of holder (vip_holder_kind).
// activeActive: every holder serves at once (BGP with ECMP), so several
// are right and none is NoAnnouncer; such a kind has no split suffix and
// no holders gauge (TfccmVIPSplitBrain and TfccmVIPLost are about one
// holder per VIP).
type holderWords struct {
	none, split, idle string
	activeActive      bool
}

// announcedSuffix follows the nodes an active-active VIP is held by.
const announcedSuffix = " (announced over BGP, active-active)"

var holderKinds = map[string]holderWords{
	"":         {"no LB host that answers", " at once (VRRP split brain: the hosts do not hear each other)", "no LB host (no ready endpoint of the Service on any node, externalTrafficPolicy: Local)", false},
	"node":     {"no node that answers", " at once (split brain: their node agents do not hear each other)", "no node (no ready endpoint of the Service on any node, externalTrafficPolicy: Local)", false},
	"BGP node": {"no node that announces it over BGP", "", "no node (no ready endpoint of the Service on any node, externalTrafficPolicy: Local)", true},
}

// vipHeldCondition is VIPHeld for the holders of each family's VIP: True
// (HeldBy) when every VIP has exactly one holder; else False, SplitBrain
// when one has two or more, NoHolder when one has none, NoLocalEndpoint
// when the only VIPs without a holder are idle ones (no holder meant). An
// active-active kind (BGP) is True Announced when every VIP has one
// holder or more, False NoAnnouncer when one has none. The message names
// every family's holders.
func vipHeldCondition(holders map[string][]string, idle map[string]string, kind string) metav1.Condition {
	words, ok := holderKinds[kind]
	if !ok {
		words = holderKinds[""]
	}
	status, reason := true, CondReasonHeldBy
	var parts []string
	for _, f := range ipFamilies {
		hs, ok := holders[f]
		if _, isIdle := idle[f]; isIdle && !ok {
			parts = append(parts, fmt.Sprintf("%s VIP held by %s", f, words.idle))
			if reason == CondReasonHeldBy || reason == CondReasonAnnounced {
				status, reason = false, CondReasonNoLocalEndpoint
			}
			continue
		}
		if !ok {
			continue
		}
		switch {
		case words.activeActive && len(hs) == 0:
			parts = append(parts, fmt.Sprintf("%s VIP held by %s", f, words.none))
			status, reason = false, CondReasonNoAnnouncer
		case words.activeActive:
			parts = append(parts, fmt.Sprintf("%s VIP held by %s%s", f, joinHosts(hs), announcedSuffix))
			if reason == CondReasonHeldBy {
				reason = CondReasonAnnounced
			}
		case len(hs) == 0:
			parts = append(parts, fmt.Sprintf("%s VIP held by %s", f, words.none))
			if reason != CondReasonSplitBrain {
				status, reason = false, CondReasonNoHolder
			}
		case len(hs) > 1:
			parts = append(parts, fmt.Sprintf("%s VIP held by %s%s", f, joinHosts(hs), words.split))
			status, reason = false, CondReasonSplitBrain
		default:
			parts = append(parts, fmt.Sprintf("%s VIP held by %s", f, hs[0]))
		}
	}
	if len(parts) == 0 {
		return condition(ConditionVIPHeld, false, CondReasonNoHolder, "the load balancer has no VIP")
	}
	return condition(ConditionVIPHeld, status, reason, strings.Join(parts, "; "))
}

// joinHosts is "a and b", "a, b and c".
func joinHosts(hs []string) string {
	hs = slices.Clone(hs)
	slices.Sort(hs)
	if len(hs) == 1 {
		return hs[0]
	}
	return strings.Join(hs[:len(hs)-1], ", ") + " and " + hs[len(hs)-1]
}

// VIPHolders is the holders of each VIP as the Service's VIPHeld
// condition names them, for `tfccm services`' HOLDER column: "lb-a" (one
// family), "IPv4 lb-a, IPv6 lb-b" (two), "lb-a+lb-b SPLIT" (a split
// brain), "a+b BGP" (announced by both, active-active), "NONE" (a lost
// VIP); "" without the condition.
func VIPHolders(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, ConditionVIPHeld)
	if c == nil {
		return ""
	}
	var out []string
	parts := strings.Split(c.Message, "; ")
	for _, p := range parts {
		f, hosts, ok := strings.Cut(p, heldBy)
		if !ok {
			continue
		}
		for _, w := range holderKinds {
			switch {
			case hosts == w.none:
				hosts = "NONE"
			case hosts == w.idle:
				hosts = "IDLE"
			case strings.HasSuffix(hosts, announcedSuffix):
				hosts = strings.ReplaceAll(strings.ReplaceAll(strings.TrimSuffix(hosts, announcedSuffix), " and ", "+"), ", ", "+") + " BGP"
			case w.split != "" && strings.HasSuffix(hosts, w.split):
				hosts = strings.ReplaceAll(strings.ReplaceAll(strings.TrimSuffix(hosts, w.split), " and ", "+"), ", ", "+") + " SPLIT"
			}
		}
		if len(parts) > 1 {
			hosts = f + " " + hosts
		}
		out = append(out, hosts)
	}
	return strings.Join(out, ", ")
}
