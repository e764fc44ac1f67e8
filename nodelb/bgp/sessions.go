// Reading the node's BGP sessions with tfccm's peers from bgpd.

package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/frrvty"
)

// Established is BGP's state of a session that is up.
const Established = "Established"

// Session is one of the node's sessions with a peer tfccm configured.
type Session struct {
	// Peer is the peer's name in the NodeBGP (its description without
	// the tfccm- prefix); Address its address.
	Peer    string
	Address netip.Addr
	// State is BGP's state: Established, or Idle, Connect, Active,
	// OpenSent, OpenConfirm.
	State string
	// Since is when the session reached its state, as far as bgpd tells
	// (for a session never up: zero).
	Since time.Time
}

// Sessions reads the sessions of the node's FRR (sockets in dir) with the
// peers tfccm configured (description tfccm-*), sorted by peer and
// address; the admin's own neighbours are left out.
func Sessions(ctx context.Context, dir string) ([]Session, error) {
	out, err := neighborsJSON(ctx, dir)
	if err != nil {
		return nil, err
	}
	return parseSessions(out, time.Now())
}

// neighborsJSON is bgpd's `show bgp neighbors json`.
func neighborsJSON(ctx context.Context, dir string) ([]byte, error) {
	c, err := frrvty.Dial(ctx, dir, "bgpd")
	if err != nil {
		return nil, &MissingError{Path: dirOr(dir) + "/bgpd.vty", Err: err}
	}
	defer func() { _ = c.Close() }()
	out, err := c.Run("show bgp neighbors json")
	if err != nil {
		return nil, fmt.Errorf("reading the BGP sessions: %w", err)
	}
	return []byte(out), nil
}

// neighbor is the part of bgpd's `show bgp neighbors json` entry read.
type neighbor struct {
	Desc  string `json:"nbrDesc"`
	State string `json:"bgpState"`
	// UpMsec: how long an Established session has been up.
	UpMsec *int64 `json:"bgpTimerUpMsec"`
	// LastResetMsec: how long ago a session that was up went down.
	LastResetMsec *int64 `json:"lastResetTimerMsecs"`
}

// parseSessions reads `show bgp neighbors json` as of now.
func parseSessions(out []byte, now time.Time) ([]Session, error) {
	if strings.TrimSpace(string(out)) == "" {
		return nil, nil
	}
	var peers map[string]json.RawMessage
	if err := json.Unmarshal(out, &peers); err != nil {
		return nil, fmt.Errorf("parse bgpd's BGP neighbors: %w", err)
	}
	var s []Session
	for addr, raw := range peers {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			continue // not a neighbour (a peer group, say)
		}
		var n neighbor
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("parse bgpd's BGP neighbor %s: %w", addr, err)
		}
		name, ok := strings.CutPrefix(n.Desc, frr.RouterPrefix)
		if !ok || name == "" {
			continue // the admin's own neighbour
		}
		ses := Session{Peer: name, Address: a, State: n.State}
		switch {
		case n.State == Established && n.UpMsec != nil:
			ses.Since = now.Add(-time.Duration(*n.UpMsec) * time.Millisecond).Truncate(time.Second)
		case n.State != Established && n.LastResetMsec != nil:
			ses.Since = now.Add(-time.Duration(*n.LastResetMsec) * time.Millisecond).Truncate(time.Second)
		}
		s = append(s, ses)
	}
	slices.SortFunc(s, func(a, b Session) int {
		if c := strings.Compare(a.Peer, b.Peer); c != 0 {
			return c
		}
		return a.Address.Compare(b.Address)
	})
	return s, nil
}
