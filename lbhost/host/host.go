// Host, one load-balancer host reached through a transport: its directory, its lock, and the errors it reports.

package host

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// Host is one load-balancer host and the layout of lbhost's files on it:
//
//	Dir/base.cfg          HAProxy's global and defaults sections (the host's, not lbhost's)
//	Dir/fragments/N.cfg   one load balancer each (lbhost)
//	Dir/claims/ADDR       VIP claims: the owner's name (lbhost)
//	Dir/lock              flock serializing every change
//	Dir/server-state      HAProxy's server-state-file
//	Dir/master.sock       HAProxy's master CLI (haproxy -W -S)
//	Dir/keepalived/O.conf VRRP instances of VIPs with VRRP (lbhost)
//	Dir/bgp/O.json        BGP announcements, kept by lbhost-router -announce (lbhost)
//
// This is the local cloud's layout (examples/local/infra), so lbhost and
// the infra's scripts share one lock.
type Host struct {
	T   transport.Transport
	Dir string
	// HAProxy is the haproxy binary on the host ("haproxy" by default).
	HAProxy string
	// Keepalived is used by VIPs with VRRP.
	Keepalived Keepalived
	// FRR is used by BGP speakers.
	FRR FRR
	// Reserved lists addresses no VIP ever gets on this host: allocation
	// skips them and a requested one is refused (the other hosts' own
	// addresses, which this host cannot see, a gateway). Entries that are
	// not IP addresses (host names) are ignored.
	Reserved []string
}

// New checks dir and returns a Host. dir may be empty for a host that
// only gets routes.
func New(t transport.Transport, dir string) (*Host, error) {
	if dir != "" {
		if err := transport.CheckPath(dir); err != nil {
			return nil, fmt.Errorf("config_dir: %w", err)
		}
	}
	return &Host{T: t, Dir: dir, HAProxy: "haproxy", Keepalived: Keepalived{
		Binary: "keepalived", Config: "/etc/keepalived/keepalived.conf", PIDFile: "/run/keepalived.pid",
	}}, nil
}

func (h *Host) p(elem ...string) string { return path.Join(append([]string{h.Dir}, elem...)...) }

// needDir is the error of a frontend or VIP operation on a host without
// config_dir.
func (h *Host) needDir() error {
	if h.Dir == "" {
		return fmt.Errorf("%s: the provider's config_dir is required for load balancers and VIPs", h.T)
	}
	return nil
}

func (h *Host) lock(ctx context.Context) (func(), error) {
	if err := h.needDir(); err != nil {
		return nil, err
	}
	unlock, err := h.T.Lock(ctx, h.p("lock"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	return unlock, nil
}

// FieldError re-exports the field-naming error of the haproxy package for
// errors found on the host (an address taken, a port in use).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// PartialError is a change that is on the host but not (yet) in effect:
// the fragment was written and checked, the reload failed. The provider
// keeps such a change in state so the next apply resumes it.
type PartialError struct{ Err error }

func (e *PartialError) Error() string {
	return e.Err.Error() + " (the new configuration is on the host; the next apply reloads it)"
}
func (e *PartialError) Unwrap() error { return e.Err }

// IsPartial reports whether err is a PartialError.
func IsPartial(err error) bool {
	var p *PartialError
	return errors.As(err, &p)
}
