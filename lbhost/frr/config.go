// The typed configuration of one BGP speaker and its checks.

package frr

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Config is one host's BGP speaker.
type Config struct {
	// ASN is the host's autonomous system number.
	ASN uint32
	// RouterID is the host's BGP identifier (an IPv4 address, usually
	// its own).
	RouterID netip.Addr
	Peers    []Peer
	// BFDProfiles are named BFD timer sets a peer may use.
	BFDProfiles []BFDProfile
	// Pools are the address pools whose host routes are announced.
	Pools []Pool
	// Networks are the networks of the host's interfaces: every peer
	// must be on one (single-hop eBGP and BFD). Empty: not checked.
	Networks []netip.Prefix
}

// Peer is one BGP neighbour, typically a top-of-rack router.
type Peer struct {
	// Name describes the peer (its description in FRR and the metric's
	// label): 1-32 of [a-z0-9-].
	Name    string
	Address netip.Addr
	ASN     uint32
	// Port is the peer's BGP port (0: 179).
	Port uint16
	// Keepalive and Hold are the BGP timers (0: FRR's 60 s and 180 s);
	// Hold must be 0 or at least 3 s and 3 × Keepalive.
	Keepalive, Hold time.Duration
	// Password is the TCP MD5 password (empty: none). It appears in the
	// rendered file only, never in an error.
	Password string
	// BFDProfile names one of Config.BFDProfiles ("": no BFD).
	BFDProfile string
	// IBGP says the peer shares the host's ASN on purpose; an equal ASN
	// without it is refused as a clash.
	IBGP bool
}

// BFDProfile is a set of BFD timers.
type BFDProfile struct {
	Name string
	// ReceiveInterval and TransmitInterval: 10 ms to 60 s (0: 300 ms).
	ReceiveInterval, TransmitInterval time.Duration
	// DetectMultiplier: 2-255 (0: 3); a peer is down after this many
	// missed packets.
	DetectMultiplier int
}

// Pool is an address pool whose addresses the host announces.
type Pool struct {
	Name     string
	Prefixes []netip.Prefix
	// Communities are standard ("65000:100"), well-known ("no-export",
	// "no-advertise", "local-AS", "blackhole", "graceful-shutdown") or
	// large ("65000:1:2") communities set on the pool's announcements.
	Communities []string
	// LocalPref is the local preference (iBGP peers); nil: unset.
	LocalPref *uint32
}

// Error names the setting that is wrong.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

var (
	reName      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	reStandard  = regexp.MustCompile(`^([0-9]{1,5}):([0-9]{1,5})$`)
	reLarge     = regexp.MustCompile(`^([0-9]{1,10}):([0-9]{1,10}):([0-9]{1,10})$`)
	wellKnown   = map[string]bool{"no-export": true, "no-advertise": true, "local-AS": true, "blackhole": true, "graceful-shutdown": true}
	reservedASN = map[uint32]string{0: "reserved (RFC 7607)", 23456: "AS_TRANS (RFC 6793)", 65535: "reserved (RFC 7300)", 4294967295: "reserved (RFC 7300)"}
)

// CheckASN refuses an AS number no speaker may use.
func CheckASN(asn uint32) error {
	if why, ok := reservedASN[asn]; ok {
		return fmt.Errorf("AS %d is %s: want 1-4294967294 but 23456 and 65535", asn, why)
	}
	return nil
}

// CheckCommunity refuses a community FRR would not take.
func CheckCommunity(c string) error {
	if wellKnown[c] {
		return nil
	}
	if m := reStandard.FindStringSubmatch(c); m != nil {
		for _, p := range m[1:] {
			if n, _ := strconv.Atoi(p); n > 65535 {
				return fmt.Errorf("community %q: each half of <asn>:<value> must be 0-65535", c)
			}
		}
		return nil
	}
	if m := reLarge.FindStringSubmatch(c); m != nil {
		for _, p := range m[1:] {
			if _, err := strconv.ParseUint(p, 10, 32); err != nil {
				return fmt.Errorf("large community %q: each part of <asn>:<a>:<b> must be 0-4294967295", c)
			}
		}
		return nil
	}
	return fmt.Errorf("community %q: want <asn>:<value> (0-65535 each), <asn>:<a>:<b> (a large community) or one of no-export, no-advertise, local-AS, blackhole, graceful-shutdown", c)
}

func isLarge(c string) bool { return reLarge.MatchString(c) }

// Validate checks every field, naming the first wrong one.
func (c Config) Validate() error {
	if err := CheckASN(c.ASN); err != nil {
		return &Error{Field: "asn", Msg: err.Error()}
	}
	if !c.RouterID.Is4() {
		return &Error{Field: "router_id", Msg: fmt.Sprintf("%q is not an IPv4 address", c.RouterID)}
	}
	profiles, err := validateProfiles(c.BFDProfiles)
	if err != nil {
		return err
	}
	if err := c.validatePeers("peers", c.Peers, profiles); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, p := range c.Pools {
		if err := p.validate(); err != nil {
			return &Error{Field: fmt.Sprintf("pools[%d].%s", i, err.Field), Msg: err.Msg}
		}
		if names[p.Name] {
			return &Error{Field: fmt.Sprintf("pools[%d].name", i), Msg: fmt.Sprintf("%q is given twice", p.Name)}
		}
		names[p.Name] = true
	}
	return nil
}

// validateProfiles checks BFD profiles and returns their names.
func validateProfiles(ps []BFDProfile) (map[string]bool, error) {
	profiles := map[string]bool{}
	for i, p := range ps {
		if err := p.validate(); err != nil {
			return nil, &Error{Field: fmt.Sprintf("bfd_profiles[%d].%s", i, err.Field), Msg: err.Msg}
		}
		if profiles[p.Name] {
			return nil, &Error{Field: fmt.Sprintf("bfd_profiles[%d].name", i), Msg: fmt.Sprintf("%q is given twice", p.Name)}
		}
		profiles[p.Name] = true
	}
	return profiles, nil
}

// validatePeers checks the peers (or a router's neighbours: field names
// the list) of a speaker of AS c.ASN on c.Networks.
func (c Config) validatePeers(field string, peers []Peer, profiles map[string]bool) error {
	seen := map[netip.Addr]bool{}
	for i, p := range peers {
		if err := c.validatePeer(p, profiles); err != nil {
			return &Error{Field: fmt.Sprintf("%s[%d].%s", field, i, err.Field), Msg: err.Msg}
		}
		if seen[p.Address] {
			return &Error{Field: fmt.Sprintf("%s[%d].address", field, i), Msg: fmt.Sprintf("%s is given twice", p.Address)}
		}
		seen[p.Address] = true
	}
	return nil
}

func (c Config) validatePeer(p Peer, profiles map[string]bool) *Error {
	switch {
	case !reName.MatchString(p.Name):
		return &Error{Field: "name", Msg: fmt.Sprintf("%q: want 1-32 of a-z, 0-9 and '-'", p.Name)}
	case !p.Address.IsValid() || p.Address.Zone() != "" || p.Address.IsUnspecified() || p.Address.IsMulticast():
		return &Error{Field: "address", Msg: fmt.Sprintf("%q is not a unicast IPv4 or IPv6 address", p.Address)}
	case !c.onNetwork(p.Address):
		return &Error{Field: "address", Msg: fmt.Sprintf("%s is outside every network of the host's interfaces (%s): a peer must be directly connected (peer %s)", p.Address, joinPrefixes(c.Networks), p.Name)}
	}
	if err := CheckASN(p.ASN); err != nil {
		return &Error{Field: "asn", Msg: err.Error()}
	}
	if p.ASN == c.ASN && !p.IBGP {
		return &Error{Field: "asn", Msg: fmt.Sprintf("AS %d is the host's own asn: an eBGP peer needs another AS (set ibgp = true if the peer is an iBGP route reflector on purpose)", p.ASN)}
	}
	if p.ASN != c.ASN && p.IBGP {
		return &Error{Field: "ibgp", Msg: fmt.Sprintf("true, but AS %d is not the host's asn %d", p.ASN, c.ASN)}
	}
	if err := checkTimers(p.Keepalive, p.Hold); err != nil {
		return err
	}
	if p.Password != "" && !validPassword(p.Password) {
		// Never the password itself.
		return &Error{Field: "password", Msg: "want 1-80 printable ASCII characters without spaces"}
	}
	if p.BFDProfile != "" && !profiles[p.BFDProfile] {
		return &Error{Field: "bfd_profile", Msg: fmt.Sprintf("%q is not one of bfd_profiles", p.BFDProfile)}
	}
	return nil
}

func checkTimers(keepalive, hold time.Duration) *Error {
	if keepalive == 0 && hold == 0 {
		return nil
	}
	k, h := keepalive.Seconds(), hold.Seconds()
	switch {
	case keepalive%time.Second != 0 || hold%time.Second != 0:
		return &Error{Field: "hold_time", Msg: "BGP timers are whole seconds"}
	case keepalive < time.Second || k > 65535:
		return &Error{Field: "keepalive_time", Msg: fmt.Sprintf("%gs: want 1-65535 s (with hold_time)", k)}
	case hold < 3*time.Second || h > 65535 || hold < 3*keepalive:
		return &Error{Field: "hold_time", Msg: fmt.Sprintf("%gs: want 3-65535 s and at least 3 × keepalive_time (%gs)", h, k)}
	}
	return nil
}

func validPassword(s string) bool {
	if len(s) > 80 {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return true
}

func (c Config) onNetwork(a netip.Addr) bool {
	if len(c.Networks) == 0 {
		return true
	}
	for _, n := range c.Networks {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

func (p BFDProfile) validate() *Error {
	if !reName.MatchString(p.Name) {
		return &Error{Field: "name", Msg: fmt.Sprintf("%q: want 1-32 of a-z, 0-9 and '-'", p.Name)}
	}
	for _, t := range []struct {
		field string
		d     time.Duration
	}{{"receive_interval", p.ReceiveInterval}, {"transmit_interval", p.TransmitInterval}} {
		if t.d != 0 && (t.d < 10*time.Millisecond || t.d > time.Minute || t.d%time.Millisecond != 0) {
			return &Error{Field: t.field, Msg: fmt.Sprintf("%s: want 10ms-60s in whole milliseconds", t.d)}
		}
	}
	if p.DetectMultiplier != 0 && (p.DetectMultiplier < 2 || p.DetectMultiplier > 255) {
		return &Error{Field: "detect_multiplier", Msg: fmt.Sprintf("%d: want 2-255", p.DetectMultiplier)}
	}
	return nil
}

func (p Pool) validate() *Error {
	if !reName.MatchString(p.Name) {
		return &Error{Field: "name", Msg: fmt.Sprintf("%q: want 1-32 of a-z, 0-9 and '-'", p.Name)}
	}
	if len(p.Prefixes) == 0 {
		return &Error{Field: "prefixes", Msg: "want at least one CIDR"}
	}
	for i, pr := range p.Prefixes {
		if !pr.IsValid() || pr.Masked() != pr {
			return &Error{Field: fmt.Sprintf("prefixes[%d]", i), Msg: fmt.Sprintf("%q is not a network address/length", pr)}
		}
	}
	for i, c := range p.Communities {
		if err := CheckCommunity(c); err != nil {
			return &Error{Field: fmt.Sprintf("communities[%d]", i), Msg: err.Error()}
		}
	}
	return nil
}
