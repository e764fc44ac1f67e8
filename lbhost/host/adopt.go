// Adopting a hand-made keepalived VRRP instance: reading it from the
// host's main keepalived configuration, and moving it into lbhost's own
// fragment with one reload, under its own name so keepalived keeps its
// state (the VIP never drops).

package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// ReadHandmade reads the hand-made vrrp_instance name from the host's
// main keepalived configuration (Keepalived.Config). An instance that is
// not there is an error wrapping keepalived.ErrNoInstance. Errors never
// quote the configuration.
func (h *Host) ReadHandmade(ctx context.Context, name string) (*keepalived.Handmade, error) {
	data, err := h.T.ReadFile(ctx, h.Keepalived.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: keepalived's main configuration %s cannot be read: %w", h.T, h.Keepalived.Config, err)
	}
	hm, err := keepalived.FindHandmade(data, h.Keepalived.Config, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	return &hm, nil
}

// IsNoInstance reports whether err is ReadHandmade's "not there".
func IsNoInstance(err error) bool { return errors.Is(err, keepalived.ErrNoInstance) }

// CheckHandmade compares a hand-made instance with the VIP that adopts it:
// the same address and virtual router id on the same interface, or an
// error naming both (nothing is changed on the host).
func CheckHandmade(hm *keepalived.Handmade, where fmt.Stringer, address string, vrid int, iface string) error {
	if hm.Address == address && hm.VirtualRouterID == vrid && hm.Interface == iface {
		return nil
	}
	return &FieldError{Field: "keepalived_instance", Msg: fmt.Sprintf(
		"the hand-made vrrp_instance %s on %s holds %s with virtual router id %d on %s; the VIP adopting it is %s with id %d on %s: nothing was changed",
		hm.Name, where, hm.Address, hm.VirtualRouterID, hm.Interface, address, vrid, iface)}
}

// backupFile is where adopt keeps the main configuration as it was.
func (h *Host) backupFile(name string) string {
	return h.Keepalived.Config + ".tfccm-adopted-" + name
}

// adoptVRRP moves the hand-made instance in.Name out of keepalived's main
// configuration into lbhost's fragment for in (same name, address and
// virtual router id; tfccm's priority, peers and timers): the main
// configuration is backed up, both files written, keepalived -t checks
// the result and one reload applies it. keepalived matches instances by
// name across a reload, so the holder stays MASTER and the VIP stays up.
// A rejected configuration is rolled back; an instance already moved
// (not in the main configuration) is written as applyVRRP writes it.
// Callers hold the lock.
func (h *Host) adoptVRRP(ctx context.Context, in keepalived.Instance) error {
	cfg := h.Keepalived.Config
	data, err := h.T.ReadFile(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s: keepalived's main configuration %s cannot be read: %w", h.T, cfg, err)
	}
	hm, err := keepalived.FindHandmade(data, cfg, in.Name)
	switch {
	case errors.Is(err, keepalived.ErrNoInstance):
		return h.applyVRRP(ctx, in) // moved before
	case err != nil:
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if err := CheckHandmade(&hm, h.T, in.Address, in.VirtualRouterID, in.Interface); err != nil {
		return err
	}
	in.AddressBits = hm.AddressBits // the VIP unchanged: no address removed and added at the reload
	frag, err := keepalived.Render(in)
	if err != nil {
		return &FieldError{Field: "vrrp", Msg: err.Error()}
	}
	file := h.vrrpFragment(in.Owner)
	if old, err := h.T.ReadFile(ctx, file); err == nil && !bytes.Equal(old, frag) {
		return fmt.Errorf("%s: %s exists already (another instance of %s): nothing was changed", h.T, file, in.Owner)
	} else if err != nil && !transport.IsNotExist(err) {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if err := h.T.WriteFile(ctx, h.backupFile(in.Name), data); err != nil {
		return fmt.Errorf("%s: back up keepalived's main configuration: %w", h.T, err)
	}
	rollback := func(cause error) error {
		errs := []error{h.T.WriteFile(ctx, cfg, data)}
		if err := h.T.Remove(ctx, file); err != nil && !transport.IsNotExist(err) {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%w; restoring %s (backup %s) failed too: %v", cause, cfg, h.backupFile(in.Name), err)
		}
		return fmt.Errorf("%w; %s was restored and keepalived was not reloaded", cause, cfg)
	}
	if err := h.T.WriteFile(ctx, file, frag); err != nil {
		return rollback(fmt.Errorf("%s: %w", h.T, err))
	}
	if err := h.T.WriteFile(ctx, cfg, hm.Without(data)); err != nil {
		return rollback(fmt.Errorf("%s: %w", h.T, err))
	}
	if _, err := h.T.Run(ctx, nil, h.Keepalived.Binary, "-t", "-f", cfg); err != nil {
		// Only lbhost's fragment's lines: the main configuration is the host's.
		return rollback(fmt.Errorf("keepalived rejected the configuration with vrrp_instance %s moved: %w", in.Name, ownOutput(err, file)))
	}
	if err := h.reloadKeepalived(ctx); err != nil {
		return &PartialError{Err: err}
	}
	return nil
}

// AdoptionOf reads the hand-made instance name on every host (all of them
// must answer and have it, with the same address, virtual router id and
// interface) and checks its address is in pool and neither it nor its id
// is another owner's: the allocation owner adopts, and the instance's
// VRRP interface. It only reads.
func AdoptionOf(ctx context.Context, hosts []*Host, name, owner string, pool netip.Prefix) (Allocation, string, error) {
	if len(hosts) == 0 {
		return Allocation{}, "", ErrNoHostReachable
	}
	var first *keepalived.Handmade
	var firstHost *Host
	for _, h := range hosts {
		hm, err := h.ReadHandmade(ctx, name)
		if err != nil {
			return Allocation{}, "", err
		}
		if first == nil {
			first, firstHost = hm, h
			continue
		}
		if hm.Address != first.Address || hm.VirtualRouterID != first.VirtualRouterID || hm.Interface != first.Interface {
			return Allocation{}, "", fmt.Errorf("vrrp_instance %s differs between the LB hosts: %s has %s with virtual router id %d on %s, %s has %s with id %d on %s; one instance must be alike on every host to be adopted",
				name, firstHost.T, first.Address, first.VirtualRouterID, first.Interface, h.T, hm.Address, hm.VirtualRouterID, hm.Interface)
		}
	}
	if err := CheckInPool(pool, first.Address); err != nil {
		return Allocation{}, "", fmt.Errorf("vrrp_instance %s holds %s: %w", name, first.Address, err)
	}
	r := Request{Owner: owner, Pool: pool, Interface: first.Interface}
	s := newSeen()
	for _, h := range hosts {
		if err := s.look(ctx, h, r); err != nil {
			return Allocation{}, "", err
		}
	}
	if cs := s.claims[first.Address]; !cs.admits(owner, "") {
		return Allocation{}, "", fmt.Errorf("vrrp_instance %s holds %s: %w", name, first.Address, usedBy(first.Address, owner, cs, hostsName{}))
	}
	if o, taken := s.ids[first.VirtualRouterID]; taken {
		return Allocation{}, "", fmt.Errorf("vrrp_instance %s has virtual router id %d, which lbhost's instance of %s uses on %s too", name, first.VirtualRouterID, o, first.Interface)
	}
	return Allocation{Address: first.Address, VirtualRouterID: first.VirtualRouterID}, first.Interface, nil
}
