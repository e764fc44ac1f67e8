// BGP mode: the node's sessions with tfccm's peers, as its agent reports
// them (the NodeBGP's status, a Warning Event, tfccm_node_bgp_session_up).

package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/bgp"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// sessionGrace is how long a session may be other than Established before
// it is a Warning Event: a new peering connecting, a router restarting.
// TfccmNodeBGPSessionDown waits as long.
const sessionGrace = time.Minute

const sessionUpMetric = "tfccm_node_bgp_session_up"

// sessionUpGauge: one series per node and peer (its name in the NodeBGP,
// never its address), 1 while the session is Established.
var sessionUpGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: sessionUpMetric,
	Help: "1 while the BGP session of node (node) with peer (peer, its name in the NodeBGP) is Established, else 0; node mode over BGP only.",
}, []string{"node", "peer"})

func init() { prometheus.MustRegister(sessionUpGauge) }

// sessionWatch is what the agent remembers of its sessions between
// readings.
type sessionWatch struct {
	// reported is the last report (the NodeBGP status entry's sessions).
	reported []vipapi.NodeBGPSession
	// downSince: when each peer's session was first seen other than
	// Established (or bgpd's time, when earlier).
	downSince map[string]time.Time
	// warned: the state a Warning Event was recorded for, per peer.
	warned map[string]string
}

// sessionReport turns a reading into the status entry's sessions and the
// Warning messages due now: a session keeps its since while its state is
// unchanged (bgpd tells durations, not times, so a reading's since
// jitters), and one not Established for sessionGrace is a warning, once
// per state.
func (w *sessionWatch) report(node string, read []bgp.Session, now time.Time) (out []vipapi.NodeBGPSession, warnings []string) {
	if w.downSince == nil {
		w.downSince, w.warned = map[string]time.Time{}, map[string]string{}
	}
	prev := map[string]vipapi.NodeBGPSession{}
	for _, s := range w.reported {
		prev[s.Peer] = s
	}
	seen := map[string]bool{}
	for _, s := range read {
		seen[s.Peer] = true
		r := vipapi.NodeBGPSession{Peer: s.Peer, State: s.State}
		if !s.Since.IsZero() {
			r.Since = &metav1.Time{Time: s.Since}
		}
		if p, ok := prev[s.Peer]; ok && p.State == s.State && (p.Since != nil || r.Since == nil) {
			r.Since = p.Since
		}
		out = append(out, r)
		if s.State == bgp.Established {
			delete(w.downSince, s.Peer)
			delete(w.warned, s.Peer)
			continue
		}
		since, ok := w.downSince[s.Peer]
		if !ok {
			since = now
		}
		if !s.Since.IsZero() && s.Since.Before(since) {
			since = s.Since
		}
		w.downSince[s.Peer] = since
		if now.Sub(since) >= sessionGrace && w.warned[s.Peer] != s.State {
			w.warned[s.Peer] = s.State
			warnings = append(warnings, fmt.Sprintf("node %s: BGP session with peer %s is %s (not Established since %s)",
				node, s.Peer, s.State, since.UTC().Format(time.RFC3339)))
		}
	}
	for p := range w.downSince {
		if !seen[p] {
			delete(w.downSince, p)
			delete(w.warned, p)
		}
	}
	w.reported = out
	return out, warnings
}

// readSessions reads the node's sessions after its FRR was configured:
// the gauges, the Warnings on b; the status entry takes w.reported. A
// failed reading keeps the last report.
func (a *Agent) readSessions(ctx context.Context, b *vipapi.NodeBGP) {
	read, err := bgp.Sessions(ctx, a.bgp.dir)
	if err != nil {
		klog.V(2).InfoS("BGP sessions not read", "err", err)
		return
	}
	old := a.bgp.sessions.reported
	_, warnings := a.bgp.sessions.report(a.cfg.NodeName, read, time.Now())
	a.setSessionGauges(old)
	for _, m := range warnings {
		klog.InfoS("BGP session down", "message", m)
		a.events.warnObject(&corev1.ObjectReference{APIVersion: vipapi.Group + "/" + vipapi.Version, Kind: vipapi.BGPKind,
			Namespace: b.Namespace, Name: b.Name, UID: b.UID}, "BGPSessionDown", m)
	}
}

// dropSessions forgets the sessions (BGP mode off, FRR not configured).
func (a *Agent) dropSessions() {
	old := a.bgp.sessions.reported
	a.bgp.sessions = sessionWatch{}
	a.setSessionGauges(old)
}

// setSessionGauges makes this node's series those of the last report,
// dropping the peers of the one before (old) that are gone.
func (a *Agent) setSessionGauges(old []vipapi.NodeBGPSession) {
	for _, o := range old {
		if !slices.ContainsFunc(a.bgp.sessions.reported, func(s vipapi.NodeBGPSession) bool { return s.Peer == o.Peer }) {
			sessionUpGauge.DeleteLabelValues(a.cfg.NodeName, o.Peer)
		}
	}
	for _, s := range a.bgp.sessions.reported {
		up := 0.0
		if s.State == bgp.Established {
			up = 1
		}
		sessionUpGauge.WithLabelValues(a.cfg.NodeName, s.Peer).Set(up)
	}
}
