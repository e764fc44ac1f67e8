package agent

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/nodelb/bgp"
)

// TestSessionReport: readings over time give the status entry's sessions
// (a since kept while the state is unchanged) and the Warnings due (after
// sessionGrace, once per state).
func TestSessionReport(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	ses := func(peer, state string, since time.Time) bgp.Session {
		return bgp.Session{Peer: peer, Address: netip.MustParseAddr("192.0.2.1"), State: state, Since: since}
	}
	type step struct {
		at       time.Duration
		read     []bgp.Session
		want     string // peer state since(hh:mm:ss), "; "-joined
		warnings string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "up, jittering since kept", steps: []step{
			{at: 0, read: []bgp.Session{ses("tor", "Established", t0.Add(-time.Hour))}, want: "tor Established 07:00:00"},
			{at: 5 * time.Second, read: []bgp.Session{ses("tor", "Established", t0.Add(-time.Hour+time.Second))}, want: "tor Established 07:00:00"},
		}},
		{name: "new peering connects within the grace", steps: []step{
			{at: 0, read: []bgp.Session{ses("tor", "Active", time.Time{})}, want: "tor Active -"},
			{at: 30 * time.Second, read: []bgp.Session{ses("tor", "Connect", time.Time{})}, want: "tor Connect -"},
			{at: 40 * time.Second, read: []bgp.Session{ses("tor", "Established", t0.Add(40*time.Second))}, want: "tor Established 08:00:40"},
			{at: 5 * time.Minute, read: []bgp.Session{ses("tor", "Established", t0.Add(40*time.Second))}, want: "tor Established 08:00:40"},
		}},
		{name: "down past the grace: one warning per state", steps: []step{
			{at: 0, read: []bgp.Session{ses("tor", "Established", t0.Add(-time.Hour)), ses("tor2", "Established", t0.Add(-time.Hour))}, want: "tor Established 07:00:00; tor2 Established 07:00:00"},
			{at: 10 * time.Second, read: []bgp.Session{ses("tor", "Idle", t0.Add(9*time.Second)), ses("tor2", "Established", t0.Add(-time.Hour))}, want: "tor Idle 08:00:09; tor2 Established 07:00:00"},
			{at: 69 * time.Second, read: []bgp.Session{ses("tor", "Idle", t0.Add(9*time.Second))}, want: "tor Idle 08:00:09",
				warnings: "node n1: BGP session with peer tor is Idle (not Established since 2026-12-03T08:00:09Z)"},
			{at: 80 * time.Second, read: []bgp.Session{ses("tor", "Idle", t0.Add(9*time.Second))}, want: "tor Idle 08:00:09"},
			{at: 90 * time.Second, read: []bgp.Session{ses("tor", "Active", t0.Add(9*time.Second))}, want: "tor Active 08:00:09",
				warnings: "node n1: BGP session with peer tor is Active (not Established since 2026-12-03T08:00:09Z)"},
			{at: 100 * time.Second, read: []bgp.Session{ses("tor", "Established", t0.Add(100*time.Second))}, want: "tor Established 08:01:40"},
			{at: 110 * time.Second, read: []bgp.Session{ses("tor", "Idle", t0.Add(110*time.Second))}, want: "tor Idle 08:01:50"},
		}},
		{name: "down long before the agent started: warned at once", steps: []step{
			{at: 0, read: []bgp.Session{ses("tor", "Active", t0.Add(-time.Hour))}, want: "tor Active 07:00:00",
				warnings: "node n1: BGP session with peer tor is Active (not Established since 2026-12-03T07:00:00Z)"},
		}},
		{name: "no session", steps: []step{{at: 0, want: ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w sessionWatch
			for i, st := range tc.steps {
				out, warn := w.report("n1", st.read, t0.Add(st.at))
				var got []string
				for _, s := range out {
					since := "-"
					if s.Since != nil {
						since = s.Since.UTC().Format("15:04:05")
					}
					got = append(got, s.Peer+" "+s.State+" "+since)
				}
				if g := strings.Join(got, "; "); g != st.want {
					t.Errorf("step %d: sessions %q, want %q", i, g, st.want)
				}
				if g := strings.Join(warn, "; "); g != st.warnings {
					t.Errorf("step %d: warnings %q, want %q", i, g, st.warnings)
				}
			}
		})
	}
}
