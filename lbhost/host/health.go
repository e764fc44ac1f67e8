// Health as the host sees it: HAProxy's servers, routed VIPs' next hops,
// layer-4 backends.

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/router"
)

// Backend health as the load balancer itself sees it: HAProxy's server
// states for a frontend, the router's kernel route for a routed VIP, the
// router's nftables DNAT targets for a layer-4 load balancer. All are read
// without the host's lock and change nothing.

// BackendHealth is one backend of a load balancer: a server of a
// frontend (Name is its node name) or a next hop of a routed VIP (Name is
// its address).
type BackendHealth struct {
	Name    string
	Address string
	Healthy bool
}

// FrontendHealth returns the servers of load balancer name with the
// running HAProxy's view of their health (none when HAProxy does not run
// it).
func (h *Host) FrontendHealth(ctx context.Context, name string) ([]BackendHealth, error) {
	if !haproxy.ValidName(name) {
		return nil, fmt.Errorf("name %q is not a load balancer name", name)
	}
	if err := h.needDir(); err != nil {
		return nil, err
	}
	dump, err := h.masterCLI(ctx, "@1 show servers state")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(dump, "1\n") {
		return nil, fmt.Errorf("%s: HAProxy's show servers state answered %q", h.T, firstLine(dump))
	}
	var out []BackendHealth
	for _, s := range haproxy.ParseServerHealth([]byte(dump), name) {
		out = append(out, BackendHealth{Name: s.Name, Address: s.Address, Healthy: s.Healthy})
	}
	return out, nil
}

// RoutedVIPHealth returns the next hops of owner's routed VIP, healthy
// when the router routes the VIP to them (it routes only to the hops that
// pass the check); none when the routed VIP does not exist or is not in
// effect (ReadRoutedVIP's *Drift).
func (h *Host) RoutedVIPHealth(ctx context.Context, owner string) ([]BackendHealth, error) {
	c, err := h.ReadRoutedVIP(ctx, owner, "")
	var drift *Drift
	if errors.As(err, &drift) {
		return nil, nil
	}
	if err != nil || c == nil {
		return nil, err
	}
	out, err := h.T.Run(ctx, nil, "ip", "-j", "-4", "route", "show", "exact", c.Address+"/32", "proto", router.Proto)
	if err != nil {
		return nil, fmt.Errorf("%s: read the route to %s: %w", h.T, c.Address, err)
	}
	routed, err := routeHops(out)
	if err != nil {
		return nil, fmt.Errorf("%s: parse the route to %s: %w", h.T, c.Address, err)
	}
	var hs []BackendHealth
	for _, hop := range c.Nexthops {
		hs = append(hs, BackendHealth{Name: hop, Address: hop, Healthy: slices.Contains(routed, hop)})
	}
	return hs, nil
}

// routeHops is the gateways of `ip -j route show exact` output: the route's
// own gateway, or its ECMP next hops' ones.
func routeHops(out []byte) ([]string, error) {
	var routes []struct {
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, err
	}
	var hops []string
	for _, r := range routes {
		if r.Gateway != "" {
			hops = append(hops, r.Gateway)
		}
		for _, n := range r.Nexthops {
			if n.Gateway != "" {
				hops = append(hops, n.Gateway)
			}
		}
	}
	return hops, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// L4FrontendHealth returns the backends of layer-4 load balancer name,
// healthy when lbhost-router forwards new connections to them (its
// nftables chain DNATs to the backends that pass their check); none when
// the load balancer does not exist. A config the router has not loaded is
// an *L4Drift: its rules say nothing about the config's backends.
func (h *Host) L4FrontendHealth(ctx context.Context, name string) ([]BackendHealth, error) {
	c, loaded, err := h.readL4(ctx, name)
	if err != nil || c == nil {
		return nil, err
	}
	var out []BackendHealth
	for _, b := range c.Backends {
		out = append(out, BackendHealth{Name: b.Name, Address: b.Address, Healthy: slices.Contains(loaded.Targets[name], b.Address)})
	}
	return out, nil
}
