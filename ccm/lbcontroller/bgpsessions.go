// The LB hosts' BGP sessions (tfccm.io/BGPEstablished, a Warning Event and
// tfccm_bgp_session_up), from the health modules' bgp_sessions.

package lbcontroller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"

	"github.com/tfccm/tfccm/templates"
)

// bgpSessionUpGauge: one series per LB host and peer (by the peer's name
// in the admin's settings.bgp, never its address), 1 while the session
// is Established. Every Service of the bgp variant reads the same
// sessions; the last reading wins. TfccmBGPSessionDown reads it.
var bgpSessionUpGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Subsystem:      "tfccm",
	Name:           "bgp_session_up",
	Help:           "1 while the BGP session of LB host (host) with peer (peer, its name in settings.bgp) is Established, else 0; only for template sets whose health module outputs bgp_sessions (baremetal's bgp variant).",
	StabilityLevel: metrics.ALPHA,
}, []string{"host", "peer"})

// reportBGPSessions sets the Service's BGPEstablished condition (and a
// Warning Event when a session is down) and the session gauges from a
// reading (nil: the set reads no sessions; nothing is reported).
func (l *loadBalancers) reportBGPSessions(svc *corev1.Service, sessions map[string][]templates.BGPSession) {
	if sessions == nil {
		return
	}
	for h, ss := range sessions {
		for _, s := range ss {
			up := 0.0
			if s.State == "Established" {
				up = 1
			}
			bgpSessionUpGauge.WithLabelValues(h, s.Peer).Set(up)
		}
	}
	c := bgpEstablishedCondition(sessions)
	if c.Status == metav1.ConditionFalse && l.event != nil {
		// Repeats of the same message are recorded once (events.event).
		l.event(svc, corev1.EventTypeWarning, ReasonBGPSessionDown, c.Message)
	}
	l.conds.set(svc, c)
}

// bgpEstablishedCondition is BGPEstablished: True when every session of
// every host that answers is Established, else False naming each host's
// sessions that are not and their state (by host and peer name only: a
// tenant learns no address).
func bgpEstablishedCondition(sessions map[string][]templates.BGPSession) metav1.Condition {
	hosts := make([]string, 0, len(sessions))
	for h := range sessions {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	var down []string
	n := 0
	for _, h := range hosts {
		for _, s := range sessions[h] {
			n++
			if s.State != "Established" {
				down = append(down, fmt.Sprintf("%s: BGP session with peer %s is %s", h, s.Peer, s.State))
			}
		}
	}
	switch {
	case n == 0:
		return condition(ConditionBGPEstablished, false, CondReasonNoSession, "no LB host that answers has a BGP session: the VIPs are announced to no router")
	case len(down) > 0:
		return condition(ConditionBGPEstablished, false, CondReasonSessionDown, strings.Join(down, "; "))
	}
	return condition(ConditionBGPEstablished, true, CondReasonEstablished, fmt.Sprintf("every BGP session of %s is Established", joinHosts(hosts)))
}
