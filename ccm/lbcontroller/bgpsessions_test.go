package lbcontroller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tfccm/tfccm/workspace"
)

// TestHealthRoundBGPSessions: the bgp_sessions output becomes
// BGPEstablished (True when every session is up; False SessionDown naming
// each host's session that is not, by peer name, and its state, with a
// Warning Event; False NoSession without any) and one gauge per host and
// peer; a malformed output keeps the last reading.
func TestHealthRoundBGPSessions(t *testing.T) {
	registerHealth()
	l, events := newPhaseTest(&fakeLBEngine{}, fakeRenderer{})
	svc := phaseService()
	name := fakeRenderer{}.WorkspaceName(svc)
	l.services[name] = &lbEntry{svc: svc, nodes: []string{"a"}}
	backends := `[{"node":"a","healthy":true}]`
	for _, tc := range []struct {
		name, sessions string
		status         metav1.ConditionStatus
		reason         string
		message        string
		gauges         map[[2]string]float64
		warning        bool
	}{
		{"all established", `{"lb-a":[{"peer":"tor","state":"Established"}],"lb-b":[{"peer":"tor","state":"Established"}]}`,
			metav1.ConditionTrue, CondReasonEstablished, "every BGP session of lb-a and lb-b is Established",
			map[[2]string]float64{{"lb-a", "tor"}: 1, {"lb-b", "tor"}: 1}, false},
		{"one down", `{"lb-a":[{"peer":"tor6","state":"Established"},{"peer":"tor","state":"Active"}],"lb-b":[{"peer":"tor","state":"Established"}]}`,
			metav1.ConditionFalse, CondReasonSessionDown, "lb-a: BGP session with peer tor is Active",
			map[[2]string]float64{{"lb-a", "tor"}: 0, {"lb-a", "tor6"}: 1, {"lb-b", "tor"}: 1}, true},
		{"malformed output keeps the last reading", `["lb-a"]`,
			metav1.ConditionFalse, CondReasonSessionDown, "lb-a: BGP session with peer tor is Active",
			map[[2]string]float64{{"lb-a", "tor"}: 0}, false},
		{"no session", `{"lb-a":[]}`,
			metav1.ConditionFalse, CondReasonNoSession, "no LB host that answers has a BGP session: the VIPs are announced to no router",
			nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(*events)
			l.healthRound(context.Background(), &fakeProber{phase: workspace.PhaseApplied, outputs: backends, bgp: tc.sessions}, 1)
			c, ok := l.conds.get(svc.UID, ConditionBGPEstablished)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("BGPEstablished %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			for hp, want := range tc.gauges {
				if got, ok := sessionSeries(hp[0], hp[1]); !ok || got != want {
					t.Errorf("tfccm_bgp_session_up{host=%s,peer=%s} = %v (present %t), want %v", hp[0], hp[1], got, ok, want)
				}
			}
			warned := false
			for _, e := range (*events)[before:] {
				if e.reason == ReasonBGPSessionDown && e.eventType == "Warning" && e.message == tc.message {
					warned = true
				}
			}
			if warned != tc.warning {
				t.Errorf("Warning %s recorded: %t, want %t (%v)", ReasonBGPSessionDown, warned, tc.warning, (*events)[before:])
			}
		})
	}
}

// sessionSeries is tfccm_bgp_session_up{host, peer} as /metrics serves it.
func sessionSeries(host, peer string) (float64, bool) {
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != "tfccm_bgp_session_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if got["host"] == host && got["peer"] == peer {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
