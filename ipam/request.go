package ipam

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/annotations"
)

// Port is one port a Service uses on its address.
type Port struct {
	Protocol string
	Port     int32
}

func (p Port) String() string { return fmt.Sprintf("%d/%s", p.Port, p.Protocol) }

// Request is what one Service asks of the allocator.
type Request struct {
	// IPs are the addresses the Service chose, at most one per family.
	IPs []netip.Addr
	// Pool is the pool the Service named ("" = picked by selectors).
	Pool string
	// Sharing is the Service's sharing key ("" = shares with no one).
	// A key shares an address only among Services of one namespace,
	// unless the address's pool has share_across_namespaces or
	// MetalLBSharing is set.
	Sharing string
	// MetalLBSharing: the key came from MetalLB's allow-shared-ip
	// annotation (compat { metallb = true }), which keeps MetalLB's rule:
	// one key, one address group, cluster-wide.
	MetalLBSharing bool
	// Backend is the Service's selector when its externalTrafficPolicy is
	// Local ("" otherwise): sharing Services must agree on it.
	Backend string
	Ports   []Port
	// Families are the IP families wanted, primary first; Require says
	// every one must be served (RequireDualStack), else the first.
	Families []corev1.IPFamily
	Require  bool
	// Prefer says a second family is welcome but not needed
	// (PreferDualStack).
	Prefer bool
	// Namespace and Labels pick pools by their selectors.
	Namespace string
	Labels    labels.Set
	// Deprecated names a deprecated field the request came from, for a
	// Normal Event ("" = none).
	Deprecated string
	// Current are the addresses in the Service's status (given by tfccm
	// before a restart, or by the controller it moves from): kept when
	// they are in a pool the Service may use and free.
	Current []netip.Addr
}

// RequestOf reads a Service's request: chosen addresses from
// tfccm.io/load-balancer-ips, tfccm.io/load-balancer-ip or
// spec.loadBalancerIP (and MetalLB's annotations when metallb is set), its
// pool, sharing key, ports and families. Two sources that disagree are an
// error naming both.
func RequestOf(svc *corev1.Service, metallb bool) (Request, error) {
	a := svc.Annotations
	r := Request{Namespace: svc.Namespace, Labels: labels.Set(svc.Labels)}
	var err error
	if r.IPs, r.Deprecated, err = chosenIPs(svc, metallb); err != nil {
		return r, err
	}
	if r.Pool, _, err = firstOf(a, metallb, annotations.AddressPool, annotations.MetalLBAddressPool); err != nil {
		return r, err
	}
	var from string
	if r.Sharing, from, err = firstOf(a, metallb, annotations.AllowSharedIP, annotations.MetalLBAllowSharedIP); err != nil {
		return r, err
	}
	r.MetalLBSharing = r.Sharing != "" && from != annotations.AllowSharedIP.Name
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		r.Backend = labels.Set(svc.Spec.Selector).String()
	}
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		r.Ports = append(r.Ports, Port{proto, p.Port})
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			r.Current = append(r.Current, ip.Unmap())
		}
	}
	r.Families, r.Require, r.Prefer = familiesOf(svc)
	return r, nil
}

// chosenIPs reads the addresses a Service chose and, when it chose them
// with spec.loadBalancerIP, that deprecated field's name. Two sources that
// disagree are an error naming both.
func chosenIPs(svc *corev1.Service, metallb bool) ([]netip.Addr, string, error) {
	a := svc.Annotations
	type source struct {
		name string
		ips  []netip.Addr
	}
	var sources []source
	if ips, ok, err := annotations.LoadBalancerIPs.Get(a); err != nil {
		return nil, "", err
	} else if ok {
		sources = append(sources, source{"annotation " + annotations.LoadBalancerIPs.Name, ips})
	}
	if ip, ok, err := annotations.LoadBalancerIP.Get(a); err != nil {
		return nil, "", err
	} else if ok {
		sources = append(sources, source{"annotation " + annotations.LoadBalancerIP.Name, []netip.Addr{ip}})
	}
	if metallb {
		for _, k := range annotations.MetalLBLoadBalancerIPs {
			ips, ok, err := annotations.LoadBalancerIPs.GetFrom(a, k)
			if err != nil {
				return nil, "", err
			}
			if ok {
				sources = append(sources, source{"annotation " + k, ips})
			}
		}
	}
	deprecated := ""
	if s := strings.TrimSpace(svc.Spec.LoadBalancerIP); s != "" {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return nil, "", fmt.Errorf("spec.loadBalancerIP %s is not an IPv4 or IPv6 address", annotations.Quote(s))
		}
		sources = append(sources, source{"spec.loadBalancerIP", []netip.Addr{ip.Unmap()}})
		deprecated = "spec.loadBalancerIP"
	}
	if len(sources) == 0 {
		return nil, deprecated, nil
	}
	for _, s := range sources[1:] {
		if !slices.Equal(s.ips, sources[0].ips) {
			return nil, "", fmt.Errorf("%s (%s) conflicts with %s (%s): set only one", sources[0].name, join(sources[0].ips), s.name, join(s.ips))
		}
	}
	return sources[0].ips, deprecated, nil
}

// familiesOf is the IP families a Service wants, primary first; require:
// every one must be served (RequireDualStack); prefer: a second is welcome
// (PreferDualStack). Otherwise only the first.
func familiesOf(svc *corev1.Service) (families []corev1.IPFamily, require, prefer bool) {
	families = slices.Clone(svc.Spec.IPFamilies)
	if len(families) == 0 {
		families = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	policy := corev1.IPFamilyPolicySingleStack
	if svc.Spec.IPFamilyPolicy != nil {
		policy = *svc.Spec.IPFamilyPolicy
	}
	switch {
	case policy == corev1.IPFamilyPolicyRequireDualStack && len(families) > 1:
		return families, true, false
	case policy == corev1.IPFamilyPolicyPreferDualStack && len(families) > 1:
		return families, false, true
	}
	return families[:1], false, false
}

// firstOf reads the tfccm.io/ key, then (with metallb) MetalLB's keys, and
// says which annotation the value came from; two that disagree are an
// error.
func firstOf(a map[string]string, metallb bool, k annotations.Key[string], others []string) (string, string, error) {
	v, ok, err := k.Get(a)
	if err != nil {
		return "", "", err
	}
	from := k.Name
	if !metallb {
		return v, from, nil
	}
	for _, name := range others {
		o, has, err := k.GetFrom(a, name)
		if err != nil {
			return "", "", err
		}
		switch {
		case has && !ok:
			v, ok, from = o, true, name
		case has && o != v:
			return "", "", fmt.Errorf("annotation %s (%s) conflicts with %s (%s): set only one", from, annotations.Quote(v), name, annotations.Quote(o))
		}
	}
	return v, from, nil
}

func familyOf(a netip.Addr) corev1.IPFamily {
	if a.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

func join(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ",")
}
