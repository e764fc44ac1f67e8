package config

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// The chart's typed `baremetal.bgp` values: the bgp variant's peering
// (load_balancer.settings.bgp), its routers with their SSH login as LB
// hosts have theirs (shared checks and conversion with BaremetalHost),
// and the password only as a file of a mounted Secret.

// BaremetalBGP is the chart's baremetal.bgp value.
type BaremetalBGP struct {
	ASN     int                  `json:"asn" setting:"asn" doc:"The LB hosts' AS (1-4294967294 but 23456 and 65535). Required with bgp."`
	Peers   []BaremetalBGPPeer   `json:"peers,omitempty" setting:"peers" doc:"Routers tfccm does not configure (their side: the peering module's router_neighbors, or an override template; docs/bgp.md)."`
	Routers []BaremetalBGPRouter `json:"routers,omitempty" setting:"routers" doc:"Linux routers running FRR that tfccm configures too (lbhost_bgp_router over SSH with the LB hosts' key): each a peer of the hosts, the hosts its tfccm-* neighbours."`
	BFD     *BaremetalBFD        `json:"bfdProfile,omitempty" setting:"bfd_profiles" doc:"BFD on every session: one profile named bfd (none: no BFD)."`
	// PasswordSecret is the Secret the chart mounts at /etc/tfccm/bgp;
	// PasswordFile is where (the chart writes it).
	PasswordSecret string `json:"passwordSecret,omitempty" setting:"settings.bgp.*.password_file" doc:"A Secret in the release namespace whose key password is every session's password (the hosts' copy), mounted at /etc/tfccm/bgp (the CCM and the runner pods); never a value itself."`
	PasswordFile   string `json:"passwordFile,omitempty" setting:"password_file" doc:"Written by the chart: /etc/tfccm/bgp/password with passwordSecret."`
}

// BaremetalBGPPeer is one of baremetal.bgp.peers.
type BaremetalBGPPeer struct {
	Name          string   `json:"name" setting:"name" doc:"The peer's name (1-32 of a-z, 0-9 and '-'). Required."`
	Address       string   `json:"address" setting:"address" doc:"The peer's IPv4 or IPv6 address, on a network of the hosts. Required."`
	ASN           int      `json:"asn" setting:"asn" doc:"The peer's AS. Required."`
	KeepaliveTime int      `json:"keepaliveTime,omitempty" setting:"keepalive_time" doc:"Seconds (FRR's 60)."`
	HoldTime      int      `json:"holdTime,omitempty" setting:"hold_time" doc:"Seconds (FRR's 180; at least 3 x keepaliveTime)."`
	Hosts         []string `json:"hosts,omitempty" setting:"hosts" doc:"The LB hosts that peer with it (names in hosts); none: every host."`
}

// BaremetalBGPRouter is one of baremetal.bgp.routers: its SSH fields are
// an LB host's (checked and converted the same way).
type BaremetalBGPRouter struct {
	Name               string   `json:"name" setting:"name" doc:"The router's name (1-20 of a-z, 0-9 and '-'): the hosts' peer NAME, and NAME-6 on address6. Required."`
	Address            string   `json:"address" setting:"address" doc:"IPv4: SSH and the hosts' IPv4 peer. Required."`
	Address6           string   `json:"address6,omitempty" setting:"address6" doc:"IPv6 in canonical form: the hosts' IPv6 peer."`
	Port               int      `json:"port,omitempty" setting:"ssh_port" doc:"The SSH port (default 22)."`
	HostKey            string   `json:"hostKey" setting:"host_key" doc:"The router's public key, one line of authorized_keys format: always verified. Required."`
	User               string   `json:"user,omitempty" setting:"user" doc:"The SSH login (default baremetal.user, else root)."`
	ASN                int      `json:"asn" setting:"asn" doc:"The router's AS: its FRR must have router bgp ASN already; not the hosts' AS. Required."`
	RouterPasswordFile string   `json:"routerPasswordFile,omitempty" setting:"router_password_file" doc:"The router's own copy of the password: a file on the router (required with passwordSecret)."`
	KeepaliveTime      int      `json:"keepaliveTime,omitempty" setting:"keepalive_time" doc:"Seconds (FRR's 60)."`
	HoldTime           int      `json:"holdTime,omitempty" setting:"hold_time" doc:"Seconds (FRR's 180)."`
	MaximumPaths       int      `json:"maximumPaths,omitempty" setting:"maximum_paths" doc:"ECMP paths on the router (default one per LB host)."`
	Hosts              []string `json:"hosts,omitempty" setting:"hosts" doc:"The LB hosts in its rack; none: every host."`
	Retired            bool     `json:"retired,omitempty" setting:"retired" doc:"true: tfccm removes its objects from the router; drop it after the next apply."`
}

// BaremetalBFD is baremetal.bgp.bfdProfile.
type BaremetalBFD struct {
	ReceiveIntervalMS  int `json:"receiveIntervalMs,omitempty" setting:"receive_interval_ms" doc:"Milliseconds (10-60000; FRR's 300)."`
	TransmitIntervalMS int `json:"transmitIntervalMs,omitempty" setting:"transmit_interval_ms" doc:"Milliseconds (10-60000; FRR's 300)."`
	DetectMultiplier   int `json:"detectMultiplier,omitempty" setting:"detect_multiplier" doc:"Missed packets before a peer is down (2-255; FRR's 3)."`
}

// bfdName is the one BFD profile's name in settings.bgp.
const bfdName = "bfd"

var bgpNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

func checkASN(asn int) bool { return asn >= 1 && asn <= 4294967294 && asn != 23456 && asn != 65535 }

// check reports every bad value of the bgp value, each naming its key.
func (b *BaremetalBGP) check(hosts []BaremetalHost) []string {
	var errs []string
	bad := func(key, format string, a ...any) {
		errs = append(errs, "baremetal.bgp."+key+": "+fmt.Sprintf(format, a...))
	}
	if !checkASN(b.ASN) {
		bad("asn", "must be an AS number from 1 to 4294967294 but 23456 and 65535")
	}
	if len(b.Peers)+len(b.Routers) == 0 {
		bad("peers", "name at least one peer or router")
	}
	names := map[string]bool{}
	hostNames := map[string]bool{}
	for _, h := range hosts {
		hostNames[h.Name] = true
	}
	checkHosts := func(key string, hs []string) {
		for j, h := range hs {
			if !hostNames[h] {
				bad(fmt.Sprintf("%s.hosts[%d]", key, j), "%q is not one of baremetal.hosts", h)
			}
		}
	}
	for i, p := range b.Peers {
		key := fmt.Sprintf("peers[%d]", i)
		if !bgpNameRE.MatchString(p.Name) || names[p.Name] {
			bad(key+".name", "must be 1-32 lowercase letters, digits or '-', and differ from every other peer's and router's")
		}
		names[p.Name] = true
		if a, err := netip.ParseAddr(p.Address); err != nil || a.Zone() != "" {
			bad(key+".address", "must be an IPv4 or IPv6 address")
		}
		if !checkASN(p.ASN) {
			bad(key+".asn", "must be an AS number from 1 to 4294967294 but 23456 and 65535")
		}
		checkHosts(key, p.Hosts)
	}
	seen := map[string]bool{}
	for i, r := range b.Routers {
		key := fmt.Sprintf("routers[%d]", i)
		for _, e := range sshTarget(r.Name, r.Address, r.Address6, r.HostKey, r.Port).check("bgp."+key, seen) {
			errs = append(errs, e)
		}
		for _, n := range []string{r.Name, r.Name + "-6"} {
			if names[n] {
				bad(key+".name", "%s is also a peer's name", n)
			}
			names[n] = true
		}
		if r.User != "" && !loginRE.MatchString(r.User) {
			bad(key+".user", "not a login name (1-32 of a-z, 0-9, '_' and '-', starting with a letter or '_')")
		}
		if !checkASN(r.ASN) {
			bad(key+".asn", "must be an AS number from 1 to 4294967294 but 23456 and 65535")
		} else if r.ASN == b.ASN {
			bad(key+".asn", "AS %d is baremetal.bgp.asn, the LB hosts' own: a router must be in another AS (the hosts are its eBGP neighbours)", r.ASN)
		}
		if (b.PasswordSecret != "") != (r.RouterPasswordFile != "") {
			bad(key+".routerPasswordFile", "set it (a file on the router holding its copy of the password) exactly when passwordSecret is set: a password on one side only keeps the session down")
		} else if r.RouterPasswordFile != "" && !strings.HasPrefix(r.RouterPasswordFile, "/") {
			bad(key+".routerPasswordFile", "must be an absolute path on the router")
		}
		if r.MaximumPaths < 0 || r.MaximumPaths > 64 {
			bad(key+".maximumPaths", "must be from 1 to 64")
		}
		checkHosts(key, r.Hosts)
	}
	// A host's address on each peer's link: of that peer's family.
	family := map[string]bool{} // peer name: IPv6
	for _, p := range b.Peers {
		a, err := netip.ParseAddr(p.Address)
		family[p.Name] = err == nil && a.Is6()
	}
	for _, r := range b.Routers {
		family[r.Name] = false
		if r.Address6 != "" {
			family[r.Name+"-6"] = true
		}
	}
	for i, h := range hosts {
		for _, peer := range slices.Sorted(maps.Keys(h.PeerAddresses)) {
			key := fmt.Sprintf("hosts[%d].peerAddresses.%s", i, peer)
			v6, ok := family[peer]
			if !ok {
				errs = append(errs, "baremetal."+key+": not the name of a peer or router (a router's NAME, or NAME-6 for one with address6)")
				continue
			}
			if a, err := netip.ParseAddr(h.PeerAddresses[peer]); err != nil || a.Zone() != "" || a.Is4In6() || a.Is6() != v6 || a.String() != h.PeerAddresses[peer] {
				want := "an IPv4 address"
				if v6 {
					want = "an IPv6 address in canonical form"
				}
				errs = append(errs, "baremetal."+key+": must be "+want+" (the peer's family): the host's end of its link with that peer")
			}
		}
	}
	if b.PasswordSecret != "" && !strings.HasPrefix(b.PasswordFile, "/") {
		bad("passwordFile", "must be an absolute path (the chart sets it from passwordSecret)")
	}
	return errs
}

// sshTarget is the SSH part of a router as a BaremetalHost, so a router's
// name, addresses, port and host key are checked and converted as an LB
// host's.
func sshTarget(name, address, address6, hostKey string, port int) BaremetalHost {
	return BaremetalHost{Name: name, Address: address, Address6: address6, HostKey: hostKey, Port: port}
}

// settings is load_balancer.settings.bgp for b.
func (b *BaremetalBGP) settings(user string) cty.Value {
	optNum := func(attrs map[string]cty.Value, k string, v int) {
		if v != 0 {
			attrs[k] = cty.NumberIntVal(int64(v))
		}
	}
	hostList := func(hs []string) cty.Value {
		if len(hs) == 0 {
			return cty.NullVal(cty.List(cty.String))
		}
		var l []cty.Value
		for _, h := range hs {
			l = append(l, cty.StringVal(h))
		}
		return cty.ListVal(l)
	}
	session := func(attrs map[string]cty.Value, keepalive, hold int) {
		optNum(attrs, "keepalive_time", keepalive)
		optNum(attrs, "hold_time", hold)
		if b.BFD != nil {
			attrs["bfd_profile"] = cty.StringVal(bfdName)
		}
		if b.PasswordFile != "" && b.PasswordSecret != "" {
			attrs["password_file"] = cty.StringVal(b.PasswordFile)
		}
	}
	var peers, routers []cty.Value
	for _, p := range b.Peers {
		attrs := map[string]cty.Value{"name": cty.StringVal(p.Name), "address": cty.StringVal(p.Address), "asn": cty.NumberIntVal(int64(p.ASN)), "hosts": hostList(p.Hosts)}
		session(attrs, p.KeepaliveTime, p.HoldTime)
		peers = append(peers, cty.ObjectVal(attrs))
	}
	for _, r := range b.Routers {
		attrs := sshAttrs(sshTarget(r.Name, r.Address, r.Address6, r.HostKey, r.Port), cmpOr(r.User, user))
		attrs["name"], attrs["asn"], attrs["hosts"] = cty.StringVal(r.Name), cty.NumberIntVal(int64(r.ASN)), hostList(r.Hosts)
		session(attrs, r.KeepaliveTime, r.HoldTime)
		optNum(attrs, "maximum_paths", r.MaximumPaths)
		if r.RouterPasswordFile != "" {
			attrs["router_password_file"] = cty.StringVal(r.RouterPasswordFile)
		}
		if r.Retired {
			attrs["retired"] = cty.True
		}
		routers = append(routers, cty.ObjectVal(attrs))
	}
	s := map[string]cty.Value{"asn": cty.NumberIntVal(int64(b.ASN))}
	if len(peers) > 0 {
		s["peers"] = cty.TupleVal(peers)
	}
	if len(routers) > 0 {
		s["routers"] = cty.TupleVal(routers)
	}
	if f := b.BFD; f != nil {
		attrs := map[string]cty.Value{"name": cty.StringVal(bfdName)}
		optNum(attrs, "receive_interval_ms", f.ReceiveIntervalMS)
		optNum(attrs, "transmit_interval_ms", f.TransmitIntervalMS)
		optNum(attrs, "detect_multiplier", f.DetectMultiplier)
		s["bfd_profiles"] = cty.TupleVal([]cty.Value{cty.ObjectVal(attrs)})
	}
	return cty.ObjectVal(s)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
