// Routed VIPs on the host: the claim and the router's config file.

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/tfccm/tfccm/lbhost/router"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// RoutedVIP is an address claimed from a pool and routed (ECMP) to the
// next hops that pass its health check by the host's router service
// (lbhost-router, reading <config_dir>/routed/). The address is not
// configured on the host: the next hops serve it.
type RoutedVIP struct {
	Owner    string
	Pool     netip.Prefix
	Address  string // "" = allocate
	Nexthops []string
	Check    router.Check
	Hash     string // router.HashFlow ("" too) or router.HashClient
	// Share lets owners with the same token route one address (each its
	// own config; the router routes the address once).
	Share string
}

func (r RoutedVIP) validate() error {
	if r.Pool.IsValid() && !r.Pool.Addr().Is4() {
		// lbhost-router's client-hash marks and tables are IPv4 addresses.
		return &FieldError{Field: "pool", Msg: fmt.Sprintf("%s: routed VIPs are IPv4 only (an IPv6 VIP needs lbhost_vip, with or without vrrp)", r.Pool)}
	}
	// The pool and owner rules are the VIP's; the interface is not used.
	if err := (VIP{Owner: r.Owner, Pool: r.Pool, Address: r.Address, Interface: "lo", Share: r.Share}).validate(); err != nil {
		return err
	}
	if err := r.config("0.0.0.0").Validate(); err != nil {
		return &FieldError{Field: "nexthops/health_check", Msg: err.Error()}
	}
	return nil
}

func (r RoutedVIP) config(addr string) router.Config {
	return router.Config{Owner: r.Owner, Address: addr, Nexthops: r.Nexthops, Check: r.Check, Hash: r.Hash}
}

func (h *Host) routedFile(owner string) string { return h.p("routed", owner+".json") }

// ApplyRoutedVIP claims the address (allocating it under the host lock,
// like ClaimVIP) and writes the router's config for it. It returns the
// address; the claim stays if writing the config fails.
func (h *Host) ApplyRoutedVIP(ctx context.Context, r RoutedVIP) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	addr, err := h.claim(ctx, r.Owner, r.Share, r.Pool, r.Address, false, nil)
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r.config(addr), "", "  ")
	if err != nil {
		return addr, err
	}
	if err := h.T.WriteFile(ctx, h.routedFile(r.Owner), append(b, '\n')); err != nil {
		return addr, fmt.Errorf("%s: routed VIP %s: %w", h.T, addr, err)
	}
	return addr, nil
}

// ReadRoutedVIP returns owner's routed VIP as the router sees it: its
// config, claimed by owner (on addr, unless addr is ""). It returns nil
// when nothing of it is left: no config, and no claim of owner's on addr.
// Part of it left is a *Drift: a config lbhost cannot read back, of
// another address or without its claim, or the claim without a config (a
// destroy removes either).
func (h *Host) ReadRoutedVIP(ctx context.Context, owner, addr string) (*router.Config, error) {
	if !ValidOwner(owner) {
		return nil, &FieldError{Field: "owner", Msg: fmt.Sprintf("%q is not a valid owner", owner)}
	}
	if err := h.needDir(); err != nil {
		return nil, err
	}
	b, err := h.T.ReadFile(ctx, h.routedFile(owner))
	if transport.IsNotExist(err) {
		if addr == "" {
			return nil, nil
		}
		claimed, err := h.claimedBy(ctx, owner, addr)
		if err != nil || !claimed {
			return nil, err
		}
		return nil, &Drift{Reason: fmt.Sprintf("%s is claimed by %s but its routed VIP config is gone", addr, owner)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	c, err := router.Parse(b)
	if err != nil || !ValidOwner(c.Owner) {
		return nil, &Drift{Reason: "routed VIP config " + notLbhosts(h.routedFile(owner))}
	}
	if c.Owner != owner {
		return nil, &Drift{Reason: fmt.Sprintf("routed VIP config %s.json changed outside lbhost: it holds the routed VIP of %s", owner, c.Owner)}
	}
	if addr != "" && c.Address != addr {
		return nil, &Drift{Reason: fmt.Sprintf("routed VIP config %s.json routes %s, not %s", owner, c.Address, addr)}
	}
	claimed, err := h.claimedBy(ctx, owner, c.Address)
	if err != nil {
		return nil, err
	}
	if !claimed {
		return nil, &Drift{Reason: fmt.Sprintf("%s is routed for %s but not claimed by it", c.Address, owner)}
	}
	return &c, nil
}

// claimedBy reports whether owner claims addr.
func (h *Host) claimedBy(ctx context.Context, owner, addr string) (bool, error) {
	claim, err := h.T.ReadFile(ctx, h.claimFile(addr))
	if transport.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", h.T, err)
	}
	return parseClaimants(claim).has(owner), nil
}

// DeleteRoutedVIP removes owner's router config (the router then removes
// the route) and its claim on addr, if still owner's.
func (h *Host) DeleteRoutedVIP(ctx context.Context, owner, addr string) error {
	if !ValidOwner(owner) {
		return &FieldError{Field: "owner", Msg: fmt.Sprintf("%q is not a valid owner", owner)}
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := h.T.Remove(ctx, h.routedFile(owner)); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if addr == "" {
		return nil
	}
	_, err = h.unclaim(ctx, owner, addr)
	return err
}
