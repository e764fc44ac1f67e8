// Which host holds a VIP: the address of a VRRP instance on its interface.

package host

import (
	"context"
	"fmt"
)

// VIPHolding is a VRRP VIP as one host has it right now.
type VIPHolding struct {
	// Address is the instance's VIP ("" when the host runs no instance
	// of the owner's).
	Address string
	// Held is whether the address is on the instance's interface:
	// keepalived adds it only while the host is the VRRP master.
	Held bool
}

// HoldsVIP reads whether the host holds the VIP of owner's (or, with
// share, of the shared) VRRP instance: one read of the instance's
// fragment and one `ip -j addr show dev <interface>`. It takes no lock
// and changes nothing.
func (h *Host) HoldsVIP(ctx context.Context, owner, share string) (VIPHolding, error) {
	if err := h.needDir(); err != nil {
		return VIPHolding{}, err
	}
	in, err := h.ReadVRRP(ctx, VRRPOwner(owner, share))
	if err != nil || in == nil {
		return VIPHolding{}, err
	}
	if !ValidInterface(in.AddressInterface) {
		return VIPHolding{}, &Drift{Reason: fmt.Sprintf("the VRRP instance of %s names no interface for its VIP", owner)}
	}
	held, err := h.hasAddress(ctx, in.Address, in.AddressInterface)
	if err != nil {
		return VIPHolding{}, fmt.Errorf("%s: %w", h.T, err)
	}
	return VIPHolding{Address: in.Address, Held: held}, nil
}
