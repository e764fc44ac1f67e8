package annotations

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"unicode"
)

// Keys of MetalLB's annotations tfccm reads with compat { metallb = true }:
// the metallb.universe.tf/ forms and the metallb.io/ forms of newer
// releases. They are not tfccm.io/ annotations, so they are not declared:
// their values are parsed by the tfccm.io/ equivalent's parser (GetFrom).
var (
	MetalLBLoadBalancerIPs = []string{"metallb.universe.tf/loadBalancerIPs", "metallb.io/loadBalancerIPs"}
	MetalLBAllowSharedIP   = []string{"metallb.universe.tf/allow-shared-ip", "metallb.io/allow-shared-ip"}
	MetalLBAddressPool     = []string{"metallb.universe.tf/address-pool", "metallb.io/address-pool"}
)

// GetFrom parses the annotation named name (another controller's key that
// means the same as k) with k's parser; errors name that key.
func (k Key[T]) GetFrom(annotations map[string]string, name string) (T, bool, error) {
	var zero T
	raw, ok := annotations[name]
	if !ok {
		return zero, false, nil
	}
	v, err := k.parse(raw)
	if err != nil {
		return zero, true, fmt.Errorf("annotation %s: %w", name, err)
	}
	return v, true, nil
}

// parseIPs accepts one address, or two of different families, separated
// by a comma.
func parseIPs(s string) ([]netip.Addr, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%s has %d addresses; at most two (one IPv4, one IPv6)", Quote(s), len(parts))
	}
	var out []netip.Addr
	for _, p := range parts {
		a, err := parseIP(p)
		if err != nil {
			return nil, err
		}
		if len(out) == 1 && out[0].Is4() == a.Is4() {
			return nil, fmt.Errorf("%s has two addresses of one family; give at most one IPv4 and one IPv6 address", Quote(s))
		}
		out = append(out, a)
	}
	return out, nil
}

// parseSharingKey accepts any key MetalLB does (a non-empty string), up to
// 253 printable characters: it is compared, hashed, never written out.
func parseSharingKey(s string) (string, error) {
	if s == "" || len(s) > 253 {
		return "", fmt.Errorf("%s must be 1-253 characters", Quote(s))
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "", fmt.Errorf("%s contains a non-printable character", Quote(s))
		}
	}
	return s, nil
}

// poolRE is config's pool name rule (config.AddressPool.Name).
var poolRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

var parsePoolName = matching(poolRE, "an address pool name (1-63 lowercase letters, digits and '-')")

// The address annotations (docs/address-pools.md), one line each (declare).
var (
	// LoadBalancerIPs requests one address per family.
	LoadBalancerIPs = declare(Prefix+"load-balancer-ips", "list of netip.Addr", "10.252.0.10,2001:db8::10", parseIPs, "Requests these addresses for the load balancer: one, or one IPv4 and one IPv6 separated by a comma. Where tfccm allocates (`load_balancer.address_pool`), an address outside every pool, or held by another Service that does not share it, is refused with an Event naming the Service that has it. Reaches the template as `service.load_balancer_ips` (and the first as `service.load_balancer_ip`). Replaces `tfccm.io/load-balancer-ip` and the deprecated `spec.loadBalancerIP` (setting two of them to different addresses is an error).")
	// AllowSharedIP lets Services with the same key share one address.
	AllowSharedIP = declare(Prefix+"allow-shared-ip", "string", "dns", parseSharingKey, "Services with the same key may share one address (MetalLB's rules): no two of them use the same port and protocol, and a Service with `externalTrafficPolicy: Local` shares only with Services of the same selector. Each keeps its own frontends; deleting one leaves the others served. A key is the tenant's and shares only among the Services of one namespace: the same key in another namespace gets another address, unless the address's pool has `share_across_namespaces` (the admin's choice) or the key is set with MetalLB's own annotation under `compat { metallb = true }` (MetalLB's cluster-wide rule; Services sharing an address must then all use that annotation). A Service that breaks a rule gets an Event naming the Service it conflicts with, and nothing is applied. Needs `load_balancer.address_pool`, or the shared address chosen with `tfccm.io/load-balancer-ips` (docs/address-pools.md).")
	// AddressPool picks the pool the address comes from.
	AddressPool = declare(Prefix+"address-pool", "string", "web", parsePoolName, "Allocates the load balancer's address from this `load_balancer.address_pool` (also one with `auto_assign = false`). A pool the admin restricted with `namespaces`, `namespace_selectors` or `service_selectors` serves only the Services it selects, named or not (MetalLB's serviceAllocation rule): naming another team's pool, or requesting one of its addresses, is refused with an Event, and nothing is applied. An unknown pool is an error.")
)
