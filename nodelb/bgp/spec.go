// From a NodeBGP spec to one node's typed FRR configuration.

package bgp

import (
	"fmt"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// Node is what one node needs to know to configure its speaker.
type Node struct {
	// Labels select the peers with a node selector.
	Labels map[string]string
	// RouterID is the node's IPv4 address (its BGP identifier).
	RouterID netip.Addr
	// Networks are the networks of the node's interfaces: a peer must be
	// on one (nil: not checked, as at plan time before nodes exist).
	Networks []netip.Prefix
}

// RouterID is a node's BGP identifier from its InternalIPs (in the
// Node's order): its first IPv4 address; an IPv6-only node's is the low
// 32 bits of its first IPv6 address (fd00:10::a → 0.0.0.10: unique among
// nodes of one /96, which a BGP identifier needs only within the AS);
// invalid when there is none (or it would be 0.0.0.0).
func RouterID(internal []netip.Addr) netip.Addr {
	for _, a := range internal {
		if a.Is4() || a.Is4In6() {
			return a.Unmap()
		}
	}
	for _, a := range internal {
		if a.Is6() {
			b := a.As16()
			if id := netip.AddrFrom4([4]byte(b[12:])); id != netip.IPv4Unspecified() {
				return id
			}
		}
	}
	return netip.Addr{}
}

// Config is the node's FRR configuration from spec: the peers whose node
// selector matches n, with their passwords from password (a Secret's
// key; never in an error). A wrong field is an *frr.Error naming it.
func Config(spec vipapi.NodeBGPSpec, n Node, password func(vipapi.SecretKeyRef) (string, error)) (frr.Config, error) {
	c := frr.Config{RouterID: n.RouterID, Networks: n.Networks}
	if spec.ASN < 1 || spec.ASN > 4294967294 {
		return c, &frr.Error{Field: "asn", Msg: fmt.Sprintf("%d: want 1-4294967294", spec.ASN)}
	}
	c.ASN = uint32(spec.ASN)
	for _, p := range spec.BFDProfiles {
		c.BFDProfiles = append(c.BFDProfiles, frr.BFDProfile{Name: p.Name,
			ReceiveInterval:  time.Duration(p.ReceiveInterval) * time.Millisecond,
			TransmitInterval: time.Duration(p.TransmitInterval) * time.Millisecond,
			DetectMultiplier: int(p.DetectMultiplier)})
	}
	for i, p := range spec.Peers {
		field := func(f string) string { return fmt.Sprintf("peers[%d].%s", i, f) }
		if len(p.NodeSelector) > 0 && !labels.SelectorFromSet(p.NodeSelector).Matches(labels.Set(n.Labels)) {
			continue
		}
		addr, err := netip.ParseAddr(p.Address)
		if err != nil {
			return c, &frr.Error{Field: field("address"), Msg: fmt.Sprintf("%q is not an IP address", p.Address)}
		}
		if p.ASN < 1 || p.ASN > 4294967294 {
			return c, &frr.Error{Field: field("asn"), Msg: fmt.Sprintf("%d: want 1-4294967294", p.ASN)}
		}
		if p.Port < 0 || p.Port > 65535 {
			return c, &frr.Error{Field: field("port"), Msg: fmt.Sprintf("%d: want 1-65535", p.Port)}
		}
		peer := frr.Peer{Name: p.Name, Address: addr, ASN: uint32(p.ASN), Port: uint16(p.Port),
			Keepalive: time.Duration(p.KeepaliveTime) * time.Second, Hold: time.Duration(p.HoldTime) * time.Second,
			BFDProfile: p.BFDProfile, IBGP: p.IBGP}
		if p.PasswordSecret != nil && password != nil {
			pw, err := password(*p.PasswordSecret)
			if err != nil {
				return c, &frr.Error{Field: field("password_secret"), Msg: fmt.Sprintf("Secret %s, key %s: %v", p.PasswordSecret.Name, p.PasswordSecret.Key, err)}
			}
			peer.Password = pw
		}
		c.Peers = append(c.Peers, peer)
	}
	for i, p := range spec.Pools {
		pool := frr.Pool{Name: p.Name, Communities: p.Communities}
		for j, s := range p.Prefixes {
			pr, err := netip.ParsePrefix(s)
			if err != nil {
				return c, &frr.Error{Field: fmt.Sprintf("pools[%d].prefixes[%d]", i, j), Msg: fmt.Sprintf("%q is not a CIDR", s)}
			}
			pool.Prefixes = append(pool.Prefixes, pr)
		}
		if p.LocalPref != nil {
			if *p.LocalPref < 0 || *p.LocalPref > 4294967295 {
				return c, &frr.Error{Field: fmt.Sprintf("pools[%d].local_pref", i), Msg: fmt.Sprintf("%d: want 0-4294967295", *p.LocalPref)}
			}
			lp := uint32(*p.LocalPref)
			pool.LocalPref = &lp
		}
		c.Pools = append(c.Pools, pool)
	}
	v := c
	if !v.RouterID.IsValid() {
		// At plan time there is no node: any IPv4 router ID checks the rest.
		v.RouterID = netip.MustParseAddr("192.0.2.1")
	}
	return c, v.Validate()
}
