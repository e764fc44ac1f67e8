// VIPs on the host: pools, claiming and allocating addresses (and VRRP ids),
// configuring and releasing them.

package host

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/transport"
)

var (
	reOwner = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,99}$`)
	reIface = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$`)
)

// ValidOwner reports whether s can own a VIP.
func ValidOwner(s string) bool { return reOwner.MatchString(s) }

// ValidInterface reports whether s is a Linux interface name.
func ValidInterface(s string) bool { return reIface.MatchString(s) }

// VIP is an address claimed from a pool by an owner and configured on an
// interface.
type VIP struct {
	Owner     string
	Pool      netip.Prefix
	Address   string // "" = allocate
	Interface string
	// VRRP, when set, has keepalived hold the address (on Interface)
	// instead of lbhost adding it; Owner and Address are filled in. A
	// VirtualRouterID of 0 is allocated from VRIDRange by ClaimVIP, which
	// fills it in.
	VRRP      *keepalived.Instance
	VRIDRange [2]int // first, last; zero: no allocation
	// Share, when set, lets every owner with the same token claim the
	// address too (see claims.go); their VRRP instance is one, owned by
	// the token.
	Share string
	// Standby claims the address (and picks the VRRP id) without
	// configuring it: no address on Interface, no VRRP instance. Another
	// speaker (MetalLB's, during a migration) still announces it; Announce
	// configures it later.
	Standby bool
}

var reVRIDRange = regexp.MustCompile(`^([1-9][0-9]{0,2})-([1-9][0-9]{0,2})$`)

// ParseVRIDRange parses "<first>-<last>" (1 <= first <= last <= 255).
func ParseVRIDRange(s string) (first, last int, ok bool) {
	m := reVRIDRange.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	fmt.Sscan(m[1], &first)
	fmt.Sscan(m[2], &last)
	return first, last, first <= last && last <= 255
}

func (v VIP) validate() error {
	if !ValidOwner(v.Owner) {
		return &FieldError{Field: "owner", Msg: fmt.Sprintf("%q must be 1-100 lowercase letters, digits, '_', '.' or '-'", v.Owner)}
	}
	if err := CheckPool(v.Pool); err != nil {
		return err
	}
	if !ValidInterface(v.Interface) {
		return &FieldError{Field: "interface", Msg: fmt.Sprintf("%q is not an interface name", v.Interface)}
	}
	if !ValidShare(v.Share) {
		return &FieldError{Field: "share", Msg: fmt.Sprintf("%q must be 1-63 lowercase letters, digits or '-'", v.Share)}
	}
	if v.Address != "" {
		return CheckInPool(v.Pool, v.Address)
	}
	return nil
}

// CheckPool checks a VIP pool: an IPv4 network of /30 or larger, or an
// IPv6 network of /126 or larger.
func CheckPool(pool netip.Prefix) error {
	if !pool.IsValid() || pool.Masked() != pool || pool.Addr().Zone() != "" || pool.Addr().Is4In6() ||
		pool.Addr().Is4() && pool.Bits() > 30 || pool.Addr().Is6() && pool.Bits() > 126 {
		return &FieldError{Field: "pool", Msg: fmt.Sprintf("%q must be an IPv4 network CIDR of /30 or larger (such as 10.252.0.0/24) or an IPv6 one of /126 or larger (such as fd00:5::/64)", pool)}
	}
	return nil
}

// CheckInPool is the host-independent part of checking a requested address.
func CheckInPool(pool netip.Prefix, address string) error {
	a, err := netip.ParseAddr(address)
	if err != nil || a.Zone() != "" || a.Is4In6() || a.String() != address {
		return &FieldError{Field: "address", Msg: fmt.Sprintf("%q is not an IPv4 or IPv6 address", address)}
	}
	if !pool.Contains(a) {
		return &FieldError{Field: "address", Msg: fmt.Sprintf("%s is outside the VIP pool %s", address, pool)}
	}
	if a == pool.Addr() || a.Is4() && a == LastAddr(pool) {
		return &FieldError{Field: "address", Msg: fmt.Sprintf("%s is the network or broadcast address of the pool %s", address, pool)}
	}
	return nil
}

// LastAddr is the last address of an IPv4 prefix (its broadcast).
func LastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	n := binary.BigEndian.Uint32(b[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(b[:], n)
	return netip.AddrFrom4(b)
}

// hostPrefix is addr as a single-address prefix (/32, /128): how a VIP is
// configured on an interface.
func hostPrefix(addr string) string {
	if netip.MustParseAddr(addr).Is6() {
		return addr + "/128"
	}
	return addr + "/32"
}

// maxIPv6Probe bounds the addresses allocate considers in an IPv6 pool:
// its first ones after the network address (a /64 is never walked).
const maxIPv6Probe = 1 << 16

// poolHosts is how many addresses allocate considers in pool, and the
// i-th of them (0-based, after the network address).
func poolHosts(pool netip.Prefix) (uint32, func(uint32) netip.Addr) {
	if pool.Addr().Is4() {
		base := pool.Addr().As4()
		b := binary.BigEndian.Uint32(base[:])
		return uint32(1)<<(32-pool.Bits()) - 2, func(i uint32) netip.Addr {
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], b+1+i)
			return netip.AddrFrom4(a)
		}
	}
	n := uint32(maxIPv6Probe)
	if free := 128 - pool.Bits(); free < 17 {
		n = uint32(1)<<free - 1
	}
	base := pool.Addr().As16()
	lo := binary.BigEndian.Uint64(base[8:])
	return n, func(i uint32) netip.Addr {
		a := base
		// The pool's host bits are zero and i+1 < 2^17: no carry out of
		// the low half.
		binary.BigEndian.PutUint64(a[8:], lo+1+uint64(i))
		return netip.AddrFrom16(a)
	}
}

// claims maps every claimed address to its claimants.
func (h *Host) claims(ctx context.Context) (map[string]claimants, error) {
	if err := h.needDir(); err != nil {
		return nil, err
	}
	files, err := h.T.ReadFiles(ctx, h.p("claims"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	out := map[string]claimants{}
	for n, data := range files {
		a, ok := claimAddr(n)
		if !ok {
			continue
		}
		if cs := parseClaimants(data); len(cs) > 0 {
			out[a] = cs
		}
	}
	return out, nil
}

// claimFile is the path of addr's claim: claims/<address>, an IPv6
// address with '_' for ':' (host paths are letters, digits, '.', '_', '-').
func (h *Host) claimFile(addr string) string {
	return h.p("claims", strings.ReplaceAll(addr, ":", "_"))
}

// claimAddr is the address a claim file's name stands for.
func claimAddr(name string) (string, bool) {
	s := strings.ReplaceAll(name, "_", ":")
	a, err := netip.ParseAddr(s)
	return s, err == nil && a.String() == s
}

// CheckRequest is the plan-time check of a requested address: in the pool
// and not claimed by another owner.
func (h *Host) CheckRequest(ctx context.Context, v VIP) error {
	if err := v.validate(); err != nil {
		return err
	}
	if v.Address == "" {
		return nil
	}
	if v.Interface != "" {
		// The host is attached to the VIP's segment: its interface is there.
		if _, err := h.hasAddress(ctx, v.Address, v.Interface); err != nil {
			return fmt.Errorf("%s has no interface %s for VIP %s (is it attached to that network?): %w", h.T, v.Interface, v.Address, err)
		}
	}
	claims, err := h.claims(ctx)
	if err != nil {
		return err
	}
	if cs := claims[v.Address]; !cs.admits(v.Owner, v.Share) {
		return usedBy(v.Address, v.Owner, cs, h.T)
	}
	return nil
}

// ClaimVIP allocates (or checks the requested) address under the host
// lock, records the claim and configures the address. Concurrent claims on
// one host never get the same address. It returns the address.
func (h *Host) ClaimVIP(ctx context.Context, v VIP) (string, error) {
	if err := v.validate(); err != nil {
		return "", err
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	adopting := v.VRRP != nil && v.VRRP.Name != ""
	addr, err := h.claim(ctx, v.Owner, v.Share, v.Pool, v.Address, adopting, func() error {
		if v.VRRP == nil {
			return nil
		}
		// Before anything is written: a refused id changes nothing.
		return h.pickVRID(ctx, v)
	})
	if err != nil {
		return "", err
	}
	if v.Standby {
		return addr, nil
	}
	if v.VRRP != nil {
		in := *v.VRRP
		in.Owner, in.Address, in.AddressInterface = v.vrrpOwner(), addr, v.Interface
		apply := h.applyVRRP
		if adopting {
			apply = h.adoptVRRP // a hand-made instance moves into lbhost's fragment
		}
		if err := apply(ctx, in); err != nil {
			return addr, fmt.Errorf("VRRP instance for %s: %w", addr, err)
		}
		return addr, nil
	}
	argv := []string{"ip", "addr", "replace", hostPrefix(addr), "dev", v.Interface}
	if netip.MustParseAddr(addr).Is6() {
		// No duplicate address detection: the claim is what keeps the
		// address unique, and a tentative address cannot be bound yet.
		argv = append(argv, "nodad")
	}
	if _, err := h.T.Run(ctx, nil, argv...); err != nil {
		// The claim stays: the address is ours, the next apply adds it.
		return addr, fmt.Errorf("add VIP %s: %w", addr, err)
	}
	return addr, nil
}

// pickVRID checks a set virtual router id against the other lbhost VRRP
// instances on the host (same interface), or allocates one from
// v.VRIDRange: the owner's existing id, else the lowest free one. Callers
// hold the lock.
func (h *Host) pickVRID(ctx context.Context, v VIP) error {
	ids, err := h.vrrpIDs(ctx, v.VRRP.Interface)
	if err != nil {
		return err
	}
	used := map[int]string{}
	own := 0
	for id, o := range ids {
		if o == v.vrrpOwner() {
			own = id
			continue
		}
		used[id] = o
	}
	if id := v.VRRP.VirtualRouterID; id != 0 {
		if o, taken := used[id]; taken {
			return &FieldError{Field: "vrrp.virtual_router_id", Msg: fmt.Sprintf("%d is already used by load balancer %s on %s (interface %s)", id, o, h.T, v.VRRP.Interface)}
		}
		return nil
	}
	first, last := v.VRIDRange[0], v.VRIDRange[1]
	if first == 0 {
		return &FieldError{Field: "vrrp.virtual_router_id", Msg: "set virtual_router_id, or virtual_router_id_range to have one allocated"}
	}
	if _, taken := used[own]; own >= first && own <= last && !taken {
		v.VRRP.VirtualRouterID = own
		return nil
	}
	for id := first; id <= last; id++ {
		if _, taken := used[id]; !taken {
			v.VRRP.VirtualRouterID = id
			return nil
		}
	}
	return &FieldError{Field: "vrrp.virtual_router_id_range", Msg: fmt.Sprintf("every virtual router id of %d-%d is used on %s (interface %s)", first, last, h.T, v.VRRP.Interface)}
}

// claim allocates (or checks the requested) address and records owner's
// claim on it (with share: an address others claim with the same token is
// taken first). Neither a reserved address (Host.Reserved) nor one of
// the host's own (ownAddrs) is ever allocated; requested, either is
// refused, unless adopted (a hand-made VRRP instance being adopted may
// hold its VIP with a subnet's prefix, as an address of the host's own
// looks). check, when set, runs once the address is chosen and before
// anything is written: its error changes nothing. The caller holds the
// host lock.
func (h *Host) claim(ctx context.Context, owner, share string, pool netip.Prefix, addr string, adopted bool, check func() error) (string, error) {
	claims, err := h.claims(ctx)
	if err != nil {
		return "", err
	}
	own, err := h.ownAddrs(ctx)
	if err != nil {
		return "", err
	}
	reserved := map[string]string{}
	for _, e := range h.Reserved {
		if a, err := netip.ParseAddr(e); err == nil && pool.Contains(a.Unmap()) {
			reserved[a.Unmap().String()] = "reserved (the provider's reserved_addresses: another host's or a gateway's address)"
		}
	}
	for a, ifc := range own {
		if adopted && a == addr {
			continue
		}
		reserved[a] = fmt.Sprintf("the address of %s itself (on %s), not a VIP", h.T, ifc)
	}
	if addr != "" {
		if why, ok := reserved[addr]; ok {
			return "", &FieldError{Field: "address", Msg: fmt.Sprintf("%s is %s: keep the hosts' own addresses out of the VIP pool %s", addr, why, pool)}
		}
		if cs := claims[addr]; !cs.admits(owner, share) {
			return "", usedBy(addr, owner, cs, h.T)
		}
	} else {
		addr = allocateShared(pool, owner, share, claims, reserved)
		if addr == "" {
			return "", &FieldError{Field: "pool", Msg: fmt.Sprintf("the pool %s on %s is exhausted: every address is claimed, the host's own or reserved", pool, h.T)}
		}
	}
	if check != nil {
		if err := check(); err != nil {
			return "", err
		}
	}
	if cs := claims[addr]; !slicesEqual(cs, cs.with(owner, share)) {
		if err := h.T.WriteFile(ctx, h.claimFile(addr), cs.with(owner, share).bytes()); err != nil {
			return "", fmt.Errorf("%s: claim %s: %w", h.T, addr, err)
		}
	}
	return addr, nil
}

// ownAddrs returns the host's own addresses (to the interface they are
// on): those with a subnet's prefix, shorter than /32 (/128). VIPs are
// never among them: lbhost and keepalived add VIPs as /32 (/128).
func (h *Host) ownAddrs(ctx context.Context) (map[string]string, error) {
	out, err := h.T.Run(ctx, nil, "ip", "-j", "addr", "show")
	if err != nil {
		return nil, fmt.Errorf("%s: read the host's own addresses: %w", h.T, err)
	}
	own, err := parseOwnAddrs(out)
	if err != nil {
		return nil, fmt.Errorf("%s: read the host's own addresses: %w", h.T, err)
	}
	return own, nil
}

// parseOwnAddrs reads `ip -j addr show`.
func parseOwnAddrs(out []byte) (map[string]string, error) {
	var links []struct {
		Ifname   string `json:"ifname"`
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("ip -j addr show: %w", err)
	}
	own := map[string]string{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			p, err := netip.ParseAddr(a.Local)
			if err != nil || p.Is4() && a.Prefixlen >= 32 || p.Is6() && a.Prefixlen >= 128 {
				continue
			}
			own[p.String()] = l.Ifname
		}
	}
	return own, nil
}

func slicesEqual(a, b claimants) bool { return string(a.bytes()) == string(b.bytes()) }

// allocateShared prefers owner's own claim, then (with share) the lowest
// address of the pool claimed with the same token, then allocate's probe;
// never a reserved address (not even one owner claimed before).
func allocateShared(pool netip.Prefix, owner, share string, claims map[string]claimants, reserved map[string]string) string {
	byOwner := map[string]string{}
	for a := range reserved {
		byOwner[a] = "" // taken by nobody's claim
	}
	var mine, shared []string
	for a, cs := range claims {
		if _, ok := reserved[a]; ok {
			continue
		}
		p, err := netip.ParseAddr(a)
		inPool := err == nil && pool.Contains(p)
		byOwner[a] = cs.other(owner)
		switch {
		case cs.has(owner):
			byOwner[a] = owner
			if inPool {
				mine = append(mine, a)
			}
		case inPool && share != "" && cs.admits(owner, share):
			shared = append(shared, a)
		}
	}
	if len(mine) == 0 && len(shared) > 0 {
		return minAddr(shared)
	}
	return allocate(pool, owner, byOwner)
}

// allocate prefers the owner's existing claim, then probes from a hash of
// the owner (spread, deterministic) for the first unclaimed host address.
func allocate(pool netip.Prefix, owner string, claims map[string]string) string {
	var mine []string
	for a, o := range claims {
		if o == owner {
			if p, err := netip.ParseAddr(a); err == nil && pool.Contains(p) {
				mine = append(mine, a)
			}
		}
	}
	if len(mine) > 0 {
		return minAddr(mine)
	}
	hosts, nth := poolHosts(pool)
	sum := sha256.Sum256([]byte(owner))
	start := binary.BigEndian.Uint32(sum[:4]) % hosts
	for i := uint32(0); i < hosts; i++ {
		s := nth((start + i) % hosts).String()
		if _, taken := claims[s]; !taken {
			return s
		}
	}
	return ""
}

func minAddr(as []string) string {
	best := netip.MustParseAddr(as[0])
	for _, s := range as[1:] {
		if a := netip.MustParseAddr(s); a.Less(best) {
			best = a
		}
	}
	return best.String()
}

// FindVIP returns the address owner has claimed ("" if none): import by owner.
func (h *Host) FindVIP(ctx context.Context, owner string) (string, error) {
	claims, err := h.claims(ctx)
	if err != nil {
		return "", err
	}
	var mine []string
	for a, cs := range claims {
		if cs.has(owner) {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return "", nil
	}
	return minAddr(mine), nil
}

// HeldVIP is a VIP as the host holds it.
type HeldVIP struct {
	// VRRP is the VRRP instance holding the address (nil without vrrp).
	VRRP *keepalived.Instance
}

// ReadVIP reads owner's VIP on addr as the host has it: claimed by owner
// and held, on iface (with vrrp: by the VRRP instance of owner, or of
// share). It returns nil when nothing of it is left: no claim of owner's,
// and the address not held or claimed by someone else. Part of it left is
// a *Drift: the claim without the address, or the address without anyone's
// claim (a destroy removes either); so is an instance lbhost cannot read.
func (h *Host) ReadVIP(ctx context.Context, owner, share, addr, iface string, vrrp bool) (*HeldVIP, error) {
	if !ValidInterface(iface) {
		return nil, &FieldError{Field: "interface", Msg: fmt.Sprintf("%q is not an interface name", iface)}
	}
	if err := h.needDir(); err != nil {
		return nil, err
	}
	data, err := h.T.ReadFile(ctx, h.claimFile(addr))
	if err != nil && !transport.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	cs := parseClaimants(data)
	claimed := cs.has(owner)
	if !claimed && len(cs) > 0 {
		return nil, nil // someone else's address now
	}
	var held bool
	var in *keepalived.Instance
	where := "on " + iface
	if vrrp {
		// keepalived holds the address only on the VRRP master: the
		// instance is what must be there.
		if in, err = h.ReadVRRP(ctx, VRRPOwner(owner, share)); err != nil {
			return nil, err
		}
		held = in != nil && in.Address == addr && in.AddressInterface == iface
		where = "held by a VRRP instance on " + iface
	} else if held, err = h.hasAddress(ctx, addr, iface); err != nil {
		return nil, err
	}
	switch {
	case claimed && held:
		return &HeldVIP{VRRP: in}, nil
	case claimed:
		return nil, &Drift{Reason: fmt.Sprintf("%s is claimed by %s but not %s", addr, owner, where)}
	case held:
		return nil, &Drift{Reason: fmt.Sprintf("%s is %s but no one claims it", addr, where)}
	}
	return nil, nil
}

func (h *Host) hasAddress(ctx context.Context, addr, iface string) (bool, error) {
	fam := "-4"
	if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
		fam = "-6"
	}
	out, err := h.T.Run(ctx, nil, "ip", "-j", fam, "addr", "show", "dev", iface)
	if err != nil {
		return false, fmt.Errorf("read addresses of %s: %w", iface, err)
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return false, fmt.Errorf("%s: parse ip -j addr: %w", h.T, err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Local == addr {
				return true, nil
			}
		}
	}
	return false, nil
}

// ReleaseVIP drops owner's claim on addr and the address (or its VRRP
// instance, owner's or share's), if no one else claims it.
func (h *Host) ReleaseVIP(ctx context.Context, owner, share, addr, iface string, vrrp bool) error {
	if !ValidInterface(iface) {
		return &FieldError{Field: "interface", Msg: fmt.Sprintf("%q is not an interface name", iface)}
	}
	if a, err := netip.ParseAddr(addr); err != nil || a.String() != addr {
		return &FieldError{Field: "address", Msg: fmt.Sprintf("%q is not an address", addr)}
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if free, err := h.unclaim(ctx, owner, addr); err != nil || !free {
		return err // someone else's now, or still shared: leave the address alone
	}
	if vrrp {
		return h.deleteVRRP(ctx, VRRPOwner(owner, share))
	}
	has, err := h.hasAddress(ctx, addr, iface)
	if err != nil {
		return err
	}
	if has {
		if _, err := h.T.Run(ctx, nil, "ip", "addr", "del", hostPrefix(addr), "dev", iface); err != nil {
			return fmt.Errorf("remove VIP %s: %w", addr, err)
		}
	}
	return nil
}

// unclaim removes owner's claim on addr; it reports whether the address
// is free now (false: someone else claims it, alone or sharing it). The
// caller holds the host lock.
func (h *Host) unclaim(ctx context.Context, owner, addr string) (bool, error) {
	claim := h.claimFile(addr)
	data, err := h.T.ReadFile(ctx, claim)
	switch {
	case transport.IsNotExist(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", h.T, err)
	}
	cs := parseClaimants(data)
	rest := cs.without(owner)
	switch {
	case len(rest) == len(cs) && len(cs) > 0:
		return false, nil // not ours
	case len(rest) > 0:
		if err := h.T.WriteFile(ctx, claim, rest.bytes()); err != nil {
			return false, fmt.Errorf("%s: %w", h.T, err)
		}
		return false, nil
	}
	if err := h.T.Remove(ctx, claim); err != nil {
		return false, fmt.Errorf("%s: %w", h.T, err)
	}
	return true, nil
}
