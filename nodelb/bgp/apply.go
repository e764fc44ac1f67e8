// Applying the wanted objects: the commands that turn what runs into
// what is wanted, and sending them.

package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/frrvty"
)

// Daemons are the FRR daemons BGP mode needs on a node.
// (staticd holds the routes bgpd's import check wants; Debian's frr
// always starts it).
var Daemons = []string{"bgpd", "bfdd", "staticd"}

// MissingError: the node's FRR (or one of its daemons) is not there: its
// socket is missing or refuses connections. Nothing was changed.
type MissingError struct {
	Path string
	Err  error
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("FRR is not running on this node (%s: %v): BGP mode needs Debian's frr with bgpd, bfdd and staticd (docs/bgp.md)", e.Path, e.Err)
}

func (e *MissingError) Unwrap() error { return e.Err }

// ASNError: the node's FRR already runs `router bgp` with another AS.
type ASNError struct{ Running, Want uint32 }

func (e *ASNError) Error() string {
	return fmt.Sprintf("the node's FRR runs router bgp %d, the cluster's BGP settings want AS %d: tfccm adds its peers to the node's own BGP instance and never changes its AS", e.Running, e.Want)
}

// Result says what Apply changed.
type Result struct {
	Removed, Added int
	// Announced are the addresses with a network statement now.
	Announced []netip.Addr
}

// Apply makes the tfccm objects of the node's FRR (sockets in dir) equal
// to want's; the admin's objects are left as they are. With want.Peers
// empty every tfccm object is removed (BGP mode off).
func Apply(ctx context.Context, dir string, want frr.Node) (Result, error) {
	var res Result
	if len(want.Peers) > 0 {
		// The configuration is checked before any daemon is asked.
		if err := want.Validate(); err != nil {
			return res, err
		}
	}
	conns := map[string]*frrvty.Conn{}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for _, d := range Daemons {
		c, err := frrvty.Dial(ctx, dir, d)
		if err != nil {
			return res, &MissingError{Path: dirOr(dir) + "/" + d + ".vty", Err: err}
		}
		conns[d] = c
		if _, err := c.Run("enable"); err != nil {
			return res, err
		}
	}
	// Read both daemons before changing anything.
	cur := map[string]running{}
	for _, d := range Daemons {
		text, err := conns[d].Run("show running-config")
		if err != nil {
			return res, masked(err)
		}
		r, err := owned(d, text)
		if err != nil {
			return res, err
		}
		cur[d] = r
	}
	bgpASN := cur["bgpd"].asn
	var blocks []frr.Block
	if len(want.Peers) > 0 {
		// How FRR shows a neighbour's IPv4 activation depends on the
		// instance's default (an instance tfccm starts has FRR's).
		want.NoDefaultIPv4 = bgpASN != 0 && cur["bgpd"].noDefaultIPv4
		var err error
		if blocks, err = want.Blocks(); err != nil {
			return res, err
		}
	}
	if len(blocks) > 0 && bgpASN != 0 && bgpASN != want.ASN {
		return res, &ASNError{Running: bgpASN, Want: want.ASN}
	}
	wantKeys := map[string]bool{}
	for _, b := range blocks {
		wantKeys[b.Key()] = true
	}
	var remove, add []frr.Block
	for _, d := range Daemons {
		for _, b := range cur[d].owned {
			if !wantKeys[b.Key()] {
				remove = append(remove, b)
			}
		}
	}
	have := map[string]bool{}
	for _, d := range Daemons {
		for _, b := range cur[d].owned {
			have[b.Key()] = true
		}
	}
	for _, b := range blocks {
		if !have[b.Key()] {
			add = append(add, b)
		}
	}
	// A neighbour that goes entirely goes with one command.
	wantPeers := map[string]bool{}
	for _, p := range want.Peers {
		if len(blocks) > 0 {
			wantPeers[p.Address.String()] = true
		}
	}
	remove = collapseGonePeers(remove, wantPeers)
	sort.SliceStable(remove, func(i, j int) bool { return rank(remove[i], true) < rank(remove[j], true) })
	sort.SliceStable(add, func(i, j int) bool { return rank(add[i], false) < rank(add[j], false) })
	if len(add) > 0 && bgpASN == 0 {
		// No BGP instance yet: tfccm starts one with the node's router ID.
		if err := conns["bgpd"].RunAll("configure", frr.BGPContext(want.ASN), "bgp router-id "+want.RouterID.String(), "end"); err != nil {
			return res, masked(err)
		}
	}
	for _, b := range remove {
		if err := send(conns[b.Daemon], b, true); err != nil {
			return res, err
		}
		res.Removed++
	}
	for _, b := range add {
		if err := send(conns[b.Daemon], b, false); err != nil {
			return res, err
		}
		res.Added++
	}
	if len(blocks) > 0 {
		res.Announced = append(res.Announced, want.Announce...)
	}
	return res, nil
}

func dirOr(dir string) string {
	if dir == "" {
		return frrvty.DefaultDir
	}
	return dir
}

// collapseGonePeers replaces the lines of a neighbour no longer wanted
// by one `no neighbor <address>`.
func collapseGonePeers(remove []frr.Block, want map[string]bool) []frr.Block {
	var out []frr.Block
	gone := map[string]bool{}
	for _, b := range remove {
		if addr := neighborOf(b.Text); b.Daemon == "bgpd" && addr != "" {
			if !want[addr] {
				if !gone[addr] {
					gone[addr] = true
					out = append(out, frr.Block{Daemon: "bgpd", Context: b.Context[:1], Text: "neighbor " + addr})
				}
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// rank orders changes so nothing refers to what is not there yet (or any
// more): profiles, prefix lists and route maps before the neighbours and
// networks that use them; in reverse when removing.
func rank(b frr.Block, removing bool) int {
	var r int
	text := strings.TrimPrefix(b.Text, "no ")
	switch {
	case b.Daemon == "bfdd":
		r = 0
	case b.Daemon == "staticd":
		r = 6
	case strings.HasPrefix(text, "ip prefix-list"), strings.HasPrefix(text, "ipv6 prefix-list"):
		r = 1
	case strings.HasPrefix(text, "route-map"):
		r = 2
	case strings.HasPrefix(text, "neighbor ") && strings.Contains(text, " remote-as "):
		r = 3
	case strings.HasPrefix(text, "neighbor ") && len(b.Context) == 1:
		r = 4
	case strings.HasPrefix(text, "neighbor "):
		r = 5
	default: // network
		r = 7
	}
	if removing {
		return -r
	}
	return r
}

// send applies one block: enters its context, writes (or negates) it.
func send(c *frrvty.Conn, b frr.Block, remove bool) error {
	cmds := []string{"configure"}
	cmds = append(cmds, b.Context...)
	switch {
	case remove && strings.HasPrefix(b.Text, "no "):
		// A negative line (`no neighbor X activate`) goes with its
		// positive form.
		cmds = append(cmds, strings.TrimPrefix(b.Text, "no "))
	case remove:
		cmds = append(cmds, "no "+b.Text)
	default:
		cmds = append(cmds, b.Text)
		cmds = append(cmds, b.Body...)
	}
	cmds = append(cmds, "end")
	if err := c.RunAll(cmds...); err != nil {
		return masked(err)
	}
	return nil
}

var rePassword = regexp.MustCompile(`(password )\S+`)

// masked is err without any password a command or its output carried.
func masked(err error) error {
	var ce *frrvty.CommandError
	if errors.As(err, &ce) {
		c := *ce
		c.Command = rePassword.ReplaceAllString(c.Command, "${1}<password>")
		c.Output = rePassword.ReplaceAllString(c.Output, "${1}<password>")
		return &c
	}
	return errors.New(rePassword.ReplaceAllString(err.Error(), "${1}<password>"))
}
