// keepalived VRRP instances on the host: fragments, reloads, read back.

package host

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// Keepalived says where keepalived's files are on the host. Its main
// configuration must include lbhost's fragments:
//
//	include <Dir>/keepalived/*.conf
type Keepalived struct {
	Binary  string // "keepalived"
	Config  string // main configuration, e.g. /etc/keepalived/keepalived.conf
	PIDFile string // the parent process's pid file, e.g. /run/keepalived.pid
}

var rePID = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

func (h *Host) vrrpFragment(owner string) string { return h.p("keepalived", owner+".conf") }

// ReadVRRP returns owner's VRRP instance as it is on the host, nil when
// absent, or a *Drift when it cannot be read back.
func (h *Host) ReadVRRP(ctx context.Context, owner string) (*keepalived.Instance, error) {
	if !ValidOwner(owner) {
		return nil, &FieldError{Field: "owner", Msg: fmt.Sprintf("%q is not a valid owner", owner)}
	}
	data, err := h.T.ReadFile(ctx, h.vrrpFragment(owner))
	if transport.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	in, err := keepalived.Parse(data)
	if err != nil {
		return nil, &Drift{Reason: "keepalived fragment " + notLbhosts(h.vrrpFragment(owner))}
	}
	if in.Owner != owner { // a valid owner: Parse checked it
		return nil, &Drift{Reason: fmt.Sprintf("keepalived fragment of %s changed outside lbhost: it holds the instance of %s", owner, in.Owner)}
	}
	return &in, nil
}

// applyVRRP writes the instance, checks keepalived's whole configuration
// (keepalived -t) and reloads keepalived; a rejected configuration is
// rolled back. Callers hold the lock.
func (h *Host) applyVRRP(ctx context.Context, in keepalived.Instance) error {
	file := h.vrrpFragment(in.Owner)
	old, rerr := h.T.ReadFile(ctx, file)
	exists := rerr == nil
	if rerr != nil && !transport.IsNotExist(rerr) {
		return fmt.Errorf("%s: %w", h.T, rerr)
	}
	if prev, err := keepalived.Parse(old); exists && err == nil && prev.Address == in.Address && in.AddressBits == 0 {
		in.AddressBits = prev.AddressBits // an adopted VIP keeps its prefix length
	}
	data, err := keepalived.Render(in)
	if err != nil {
		return &FieldError{Field: strings.SplitN(err.Error(), ":", 2)[0], Msg: err.Error()}
	}
	if exists && bytes.Equal(old, data) {
		return nil
	}
	if err := h.T.WriteFile(ctx, file, data); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if _, err := h.T.Run(ctx, nil, h.Keepalived.Binary, "-t", "-f", h.Keepalived.Config); err != nil {
		err = ownOutput(err, file)
		if exists {
			rerr = h.T.WriteFile(ctx, file, old)
		} else {
			rerr = h.T.Remove(ctx, file)
		}
		if rerr != nil {
			return fmt.Errorf("keepalived rejected the configuration: %w; restoring the previous fragment failed too: %v", err, rerr)
		}
		return fmt.Errorf("keepalived rejected the configuration: %w; the previous configuration was restored and keepalived was not reloaded", err)
	}
	if err := h.reloadKeepalived(ctx); err != nil {
		return &PartialError{Err: err}
	}
	return nil
}

func (h *Host) reloadKeepalived(ctx context.Context) error {
	b, err := h.T.ReadFile(ctx, h.Keepalived.PIDFile)
	if err != nil {
		return fmt.Errorf("%s: keepalived is not running (pid file %s): %w", h.T, h.Keepalived.PIDFile, err)
	}
	pid := strings.TrimSpace(string(b))
	if !rePID.MatchString(pid) {
		return fmt.Errorf("%s: keepalived pid file %s does not hold a process id (its content is not shown)", h.T, h.Keepalived.PIDFile)
	}
	if _, err := h.T.Run(ctx, nil, "kill", "-HUP", pid); err != nil {
		return fmt.Errorf("reload keepalived: %w", err)
	}
	return nil
}

// UpdateVRRP changes an existing instance in place (priority, peers...).
func (h *Host) UpdateVRRP(ctx context.Context, in keepalived.Instance) error {
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return h.applyVRRP(ctx, in)
}

// deleteVRRP removes owner's instance and reloads keepalived. Callers hold
// the lock.
func (h *Host) deleteVRRP(ctx context.Context, owner string) error {
	file := h.vrrpFragment(owner)
	if _, err := h.T.ReadFile(ctx, file); transport.IsNotExist(err) {
		return nil
	}
	if err := h.T.Remove(ctx, file); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	return h.reloadKeepalived(ctx)
}
