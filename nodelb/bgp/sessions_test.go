package bgp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/frrtest"
	"github.com/tfccm/tfccm/internal/testkit"
)

// TestSessionsRealBGPD reads the sessions of a real node FRR with the
// admin's own neighbour (left out) and tfccm's two peers: both reach
// Established, and when the ToR's bgpd dies they leave it. With -update
// it saves bgpd's answer as testdata for TestParseSessions.
func TestSessionsRealBGPD(t *testing.T) {
	frrtest.Skip(t)
	p := startPair(t, adminConfig)
	ctx := context.Background()
	if _, err := Apply(ctx, p.node.RunDir, wantNode("198.51.100.10")); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func([]Session) bool) []Session {
		t.Helper()
		var last []Session
		err := testkit.Poll(ctx, 200*time.Millisecond, 90*time.Second, what, func(context.Context) error {
			s, err := Sessions(ctx, p.node.RunDir)
			if err != nil {
				return err
			}
			last = s
			if !ok(s) {
				return fmt.Errorf("sessions %+v", s)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	up := wait("both sessions Established", func(s []Session) bool {
		return len(s) == 2 && s[0].State == Established && s[1].State == Established
	})
	if up[0].Peer != "tor" || up[1].Peer != "tor6" || up[0].Address.String() != "10.77.0.1" {
		t.Fatalf("sessions %+v: want tor (10.77.0.1) and tor6, not the admin's upstream", up)
	}
	if up[0].Since.IsZero() || time.Since(up[0].Since) > 2*time.Minute || time.Since(up[0].Since) < -time.Second {
		t.Errorf("Established since %v: want within the test", up[0].Since)
	}
	saveNeighbors(t, p, "neighbors-up.json")
	p.tor.Kill("bgpd")
	down := wait("sessions down after the ToR's bgpd died", func(s []Session) bool {
		return len(s) == 2 && s[0].State != Established && s[1].State != Established
	})
	if down[0].Since.IsZero() {
		t.Errorf("a session that was up went down at no time: %+v", down[0])
	}
	saveNeighbors(t, p, "neighbors-down.json")
}

// saveNeighbors writes bgpd's answer to testdata/name with -update.
func saveNeighbors(t *testing.T, p pair, name string) {
	t.Helper()
	if f := flag.Lookup("update"); f == nil || f.Value.String() != "true" {
		return
	}
	out, err := neighborsJSON(context.Background(), p.node.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSessionsWithoutFRR(t *testing.T) {
	_, err := Sessions(context.Background(), t.TempDir())
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("err %v: want a MissingError", err)
	}
}

// TestParseSessions reads bgpd's answers saved by TestSessionsRealBGPD
// (-update): only tfccm's peers, their state, and since when.
func TestParseSessions(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		since   bool // show Since (the samples' depend on when they were saved)
		want    string
		wantErr bool
	}{
		{name: "established", in: read("neighbors-up.json"), want: "tor 10.77.0.1 Established; tor6 fd77::1 Established"},
		{name: "down", in: read("neighbors-down.json"), want: "tor 10.77.0.1 Idle; tor6 fd77::1 Idle"},
		{name: "empty", in: nil, want: ""},
		{name: "no neighbour", in: []byte("{}"), want: ""},
		{name: "peer group and admin's", in: []byte(`{"pg":{"nbrDesc":"tfccm-x"},"192.0.2.1":{"nbrDesc":"upstream","bgpState":"Active"}}`), want: ""},
		{name: "down since", in: []byte(`{"192.0.2.9":{"nbrDesc":"tfccm-r","bgpState":"Active","lastResetTimerMsecs":90500}}`), since: true, want: "r 192.0.2.9 Active since 07:58:29"},
		{name: "up since", in: []byte(`{"192.0.2.9":{"nbrDesc":"tfccm-r","bgpState":"Established","bgpTimerUpMsec":3600000}}`), since: true, want: "r 192.0.2.9 Established since 07:00:00"},
		{name: "never up", in: []byte(`{"192.0.2.9":{"nbrDesc":"tfccm-r","bgpState":"Connect"}}`), since: true, want: "r 192.0.2.9 Connect"},
		{name: "not JSON", in: []byte("% Unknown command"), wantErr: true},
		{name: "bad entry", in: []byte(`{"192.0.2.9":{"bgpState":7}}`), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSessions(tc.in, now)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			var got []string
			for _, x := range s {
				g := x.Peer + " " + x.Address.String() + " " + x.State
				if tc.since && !x.Since.IsZero() {
					g += " since " + x.Since.Format("15:04:05")
				}
				got = append(got, g)
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("got %q\nwant %q", g, tc.want)
			}
		})
	}
}
