// Standby VIPs: claimed but not configured while another speaker still
// announces the address (a migration from MetalLB), then announced in place.

package host

import (
	"context"
	"fmt"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// HasClaim reports whether owner claims addr on the host: what a standby
// VIP is.
func (h *Host) HasClaim(ctx context.Context, owner, addr string) (bool, error) {
	if err := h.needDir(); err != nil {
		return false, err
	}
	data, err := h.T.ReadFile(ctx, h.claimFile(addr))
	switch {
	case transport.IsNotExist(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", h.T, err)
	}
	return parseClaimants(data).has(owner), nil
}

// WithdrawVIP puts owner's VIP on addr back on standby: the claim stays,
// the address (or its VRRP instance, owner's or share's) goes, unless
// another owner shares the address: it stays announced for them.
func (h *Host) WithdrawVIP(ctx context.Context, owner, share, addr, iface string, vrrp bool) error {
	if !ValidInterface(iface) {
		return &FieldError{Field: "interface", Msg: fmt.Sprintf("%q is not an interface name", iface)}
	}
	if err := h.needDir(); err != nil {
		return err
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	data, err := h.T.ReadFile(ctx, h.claimFile(addr))
	if err != nil && !transport.IsNotExist(err) {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if cs := parseClaimants(data); len(cs.without(owner)) > 0 {
		return nil // shared (or someone else's): it stays
	}
	if vrrp {
		return h.deleteVRRP(ctx, VRRPOwner(owner, share))
	}
	has, err := h.hasAddress(ctx, addr, iface)
	if err != nil || !has {
		return err
	}
	if _, err := h.T.Run(ctx, nil, "ip", "addr", "del", hostPrefix(addr), "dev", iface); err != nil {
		return fmt.Errorf("withdraw VIP %s: %w", addr, err)
	}
	return nil
}
