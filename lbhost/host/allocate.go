// Allocation across hosts: a VIP's address and VRRP virtual router id
// decided from every reachable host's claims and VRRP ids, so no one host
// holds them, and the VRRP id reservations (vrrp-ids/) that keep an
// allocated id taken before its keepalived instances are written.

package host

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// Request is what one VIP asks of Allocate: its owner (and share token),
// the pool, a requested address ("" = allocate), the VRRP interface and
// the range its virtual router id comes from.
type Request struct {
	Owner, Share string
	Pool         netip.Prefix
	Address      string
	Interface    string
	VRIDRange    [2]int
}

// Allocation is a VIP's address and virtual router id.
type Allocation struct {
	Address         string
	VirtualRouterID int
}

func (r Request) validate() error {
	v := VIP{Owner: r.Owner, Pool: r.Pool, Address: r.Address, Interface: r.Interface, Share: r.Share}
	if err := v.validate(); err != nil {
		return err
	}
	if r.VRIDRange[0] < 1 || r.VRIDRange[0] > r.VRIDRange[1] || r.VRIDRange[1] > 255 {
		return &FieldError{Field: "virtual_router_id_range", Msg: "must be <first>-<last> from 1 to 255"}
	}
	return nil
}

// vrrpOwner is who owns the request's VRRP instance (and id).
func (r Request) vrrpOwner() string { return VRRPOwner(r.Owner, r.Share) }

// ErrNoHostReachable is Allocate's error when no host answers.
var ErrNoHostReachable = errors.New("no LB host is reachable")

// seen is what the reachable hosts know, merged: every claim, the
// addresses no VIP may get, and the VRRP ids used on the interface.
type seen struct {
	claims   map[string]claimants
	reserved map[string]string
	ids      map[int]string // virtual router id -> VRRP owner
	ownID    int            // the request's VRRP owner's id (0: none)
}

// look reads what h knows into s (ids only on iface). The caller holds
// h's lock, or only reads (FindAllocation).
func (s *seen) look(ctx context.Context, h *Host, r Request) error {
	claims, err := h.claims(ctx)
	if err != nil {
		return err
	}
	for a, cs := range claims {
		for _, c := range cs {
			if !s.claims[a].has(c.owner) {
				s.claims[a] = append(s.claims[a], c)
			}
		}
	}
	own, err := h.ownAddrs(ctx)
	if err != nil {
		return err
	}
	for a, ifc := range own {
		s.reserved[a] = fmt.Sprintf("the address of %s itself (on %s), not a VIP", h.T, ifc)
	}
	for _, e := range h.Reserved {
		if a, err := netip.ParseAddr(e); err == nil && r.Pool.Contains(a.Unmap()) {
			s.reserved[a.Unmap().String()] = "reserved (the provider's reserved_addresses: another host's or a gateway's address)"
		}
	}
	ids, err := h.vrrpIDs(ctx, r.Interface)
	if err != nil {
		return err
	}
	for id, o := range ids {
		if o == r.vrrpOwner() {
			if s.ownID == 0 {
				s.ownID = id
			}
			continue
		}
		s.ids[id] = o
	}
	return nil
}

// vrrpIDs maps the virtual router ids used on iface on h (by lbhost's
// keepalived instances and the reservations of vrrp-ids/) to their VRRP
// owners.
func (h *Host) vrrpIDs(ctx context.Context, iface string) (map[int]string, error) {
	out := map[int]string{}
	files, err := h.T.ReadFiles(ctx, h.p("keepalived"))
	if err != nil && !transport.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	for _, data := range files {
		if in, err := keepalived.Parse(data); err == nil && in.Interface == iface {
			out[in.VirtualRouterID] = in.Owner
		}
	}
	res, err := h.T.ReadFiles(ctx, h.p("vrrp-ids"))
	if err != nil && !transport.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	for name, data := range res {
		ifc, idText, ok := strings.Cut(name, ".")
		id, err := strconv.Atoi(idText)
		owner := strings.TrimSpace(string(data))
		if !ok || err != nil || ifc != iface || !ValidOwner(owner) {
			continue
		}
		if _, taken := out[id]; !taken {
			out[id] = owner
		}
	}
	return out, nil
}

// vridFile is the reservation of id on iface: vrrp-ids/<iface>.<id>,
// holding its VRRP owner.
func (h *Host) vridFile(iface string, id int) string {
	return h.p("vrrp-ids", fmt.Sprintf("%s.%d", iface, id))
}

// pick decides the allocation from what the hosts know: the owner's (or
// its share's) address and id, else the requested address and the lowest
// free id.
func (s *seen) pick(r Request) (Allocation, error) {
	a := Allocation{Address: r.Address}
	if a.Address != "" {
		if why, ok := s.reserved[a.Address]; ok {
			return a, &FieldError{Field: "address", Msg: fmt.Sprintf("%s is %s: keep the hosts' own addresses out of the VIP pool %s", a.Address, why, r.Pool)}
		}
		if cs := s.claims[a.Address]; !cs.admits(r.Owner, r.Share) {
			return a, usedBy(a.Address, r.Owner, cs, hostsName{})
		}
	} else if a.Address = allocateShared(r.Pool, r.Owner, r.Share, s.claims, s.reserved); a.Address == "" {
		return a, &FieldError{Field: "pool", Msg: fmt.Sprintf("the pool %s is exhausted on the reachable LB hosts: every address is claimed, a host's own or reserved", r.Pool)}
	}
	first, last := r.VRIDRange[0], r.VRIDRange[1]
	if _, taken := s.ids[s.ownID]; s.ownID != 0 && !taken {
		a.VirtualRouterID = s.ownID // kept even outside a narrowed range
		return a, nil
	}
	for id := first; id <= last; id++ {
		if _, taken := s.ids[id]; !taken {
			a.VirtualRouterID = id
			return a, nil
		}
	}
	return a, &FieldError{Field: "virtual_router_id_range", Msg: fmt.Sprintf("every virtual router id of %d-%d is used on the reachable LB hosts (interface %s)", first, last, r.Interface)}
}

// hostsName names "the LB hosts" in an error about all of them.
type hostsName struct{}

func (hostsName) String() string { return "the LB hosts" }

func newSeen() *seen {
	return &seen{claims: map[string]claimants{}, reserved: map[string]string{}, ids: map[int]string{}}
}

// FindAllocation is the owner's existing address and id on the hosts
// (read without locks, at plan time): ok false when no host knows both.
func FindAllocation(ctx context.Context, hosts []*Host, r Request) (Allocation, bool, error) {
	if err := r.validate(); err != nil {
		return Allocation{}, false, err
	}
	s := newSeen()
	for _, h := range hosts {
		if err := s.look(ctx, h, r); err != nil {
			return Allocation{}, false, err
		}
	}
	var mine []string
	for a, cs := range s.claims {
		if p, err := netip.ParseAddr(a); err == nil && r.Pool.Contains(p) && cs.has(r.Owner) {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 || s.ownID == 0 {
		return Allocation{}, false, nil
	}
	return Allocation{Address: minAddr(mine), VirtualRouterID: s.ownID}, true, nil
}

// Allocate decides r's address and virtual router id under every host's
// lock (taken in the given order, the same for every caller), from all
// the hosts know, and records both on each: the claim, and the id's
// reservation in vrrp-ids/. Two allocations that share any host never get
// the same address or id. hosts are the reachable ones; none is
// ErrNoHostReachable.
func Allocate(ctx context.Context, hosts []*Host, r Request) (Allocation, error) {
	if err := r.validate(); err != nil {
		return Allocation{}, err
	}
	if len(hosts) == 0 {
		return Allocation{}, ErrNoHostReachable
	}
	for _, h := range hosts {
		unlock, err := h.lock(ctx)
		if err != nil {
			return Allocation{}, err
		}
		defer unlock()
	}
	s := newSeen()
	for _, h := range hosts {
		if err := s.look(ctx, h, r); err != nil {
			return Allocation{}, err
		}
	}
	a, err := s.pick(r)
	if err != nil {
		return a, err
	}
	for _, h := range hosts {
		if err := h.record(ctx, r, a); err != nil {
			return a, err
		}
	}
	return a, nil
}

// record writes r's claim on a's address and the reservation of its id on
// h. The caller holds h's lock.
func (h *Host) record(ctx context.Context, r Request, a Allocation) error {
	data, err := h.T.ReadFile(ctx, h.claimFile(a.Address))
	if err != nil && !transport.IsNotExist(err) {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	cs := parseClaimants(data)
	if !slicesEqual(cs, cs.with(r.Owner, r.Share)) || !cs.has(r.Owner) {
		if err := h.T.WriteFile(ctx, h.claimFile(a.Address), cs.with(r.Owner, r.Share).bytes()); err != nil {
			return fmt.Errorf("%s: claim %s: %w", h.T, a.Address, err)
		}
	}
	if err := h.T.WriteFile(ctx, h.vridFile(r.Interface, a.VirtualRouterID), []byte(r.vrrpOwner()+"\n")); err != nil {
		return fmt.Errorf("%s: reserve virtual router id %d: %w", h.T, a.VirtualRouterID, err)
	}
	return nil
}

// Deallocate drops r's claim on a's address (unless a VIP still holds it:
// the lbhost_vip resources release their own) and, once no one claims the
// address, the reservation of its id, on h.
func (h *Host) Deallocate(ctx context.Context, r Request, a Allocation) error {
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	free, err := h.unclaim(ctx, r.Owner, a.Address)
	if err != nil || !free {
		return err
	}
	ids, err := h.vrrpIDs(ctx, r.Interface)
	if err != nil {
		return err
	}
	if ids[a.VirtualRouterID] != r.vrrpOwner() {
		return nil
	}
	if err := h.T.Remove(ctx, h.vridFile(r.Interface, a.VirtualRouterID)); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	return nil
}
