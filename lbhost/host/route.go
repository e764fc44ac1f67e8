// Kernel routes on the host: apply, read back and delete.

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
)

// Route is a kernel route: destination via gateway, or a blackhole.
type Route struct {
	Destination string
	Gateway     string // "" for a blackhole
	Blackhole   bool
}

func (r Route) validate() (netip.Prefix, error) {
	p, err := netip.ParsePrefix(r.Destination)
	if err != nil || p.Masked() != p {
		return p, &FieldError{Field: "destination", Msg: fmt.Sprintf("%q is not a network CIDR such as 10.244.1.0/24", r.Destination)}
	}
	if r.Blackhole {
		if r.Gateway != "" {
			return p, &FieldError{Field: "gateway", Msg: "a blackhole route has no gateway"}
		}
		return p, nil
	}
	g, err := netip.ParseAddr(r.Gateway)
	if err != nil || g.String() != r.Gateway {
		return p, &FieldError{Field: "gateway", Msg: fmt.Sprintf("%q is not an IP address", r.Gateway)}
	}
	if g.Is4() != p.Addr().Is4() {
		return p, &FieldError{Field: "gateway", Msg: fmt.Sprintf("%s is not of the same family as %s", r.Gateway, r.Destination)}
	}
	return p, nil
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "-4"
	}
	return "-6"
}

// ApplyRoute creates or changes the route in place (ip route replace).
func (h *Host) ApplyRoute(ctx context.Context, r Route) error {
	p, err := r.validate()
	if err != nil {
		return err
	}
	argv := []string{"ip", family(p), "route", "replace", r.Destination, "via", r.Gateway}
	if r.Blackhole {
		argv = []string{"ip", family(p), "route", "replace", "blackhole", r.Destination}
	}
	if _, err := h.T.Run(ctx, nil, argv...); err != nil {
		return fmt.Errorf("route %s: %w", r.Destination, err)
	}
	return nil
}

// ReadRoute returns the route to destination as the kernel has it (main
// table), or nil.
func (h *Host) ReadRoute(ctx context.Context, destination string) (*Route, error) {
	p, err := (Route{Destination: destination, Blackhole: true}).validate()
	if err != nil {
		return nil, err
	}
	out, err := h.T.Run(ctx, nil, "ip", "-j", family(p), "route", "show", "exact", destination)
	if err != nil {
		return nil, fmt.Errorf("read route %s: %w", destination, err)
	}
	var routes []struct {
		Type    string `json:"type"`
		Dst     string `json:"dst"`
		Gateway string `json:"gateway"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("%s: parse ip -j route: %w", h.T, err)
	}
	for _, rt := range routes {
		if rt.Type == "blackhole" {
			return &Route{Destination: destination, Blackhole: true}, nil
		}
		if rt.Gateway != "" {
			return &Route{Destination: destination, Gateway: rt.Gateway}, nil
		}
	}
	return nil, nil
}

// DeleteRoute removes the route only if it is still the one described by r
// (same gateway, or still a blackhole).
func (h *Host) DeleteRoute(ctx context.Context, r Route) error {
	p, err := r.validate()
	if err != nil {
		return err
	}
	cur, err := h.ReadRoute(ctx, r.Destination)
	if err != nil || cur == nil || *cur != r {
		return err
	}
	argv := []string{"ip", family(p), "route", "del", r.Destination, "via", r.Gateway}
	if r.Blackhole {
		argv = []string{"ip", family(p), "route", "del", "blackhole", r.Destination}
	}
	if _, err := h.T.Run(ctx, nil, argv...); err != nil {
		return fmt.Errorf("delete route %s: %w", r.Destination, err)
	}
	return nil
}
