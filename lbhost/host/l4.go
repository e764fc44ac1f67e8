// Layer-4 load balancers on the host: the config files, waiting for the
// router to load them, L4Drift.

package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/l4"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// L4Drift is a layer-4 load balancer whose config is on the host but not
// in effect (the host's lbhost-router has not loaded it, or its table was
// changed and not restored).
type L4Drift struct{ Reason string }

func (d *L4Drift) Error() string { return d.Reason }

// L4Wait is how long ApplyL4 waits for lbhost-router to load a config.
var L4Wait = 15 * time.Second

func (h *Host) l4File(name string) string { return h.p("l4", name+".json") }

// sctpFiles are present where the kernel can carry SCTP: its SCTP stack
// (the backends need it) and conntrack's SCTP tracker (NAT needs it).
var sctpFiles = []string{"/proc/sys/net/sctp/addip_enable", "/proc/sys/net/netfilter/nf_conntrack_sctp_timeout_established"}

// CheckL4 is the host-side check of a layer-4 load balancer that can run
// at plan time: SCTP ports need a kernel with SCTP.
func (h *Host) CheckL4(ctx context.Context, c l4.Config) error {
	for i, p := range c.Ports {
		if p.Protocol != "SCTP" {
			continue
		}
		for _, f := range sctpFiles {
			if _, err := h.T.ReadFile(ctx, f); transport.IsNotExist(err) {
				return &FieldError{Field: fmt.Sprintf("ports[%d].protocol", i), Msg: fmt.Sprintf(
					"SCTP is not available on %s: its kernel has no SCTP support (%s is missing; load the sctp module or use a kernel built with CONFIG_IP_SCTP and CONFIG_NF_CT_PROTO_SCTP)", h.T, f)}
			} else if err != nil {
				return fmt.Errorf("%s: check SCTP support: %w", h.T, err)
			}
		}
	}
	return nil
}

// ApplyL4 writes c's config for the host's lbhost-router (under the host
// lock, refusing a VIP:port/protocol another layer-4 load balancer uses)
// and waits until the router has loaded it. A config the router has not
// loaded in time stays on the host (a PartialError): the next apply
// checks again.
func (h *Host) ApplyL4(ctx context.Context, c l4.Config) error {
	if err := c.Validate(); err != nil {
		return &FieldError{Field: "config", Msg: err.Error()}
	}
	if err := h.CheckL4(ctx, c); err != nil {
		return err
	}
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	if err := h.checkL4PortsFree(ctx, c); err != nil {
		unlock()
		return err
	}
	err = h.T.WriteFile(ctx, h.l4File(c.Name), data)
	unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	return h.waitL4(ctx, c)
}

// waitL4 polls the host's table until lbhost-router has loaded c.
func (h *Host) waitL4(ctx context.Context, c l4.Config) error {
	want := l4.ConfigHash(c)
	deadline := time.Now().Add(L4Wait)
	for {
		got, err := h.loadedL4(ctx)
		if err == nil && l4.ConfigOfSignature(got.Signatures[c.Name]) == want {
			return nil
		}
		if time.Now().After(deadline) {
			reason := fmt.Sprintf("lbhost-router on %s has not loaded layer-4 load balancer %s within %s: is it running with -l4 %s?", h.T, c.Name, L4Wait, h.p("l4"))
			if err != nil {
				reason += " (" + err.Error() + ")"
			}
			return &PartialError{Err: fmt.Errorf("%s", reason)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// loadedL4 lists what lbhost-router has loaded; no table is an empty one.
func (h *Host) loadedL4(ctx context.Context) (l4.Loaded, error) {
	out, err := h.T.Run(ctx, nil, l4.ListArgs()...)
	if err != nil {
		if strings.Contains(err.Error(), "No such file or directory") {
			return l4.Loaded{Signatures: map[string]string{}}, nil
		}
		return l4.Loaded{}, fmt.Errorf("%s: %w", h.T, err)
	}
	return l4.ParseLoaded(out)
}

// checkL4PortsFree refuses a VIP:port/protocol another layer-4 load
// balancer listens on.
func (h *Host) checkL4PortsFree(ctx context.Context, c l4.Config) error {
	files, err := h.T.ReadFiles(ctx, h.p("l4"))
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	for n, data := range files {
		other, ok := strings.CutSuffix(n, ".json")
		if !ok || other == c.Name {
			continue
		}
		oc, err := l4.Parse(data)
		if err != nil || oc.Address != c.Address {
			continue
		}
		for i, p := range c.Ports {
			for _, op := range oc.Ports {
				if op.Protocol == p.Protocol && op.Port == p.Port {
					return &FieldError{Field: fmt.Sprintf("ports[%d].port", i), Msg: fmt.Sprintf(
						"%s:%d/%s is already used by load balancer %s on %s", c.Address, p.Port, p.Protocol, other, h.T)}
				}
			}
		}
	}
	return nil
}

// ReadL4 returns name's config as it is on the host, nil when it is gone.
// A config that is unreadable, or that lbhost-router has not loaded, is an
// *L4Drift.
func (h *Host) ReadL4(ctx context.Context, name string) (*l4.Config, error) {
	c, _, err := h.readL4(ctx, name)
	return c, err
}

// readL4 is ReadL4 with the table it checked the config against.
func (h *Host) readL4(ctx context.Context, name string) (*l4.Config, l4.Loaded, error) {
	if !l4.ValidName(name) {
		return nil, l4.Loaded{}, &FieldError{Field: "name", Msg: fmt.Sprintf("%q is not a load balancer name", name)}
	}
	if err := h.needDir(); err != nil {
		return nil, l4.Loaded{}, err
	}
	b, err := h.T.ReadFile(ctx, h.l4File(name))
	if transport.IsNotExist(err) {
		return nil, l4.Loaded{}, nil
	}
	if err != nil {
		return nil, l4.Loaded{}, fmt.Errorf("%s: %w", h.T, err)
	}
	c, err := l4.Parse(b)
	if err != nil {
		return nil, l4.Loaded{}, &L4Drift{Reason: "config " + notLbhosts(h.l4File(name))}
	}
	if c.Name != name { // a valid name: Parse checked it
		return nil, l4.Loaded{}, &L4Drift{Reason: fmt.Sprintf("config %s.json changed outside lbhost: it holds load balancer %s", name, c.Name)}
	}
	loaded, err := h.loadedL4(ctx)
	if err != nil {
		return nil, l4.Loaded{}, err
	}
	if l4.ConfigOfSignature(loaded.Signatures[name]) != l4.ConfigHash(c) {
		return nil, l4.Loaded{}, &L4Drift{Reason: fmt.Sprintf("layer-4 load balancer %s is not loaded in table %s on %s (is lbhost-router running with -l4?)", name, l4.NftTable, h.T)}
	}
	return &c, loaded, nil
}

// DeleteL4 removes name's config; lbhost-router then removes its rules.
func (h *Host) DeleteL4(ctx context.Context, name string) error {
	if !l4.ValidName(name) {
		return &FieldError{Field: "name", Msg: fmt.Sprintf("%q is not a load balancer name", name)}
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := h.T.Remove(ctx, h.l4File(name)); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	return nil
}
