package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// The load_balancer.address_pool blocks: their declarations, address
// ranges and selectors, and their checks (package ipam allocates from them).

// AddressPool is one named pool of load balancer addresses tfccm allocates
// from (package ipam), as MetalLB's IPAddressPool.
type AddressPool struct {
	Name                  string       `hcl:"name,label" doc:"The pool's name, as picked by annotation tfccm.io/address-pool: 1-63 lowercase letters, digits and '-'."`
	Addresses             []string     `hcl:"addresses" doc:"IPv4 and IPv6 CIDRs (10.252.0.0/26, 2001:db8::/120) or ranges (10.252.0.10-10.252.0.20). Pools may not overlap. With the local and baremetal sets they must lie inside settings.vip_pool (IPv6 ones inside settings.vip_pool6)."`
	AutoAssign            *bool        `hcl:"auto_assign,optional" doc:"Whether Services that name no pool get addresses from it (default true). A pool with auto_assign = false gives addresses only to Services that name it or request one of its addresses."`
	AvoidBuggyIPs         bool         `hcl:"avoid_buggy_ips,optional" doc:"Never allocates IPv4 addresses ending in .0 or .255."`
	Priority              int          `hcl:"priority,optional" doc:"Among the pools whose selectors match a Service, the lower number is tried first; 0 (unset) comes after every set priority."`
	Namespaces            []string     `hcl:"namespaces,optional" doc:"Only Services in these namespaces get addresses from this pool automatically (MetalLB's serviceAllocation.namespaces)."`
	NamespaceSelectors    []string     `hcl:"namespace_selectors,optional" doc:"Label selectors (kubectl syntax, e.g. \"team=web\" or \"env in (prod,staging)\"): only Services in a namespace matching one of them get addresses from this pool automatically."`
	ServiceSelectors      []string     `hcl:"service_selectors,optional" doc:"Label selectors: only Services whose labels match one of them get addresses from this pool automatically."`
	ShareAcrossNamespaces bool         `hcl:"share_across_namespaces,optional" doc:"Admin side of the trust boundary: lets Services of different namespaces share one of this pool's addresses by the same tfccm.io/allow-shared-ip key (default false: a key shares an address only among the Services of one namespace, so a tenant who guesses another team's key gets an address of its own). Set it only for a pool whose namespaces trust each other. MetalLB's own allow-shared-ip annotation (compat { metallb = true }) keeps MetalLB's cluster-wide rule in every pool."`
	Network               *PoolNetwork `hcl:"network,block" doc:"The segment (L2 network, e.g. a VLAN) the pool's addresses live on, when it is not the template's default (settings.vip_pool on settings.vrrp_interface, every LB host): docs/address-pools.md#segments."`

	// Ranges are Addresses parsed: inclusive first and last address.
	Ranges []AddrRange
	// NamespaceSels and ServiceSels are the parsed selectors.
	NamespaceSels, ServiceSels []labels.Selector
}

// PoolNetwork is the segment a pool lives on: the interface its VIPs go
// on, the subnets they are inside, and the LB hosts attached to it. Unset
// fields are the template's defaults.
type PoolNetwork struct {
	Interface string   `hcl:"interface,optional" doc:"The interface a VIP of this pool is added to on the LB hosts (e.g. vlan20); default settings.vrrp_interface. VRRP adverts stay on settings.vrrp_interface."`
	Hosts     []string `hcl:"hosts,optional" doc:"The LB hosts (names in settings.hosts) attached to this segment: only they hold and serve its VIPs. Default: every host."`
	Subnet    string   `hcl:"subnet,optional" doc:"The segment's IPv4 network (CIDR, e.g. 10.0.20.0/24): the pool's IPv4 addresses must lie inside it, away from its first and last address; the template's VIP pool for them instead of settings.vip_pool."`
	Subnet6   string   `hcl:"subnet6,optional" doc:"The segment's IPv6 network (CIDR): as subnet, instead of settings.vip_pool6."`

	// Prefix and Prefix6 are Subnet and Subnet6 parsed (invalid: unset).
	Prefix, Prefix6 netip.Prefix
}

// Segment is the network one address lives on: its pool's network block.
type Segment struct {
	// Pool names the address's pool.
	Pool string
	// Network is the pool's segment (never nil).
	Network *PoolNetwork
}

// Name describes the segment in messages: "interface vlan20, subnet
// 10.0.20.0/24, hosts lb-a, lb-b".
func (n *PoolNetwork) Name() string {
	if n == nil {
		return "the default segment"
	}
	var parts []string
	if n.Interface != "" {
		parts = append(parts, "interface "+n.Interface)
	}
	if n.Subnet != "" {
		parts = append(parts, "subnet "+n.Subnet)
	}
	if n.Subnet6 != "" {
		parts = append(parts, "subnet6 "+n.Subnet6)
	}
	if len(n.Hosts) > 0 {
		parts = append(parts, "hosts "+strings.Join(n.Hosts, ", "))
	}
	if len(parts) == 0 {
		return "the default segment"
	}
	return strings.Join(parts, ", ")
}

// AddrRange is an inclusive range of addresses of one family.
type AddrRange struct{ First, Last netip.Addr }

// Contains reports whether a is in the range.
func (r AddrRange) Contains(a netip.Addr) bool {
	return a.BitLen() == r.First.BitLen() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

func (r AddrRange) String() string {
	if r.First == r.Last {
		return r.First.String()
	}
	return r.First.String() + "-" + r.Last.String()
}

// HasSelectors reports whether the pool restricts which Services it
// serves automatically (MetalLB's serviceAllocation).
func (p *AddressPool) HasSelectors() bool {
	return len(p.Namespaces) > 0 || len(p.NamespaceSels) > 0 || len(p.ServiceSels) > 0
}

// Compat turns on reading other load balancers' annotations.
type Compat struct {
	MetalLB bool `hcl:"metallb,optional" doc:"Reads MetalLB's Service annotations (metallb.universe.tf/ and metallb.io/ loadBalancerIPs, allow-shared-ip, address-pool) as their tfccm.io/ equivalents, so Services move from MetalLB unchanged (docs/migrate-from-metallb.md)."`
	// MetalLBTakeover is TakeoverNow or TakeoverPrepare (config/takeover.go).
	MetalLBTakeover string `hcl:"metallb_takeover,optional" doc:"Admin side of the trust boundary. With metallb = true: \"now\" (default) serves class-less Services at once; \"prepare\" applies each class-less Service's load balancer with every address MetalLB assigned but does not announce it (MetalLB still does) and leaves its status as MetalLB wrote it (Programmed=False Prepared), until the admin takes it over: tfccm takeover, which lists it in the ConfigMap tfccm-takeover of tfccm's namespace; then one quick apply raises the address (docs/migrate-from-metallb.md). Needs a template that declares service.announce (the local and baremetal sets' default variants)."`
}

var poolNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParseAddrRange parses a CIDR or a "first-last" range.
func ParseAddrRange(s string) (AddrRange, error) {
	s = strings.TrimSpace(s)
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(first))
		b, err2 := netip.ParseAddr(strings.TrimSpace(last))
		if err1 != nil || err2 != nil || a.Zone() != "" || b.Zone() != "" {
			return AddrRange{}, fmt.Errorf("%q is not a range of two addresses", s)
		}
		a, b = a.Unmap(), b.Unmap()
		if a.BitLen() != b.BitLen() || b.Less(a) {
			return AddrRange{}, fmt.Errorf("%q: both ends must be of one family, the first not after the last", s)
		}
		return AddrRange{a, b}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return AddrRange{}, fmt.Errorf("%q is neither a CIDR nor a range (first-last)", s)
	}
	if p.Masked() != p {
		return AddrRange{}, fmt.Errorf("%q has host bits set (the network is %s)", s, p.Masked())
	}
	return AddrRange{p.Addr(), lastOf(p)}, nil
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (lb *LoadBalancer) finishPools(k *checker) {
	seen := map[string]bool{}
	for i := range lb.AddressPools {
		p := &lb.AddressPools[i]
		bad := func(detail string) {
			k.errAt(at("load_balancer", "address_pool"), "Invalid address_pool", fmt.Sprintf("load_balancer.address_pool %q: %s", p.Name, detail))
		}
		if seen[p.Name] {
			bad("declared twice.")
		}
		seen[p.Name] = true
		for _, problem := range FinishPool(p) {
			bad(problem)
		}
		for _, o := range lb.AddressPools[:i] {
			if r, or, ok := Overlap(p, &o); ok {
				bad(fmt.Sprintf("%s overlaps %s of pool %q.", r, or, o.Name))
			}
		}
	}
}

// FinishPool checks one pool on its own (name, addresses, priority,
// namespaces, selectors), parses its ranges and selectors and defaults
// auto_assign; it returns each problem found, as a sentence. The cloud
// config's blocks and the AddressPool objects (package ipam/poolapi) are
// checked by it alike.
func FinishPool(p *AddressPool) []string {
	var problems []string
	bad := func(detail string) { problems = append(problems, detail) }
	if !poolNameRE.MatchString(p.Name) {
		bad("the name must be 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit.")
	}
	if len(p.Addresses) == 0 {
		bad("addresses is empty.")
	}
	p.Ranges = nil
	for _, s := range p.Addresses {
		r, err := ParseAddrRange(s)
		if err != nil {
			bad(err.Error() + ".")
			continue
		}
		for _, o := range p.Ranges {
			if r.First.BitLen() == o.First.BitLen() && !(r.Last.Less(o.First) || o.Last.Less(r.First)) {
				bad(fmt.Sprintf("%s overlaps %s of pool %q.", r, o, p.Name))
			}
		}
		p.Ranges = append(p.Ranges, r)
	}
	if p.AutoAssign == nil {
		t := true
		p.AutoAssign = &t
	}
	if p.Priority < 0 {
		bad("priority must not be negative.")
	}
	for _, ns := range p.Namespaces {
		if !validNamespace(ns) {
			bad(fmt.Sprintf("%q is not a namespace name.", ns))
		}
	}
	p.NamespaceSels = parseSelectors(p.NamespaceSelectors, bad)
	p.ServiceSels = parseSelectors(p.ServiceSelectors, bad)
	finishNetwork(p, bad)
	return problems
}

// finishNetwork checks p's segment: an interface name, LB host names, the
// subnets (network CIDRs of their family), and every range of p inside
// its family's subnet, away from the subnet's first and last address (the
// network's own and its broadcast address; lbhost refuses them).
func finishNetwork(p *AddressPool, bad func(string)) {
	n := p.Network
	if n == nil {
		return
	}
	if n.Interface != "" && !interfaceRE.MatchString(n.Interface) {
		bad(fmt.Sprintf("network: interface %q is not an interface name (1-15 letters, digits, '_', '.', '-').", n.Interface))
	}
	seen := map[string]bool{}
	for _, h := range n.Hosts {
		if !hostNameRE.MatchString(h) {
			bad(fmt.Sprintf("network: host %q is not an LB host name (1-20 lowercase letters, digits and '-').", h))
		}
		if seen[h] {
			bad(fmt.Sprintf("network: host %q is listed twice.", h))
		}
		seen[h] = true
	}
	n.Prefix, n.Prefix6 = netip.Prefix{}, netip.Prefix{}
	for _, sn := range []struct {
		field, s string
		bits     int
		out      *netip.Prefix
	}{{"subnet", n.Subnet, 32, &n.Prefix}, {"subnet6", n.Subnet6, 128, &n.Prefix6}} {
		if sn.s == "" {
			continue
		}
		pf, err := netip.ParsePrefix(sn.s)
		switch {
		case err != nil || pf.Addr().BitLen() != sn.bits || pf.Addr().Zone() != "":
			bad(fmt.Sprintf("network: %s %q is not an IPv%d CIDR.", sn.field, sn.s, map[int]int{32: 4, 128: 6}[sn.bits]))
			continue
		case pf.Masked() != pf:
			bad(fmt.Sprintf("network: %s %q has host bits set (the network is %s).", sn.field, sn.s, pf.Masked()))
			continue
		}
		*sn.out = pf
	}
	for _, r := range p.Ranges {
		field, pf := "subnet", n.Prefix
		if r.First.Is6() {
			field, pf = "subnet6", n.Prefix6
		}
		if !pf.IsValid() {
			continue
		}
		sub := AddrRange{pf.Addr(), lastOf(pf)}
		if !sub.Contains(r.First) || !sub.Contains(r.Last) || r.Contains(sub.First) || r.Contains(sub.Last) {
			bad(fmt.Sprintf("%s is outside its segment (network %s %s, without its first and last address): an address of it could not be served there.", r, field, pf))
		}
	}
}

// Overlap reports the first range of p that overlaps one of o's (both
// finished by FinishPool), and that range of o.
func Overlap(p, o *AddressPool) (AddrRange, AddrRange, bool) {
	for _, r := range p.Ranges {
		for _, or := range o.Ranges {
			if r.First.BitLen() == or.First.BitLen() && !(r.Last.Less(or.First) || or.Last.Less(r.First)) {
				return r, or, true
			}
		}
	}
	return AddrRange{}, AddrRange{}, false
}

func parseSelectors(ss []string, bad func(string)) []labels.Selector {
	var out []labels.Selector
	for _, s := range ss {
		sel, err := labels.Parse(s)
		if err != nil || strings.TrimSpace(s) == "" {
			bad(fmt.Sprintf("selector %q: %v", s, err))
			continue
		}
		out = append(out, sel)
	}
	return out
}

var namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func validNamespace(s string) bool { return namespaceRE.MatchString(s) }
