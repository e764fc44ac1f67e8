package lbcontroller

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tfccm/tfccm/workspace"
)

// TestHealthRoundVIPHolders: the vip_holders output becomes VIPHeld (True
// HeldBy naming the holder of each family's VIP; False SplitBrain with two
// holders, NoHolder with none, split brain winning) and the holders
// gauge per family, in words of nodes when vip_holder_kind says "node"; a
// malformed output keeps the last reading; a family
// no longer served loses its series; a family vip_idle names (node mode,
// Local without a ready endpoint) is NoLocalEndpoint with no series (no
// TfccmVIPLost), unless another family is lost or split; a split brain is
// a Warning Event VIPSplitBrain naming the holders; a deleted Service
// loses them all. Over BGP (vip_holder_kind "BGP node") every announcing
// node holds the VIP: True Announced naming them, False NoAnnouncer
// with none, no holders series but an announcers series per family
// (TfccmVIPNotAnnounced reads its 0).
func TestHealthRoundVIPHolders(t *testing.T) {
	registerHealth()
	l, events := newPhaseTest(&fakeLBEngine{}, fakeRenderer{})
	svc := phaseService()
	name := fakeRenderer{}.WorkspaceName(svc)
	l.services[name] = &lbEntry{svc: svc, nodes: []string{"a"}}
	backends := `[{"node":"a","healthy":true}]`
	// The announcers series by case (the BGP cases; none for the others).
	announcers := map[string]map[string]float64{
		"node mode over BGP: announced by several nodes, no split brain": {"IPv4": 2, "IPv6": 1},
		"node mode over BGP: no announcer":                               {"IPv4": 0, "IPv6": 3},
		"node mode over BGP: Local without a ready endpoint":             {"IPv6": 1},
		"node mode over BGP: announced by one":                           {"IPv4": 1},
	}
	for _, tc := range []struct {
		name, holders string
		kind          string
		idle          string
		status        metav1.ConditionStatus
		reason        string
		message       string
		gauges        map[string]float64
		column        string
	}{
		{"one holder per family", `{"IPv4":["lb-a"],"IPv6":["lb-b"]}`, "", "", metav1.ConditionTrue, CondReasonHeldBy,
			"IPv4 VIP held by lb-a; IPv6 VIP held by lb-b", map[string]float64{"IPv4": 1, "IPv6": 1}, "IPv4 lb-a, IPv6 lb-b"},
		{"split brain", `{"IPv4":["lb-b","lb-a"],"IPv6":["lb-b"]}`, "", "", metav1.ConditionFalse, CondReasonSplitBrain,
			"IPv4 VIP held by lb-a and lb-b at once (VRRP split brain: the hosts do not hear each other); IPv6 VIP held by lb-b",
			map[string]float64{"IPv4": 2, "IPv6": 1}, "IPv4 lb-a+lb-b SPLIT, IPv6 lb-b"},
		{"malformed output keeps the last reading", `["lb-a"]`, "", "", metav1.ConditionFalse, CondReasonSplitBrain,
			"IPv4 VIP held by lb-a and lb-b at once (VRRP split brain: the hosts do not hear each other); IPv6 VIP held by lb-b",
			map[string]float64{"IPv4": 2, "IPv6": 1}, "IPv4 lb-a+lb-b SPLIT, IPv6 lb-b"},
		{"lost, split brain wins", `{"IPv4":[],"IPv6":["lb-a","lb-b","lb-c"]}`, "", "", metav1.ConditionFalse, CondReasonSplitBrain,
			"IPv4 VIP held by no LB host that answers; IPv6 VIP held by lb-a, lb-b and lb-c at once (VRRP split brain: the hosts do not hear each other)",
			map[string]float64{"IPv4": 0, "IPv6": 3}, "IPv4 NONE, IPv6 lb-a+lb-b+lb-c SPLIT"},
		{"lost, IPv6 no longer served", `{"IPv4":[]}`, "", "", metav1.ConditionFalse, CondReasonNoHolder,
			"IPv4 VIP held by no LB host that answers", map[string]float64{"IPv4": 0}, "NONE"},
		{"held again", `{"IPv4":["lb-b"]}`, "", "", metav1.ConditionTrue, CondReasonHeldBy,
			"IPv4 VIP held by lb-b", map[string]float64{"IPv4": 1}, "lb-b"},
		{"node mode: held by a node", `{"IPv4":["node-a"]}`, `"node"`, "", metav1.ConditionTrue, CondReasonHeldBy,
			"IPv4 VIP held by node-a", map[string]float64{"IPv4": 1}, "node-a"},
		{"node mode: lost, in words of nodes", `{"IPv4":[]}`, `"node"`, "", metav1.ConditionFalse, CondReasonNoHolder,
			"IPv4 VIP held by no node that answers", map[string]float64{"IPv4": 0}, "NONE"},
		{"node mode: split brain, in words of nodes", `{"IPv4":["node-b","node-a"]}`, `"node"`, "", metav1.ConditionFalse, CondReasonSplitBrain,
			"IPv4 VIP held by node-a and node-b at once (split brain: their node agents do not hear each other)", map[string]float64{"IPv4": 2}, "node-a+node-b SPLIT"},
		{"an unknown kind keeps the last reading", `{"IPv4":["x"]}`, `"router"`, "", metav1.ConditionFalse, CondReasonSplitBrain,
			"IPv4 VIP held by node-a and node-b at once (split brain: their node agents do not hear each other)", map[string]float64{"IPv4": 2}, "node-a+node-b SPLIT"},
		{"node mode: Local without a ready endpoint, no holder meant", `{}`, `"node"`, `{"IPv4":"NoLocalEndpoint"}`, metav1.ConditionFalse, CondReasonNoLocalEndpoint,
			"IPv4 VIP held by no node (no ready endpoint of the Service on any node, externalTrafficPolicy: Local)", map[string]float64{}, "IDLE"},
		{"node mode: one family idle, the other lost: NoHolder", `{"IPv6":[]}`, `"node"`, `{"IPv4":"NoLocalEndpoint"}`, metav1.ConditionFalse, CondReasonNoHolder,
			"IPv4 VIP held by no node (no ready endpoint of the Service on any node, externalTrafficPolicy: Local); IPv6 VIP held by no node that answers",
			map[string]float64{"IPv6": 0}, "IPv4 IDLE, IPv6 NONE"},
		{"node mode: an endpoint ready again, held", `{"IPv4":["node-b"]}`, `"node"`, "", metav1.ConditionTrue, CondReasonHeldBy,
			"IPv4 VIP held by node-b", map[string]float64{"IPv4": 1}, "node-b"},
		{"node mode over BGP: announced by several nodes, no split brain", `{"IPv4":["node-b","node-a"],"IPv6":["node-c"]}`, `"BGP node"`, "", metav1.ConditionTrue, CondReasonAnnounced,
			"IPv4 VIP held by node-a and node-b (announced over BGP, active-active); IPv6 VIP held by node-c (announced over BGP, active-active)",
			map[string]float64{}, "IPv4 node-a+node-b BGP, IPv6 node-c BGP"},
		{"node mode over BGP: no announcer", `{"IPv4":[],"IPv6":["node-a","node-b","node-c"]}`, `"BGP node"`, "", metav1.ConditionFalse, CondReasonNoAnnouncer,
			"IPv4 VIP held by no node that announces it over BGP; IPv6 VIP held by node-a, node-b and node-c (announced over BGP, active-active)",
			map[string]float64{}, "IPv4 NONE, IPv6 node-a+node-b+node-c BGP"},
		{"node mode over BGP: Local without a ready endpoint", `{"IPv6":["node-a"]}`, `"BGP node"`, `{"IPv4":"NoLocalEndpoint"}`, metav1.ConditionFalse, CondReasonNoLocalEndpoint,
			"IPv4 VIP held by no node (no ready endpoint of the Service on any node, externalTrafficPolicy: Local); IPv6 VIP held by node-a (announced over BGP, active-active)",
			map[string]float64{}, "IPv4 IDLE, IPv6 node-a BGP"},
		{"node mode over BGP: announced by one", `{"IPv4":["node-a"]}`, `"BGP node"`, "", metav1.ConditionTrue, CondReasonAnnounced,
			"IPv4 VIP held by node-a (announced over BGP, active-active)", map[string]float64{}, "node-a BGP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(*events)
			l.healthRound(context.Background(), &fakeProber{phase: workspace.PhaseApplied, outputs: backends, holders: tc.holders, kind: tc.kind, idle: tc.idle}, 1)
			c, ok := l.conds.get(svc.UID, ConditionVIPHeld)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("VIPHeld %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			warned := false
			for _, e := range (*events)[before:] {
				if e.reason == ReasonVIPSplitBrain && e.eventType == "Warning" && e.message == tc.message {
					warned = true
				}
			}
			if fresh := tc.reason == CondReasonSplitBrain && !strings.HasPrefix(tc.name, "malformed") && !strings.HasPrefix(tc.name, "an unknown"); warned != fresh {
				t.Errorf("Warning %s recorded: %t, want %t (%v)", ReasonVIPSplitBrain, warned, fresh, (*events)[before:])
			}
			if got := VIPHolders([]metav1.Condition{c}); got != tc.column {
				t.Errorf("HOLDER column %q, want %q", got, tc.column)
			}
			for _, f := range ipFamilies {
				want, served := tc.gauges[f]
				if got, ok := seriesValue("tfccm_load_balancer_vip_holders", svc.Namespace, svc.Name, f); ok != served || got != want {
					t.Errorf("vip_holders{family=%s} = %v (present %t), want %v (present %t)", f, got, ok, want, served)
				}
				want, served = announcers[tc.name][f]
				if got, ok := seriesValue("tfccm_load_balancer_vip_announcers", svc.Namespace, svc.Name, f); ok != served || got != want {
					t.Errorf("vip_announcers{family=%s} = %v (present %t), want %v (present %t)", f, got, ok, want, served)
				}
			}
		})
	}
	if got := VIPHolders(nil); got != "" {
		t.Errorf("HOLDER column without the condition: %q", got)
	}
	delete(l.services, name)
	l.healthRound(context.Background(), &fakeProber{phase: workspace.PhaseApplied, outputs: backends}, 1)
	for _, m := range []string{"tfccm_load_balancer_vip_holders", "tfccm_load_balancer_vip_announcers"} {
		for _, f := range ipFamilies {
			if _, ok := seriesValue(m, svc.Namespace, svc.Name, f); ok {
				t.Errorf("the deleted Service keeps its %s{family=%s} series", m, f)
			}
		}
	}
}

// seriesValue is a Service's series of gauge metric as /metrics serves
// it, and whether it exists.
func seriesValue(metric, namespace, name, family string) (float64, bool) {
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, false
	}
	want := map[string]string{"service_namespace": namespace, "service_name": name, "family": family}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := 0
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] == lp.GetValue() {
					match++
				}
			}
			if match == len(want) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
