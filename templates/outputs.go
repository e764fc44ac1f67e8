package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
)

// The output contract: what tfccm reads back from an applied workspace.
// docs/templates.md documents the exact types.

// ingressOutput is one element of a template's `ingress` output.
type ingressOutput struct {
	IP       *string `json:"ip"`
	Hostname *string `json:"hostname"`
	IPMode   *string `json:"ip_mode"`
}

// IngressStatus converts the `ingress` output into a LoadBalancerStatus,
// validating what a template returned.
func IngressStatus(outputs map[string]json.RawMessage) (*corev1.LoadBalancerStatus, error) {
	raw, ok := outputs["ingress"]
	if !ok {
		return nil, errors.New("the template has no `ingress` output")
	}
	var items []ingressOutput
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("output `ingress` is not a list of {ip, hostname, ip_mode}: %w", err)
	}
	status := &corev1.LoadBalancerStatus{}
	for i, it := range items {
		var ing corev1.LoadBalancerIngress
		if it.IP != nil && *it.IP != "" {
			if net.ParseIP(*it.IP) == nil {
				return nil, fmt.Errorf("output `ingress[%d].ip` %q is not an IP address", i, *it.IP)
			}
			ing.IP = *it.IP
		}
		if it.Hostname != nil {
			ing.Hostname = *it.Hostname
		}
		if ing.IP == "" && ing.Hostname == "" {
			return nil, fmt.Errorf("output `ingress[%d]` has neither ip nor hostname", i)
		}
		if it.IPMode != nil && *it.IPMode != "" {
			mode := corev1.LoadBalancerIPMode(*it.IPMode)
			if mode != corev1.LoadBalancerIPModeVIP && mode != corev1.LoadBalancerIPModeProxy {
				return nil, fmt.Errorf("output `ingress[%d].ip_mode` %q must be VIP or Proxy", i, *it.IPMode)
			}
			if ing.IP != "" {
				ing.IPMode = &mode
			}
		}
		status.Ingress = append(status.Ingress, ing)
	}
	return status, nil
}

// RouteOutput is one element of the routes module's `routes` output (a map
// keyed by route name).
type RouteOutput struct {
	DestinationCIDR string  `json:"destination_cidr"`
	TargetNode      *string `json:"target_node"`
	Blackhole       bool    `json:"blackhole"`
}

// DecodeRoutes decodes the routes module's `routes` output.
func DecodeRoutes(outputs map[string]json.RawMessage) (map[string]RouteOutput, error) {
	raw, ok := outputs["routes"]
	if !ok {
		return nil, errors.New("the routes template has no `routes` output")
	}
	var out map[string]RouteOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("output `routes` is not a map of {destination_cidr, target_node, blackhole}: %w", err)
	}
	if out == nil {
		out = map[string]RouteOutput{}
	}
	return out, nil
}
