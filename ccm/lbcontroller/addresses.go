package lbcontroller

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
)

// addressBook decides each Service's load balancer addresses before its
// workspace is rendered (package ipam owns the rules) and hands them to the
// renderer. Without address pools tfccm allocates nothing (the template
// does) and checks only the addresses Services chose: who holds them, and
// the sharing rules.
type addressBook struct {
	alloc   *ipam.Allocator
	pooled  bool // load_balancer.address_pool blocks exist
	cluster string
	metallb bool
	// needNamespaces: a pool selects by namespace labels.
	needNamespaces bool

	mu         sync.Mutex
	namespaces corelisters.NamespaceLister // nil until watch (or not needed)
	services   corelisters.ServiceLister   // nil until watch
	restored   bool
	current    map[types.UID]*templates.Addresses
	// kept are the Services tfccm has not served before (no tfccm.io/
	// condition: migrated from another implementation, MetalLB say) whose
	// addresses restore took from their status and no Event has named yet:
	// such a Service keeps its address, and its first assignment says so
	// once. One tfccm served before a restart gets no Event for it.
	kept map[types.UID]bool
}

func newAddressBook(cfg *config.Config) *addressBook {
	pools := cfg.LoadBalancer.AddressPools
	b := &addressBook{alloc: ipam.New(pools), pooled: len(pools) > 0, cluster: cfg.ClusterName, metallb: cfg.Compat.MetalLB, current: map[types.UID]*templates.Addresses{}, kept: map[types.UID]bool{}}
	for _, p := range pools {
		b.needNamespaces = b.needNamespaces || len(p.NamespaceSels) > 0
	}
	return b
}

// watch takes the listers it needs from the shared informers.
func (b *addressBook) watch(f informers.SharedInformerFactory) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	services := f.Core().V1().Services()
	b.services = services.Lister()
	// A deleted Service's addresses are free: tfccm's own are released
	// after their destroy already; this frees those of Services another
	// controller served (restored from their status).
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if svc, ok := obj.(*corev1.Service); ok {
				b.release(svc)
			}
		},
	}); err != nil {
		klog.ErrorS(err, "Watch Services for released load balancer addresses")
	}
	if b.needNamespaces {
		ns := f.Core().V1().Namespaces()
		ns.Informer() // registered before the factory starts
		b.namespaces = ns.Lister()
	}
}

// addressNotice is a Normal Event to record about a Service's addresses.
type addressNotice struct{ reason, message string }

// addressError is a refused request: its Event reason and message.
type addressError struct {
	reason string
	err    error
}

func (e *addressError) Error() string { return e.err.Error() }
func (e *addressError) Unwrap() error { return e.err }

// assign decides svc's addresses. It returns the Normal Events to record
// when they changed, or an *addressError: then nothing may be applied.
func (b *addressBook) assign(svc *corev1.Service) ([]addressNotice, error) {
	if b == nil {
		return nil, nil
	}
	req, err := ipam.RequestOf(svc, b.metallb)
	if err != nil {
		return nil, &addressError{ReasonAddressRefused, err}
	}
	if !b.pooled && len(req.IPs) == 0 {
		if req.Sharing != "" {
			return nil, &addressError{ReasonAddressRefused, fmt.Errorf("annotation %s: sharing an address needs address pools (load_balancer.address_pool in the cloud config) or the shared address chosen with annotation %s; nothing is applied", annotations.AllowSharedIP.Name, annotations.LoadBalancerIPs.Name)}
		}
		b.mu.Lock()
		delete(b.current, svc.UID) // the template allocates
		b.mu.Unlock()
		return deprecation(req), nil
	}
	b.restore()
	name := svc.Namespace + "/" + svc.Name
	got, err := b.alloc.Assign(string(svc.UID), name, req, b.namespaceLabels(svc.Namespace))
	if err != nil {
		var conflict *ipam.ConflictError
		var exhausted *ipam.ExhaustedError
		switch {
		case errors.As(err, &conflict):
			return nil, &addressError{ReasonAddressConflict, err}
		case errors.As(err, &exhausted):
			return nil, &addressError{ReasonAddressPoolExhausted, err}
		}
		return nil, &addressError{ReasonAddressRefused, err}
	}
	addrs := &templates.Addresses{IPs: got.IPs, Shared: ipam.ShareToken(b.cluster, got.ShareScope, req.Sharing)}
	b.mu.Lock()
	old := b.current[svc.UID]
	b.current[svc.UID] = addrs
	kept := b.kept[svc.UID]
	delete(b.kept, svc.UID)
	b.mu.Unlock()
	unchanged := old != nil && slices.Equal(old.IPs, addrs.IPs) && old.Shared == addrs.Shared
	if unchanged && !kept {
		return nil, nil
	}
	msg := fmt.Sprintf("address %s (chosen)", joinAddrs(got.IPs))
	if len(got.Pools) > 0 {
		msg = fmt.Sprintf("address %s from pool %s", joinAddrs(got.IPs), strings.Join(slices.Compact(slices.Clone(got.Pools)), ", "))
	}
	if unchanged {
		msg += ", kept from the Service's status"
	}
	if len(got.SharedWith) > 0 {
		msg += ", shared with " + strings.Join(got.SharedWith, ", ")
	}
	return append(deprecation(req), addressNotice{ReasonAddressAssigned, msg}), nil
}

func deprecation(req ipam.Request) []addressNotice {
	if req.Deprecated == "" {
		return nil
	}
	return []addressNotice{{ReasonLoadBalancerIPDeprecated, fmt.Sprintf("%s is deprecated (since Kubernetes 1.24) and still honoured; use annotation %s, which also takes one address per family", req.Deprecated, annotations.LoadBalancerIPs.Name)}}
}

// lookup is the addresses the renderer passes for svc (nil: the Service's
// requested ones).
func (b *addressBook) lookup(svc *corev1.Service) *templates.Addresses {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current[svc.UID]
}

// observe records the addresses a Service's load balancer got (the
// template's, when tfccm allocates none), so that another Service choosing
// one is refused naming it.
func (b *addressBook) observe(svc *corev1.Service, status *corev1.LoadBalancerStatus) {
	if b == nil || status == nil {
		return
	}
	var ips []netip.Addr
	for _, in := range status.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	if len(ips) == 0 {
		return
	}
	req, err := ipam.RequestOf(svc, b.metallb)
	if err == nil {
		err = b.alloc.Restore(string(svc.UID), svc.Namespace+"/"+svc.Name, req, ips)
	}
	if err != nil {
		klog.V(2).InfoS("Not recording a load balancer's addresses", "service", klog.KObj(svc), "addresses", joinAddrs(ips), "reason", err)
	}
}

// release frees a deleted Service's addresses.
func (b *addressBook) release(svc *corev1.Service) {
	if b == nil {
		return
	}
	b.alloc.Release(string(svc.UID))
	b.mu.Lock()
	delete(b.current, svc.UID)
	delete(b.kept, svc.UID)
	b.mu.Unlock()
}

// restore records, once, the addresses every LoadBalancer Service has in
// its status (tfccm's before a restart, and those of another controller
// serving some Services beside tfccm, when they are in tfccm's pools), so
// tfccm never hands them out again. It runs at the first assignment: the
// service controller starts only after the informers synced.
func (b *addressBook) restore() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.restored || b.services == nil {
		return
	}
	b.restored = true
	svcs, err := b.services.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List Services to restore their load balancer addresses")
		return
	}
	// The older Service first: when two now conflict (an upgrade made
	// sharing keys per namespace), the same one keeps its address on every
	// restart, and the other is assigned anew.
	sortByAge(svcs)
	n := 0
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		req, err := ipam.RequestOf(svc, b.metallb)
		ips := req.Current
		if err == nil {
			err = b.alloc.Restore(string(svc.UID), svc.Namespace+"/"+svc.Name, req, ips)
		}
		if err != nil {
			klog.InfoS("Not restoring a Service's load balancer addresses", "service", klog.KObj(svc), "addresses", joinAddrs(ips), "reason", err)
			continue
		}
		b.current[svc.UID] = &templates.Addresses{IPs: ips, Shared: ipam.ShareToken(b.cluster, b.alloc.ShareScope(req, ips), req.Sharing)}
		if !servedBefore(svc) {
			b.kept[svc.UID] = true
		}
		n++
	}
	klog.InfoS("Restored load balancer addresses from Service status", "services", n)
}

// servedBefore reports whether tfccm wrote conditions on svc: it served
// the Service before (this process or an earlier one).
func servedBefore(svc *corev1.Service) bool {
	return slices.ContainsFunc(svc.Status.Conditions, func(c metav1.Condition) bool { return strings.HasPrefix(c.Type, "tfccm.io/") })
}

func (b *addressBook) namespaceLabels(ns string) labels.Set {
	b.mu.Lock()
	lister := b.namespaces
	b.mu.Unlock()
	if lister == nil {
		return nil
	}
	n, err := lister.Get(ns)
	if err != nil {
		return nil
	}
	return labels.Set(n.Labels)
}

func joinAddrs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ",")
}

// assignAddresses decides svc's addresses before its workspace renders: a
// refusal is a Warning Event and Accepted=False, and nothing is applied.
func (l *loadBalancers) assignAddresses(svc *corev1.Service) error {
	notices, err := l.addrs.assign(svc)
	var refused *addressError
	if errors.As(err, &refused) {
		l.event(svc, corev1.EventTypeWarning, refused.reason, refused.Error())
		l.conds.set(svc, condition(ConditionAccepted, false, CondReasonInvalidInput, refused.Error()),
			condition(ConditionProgrammed, false, CondReasonInvalidInput, "the Service's addresses were refused; nothing is applied (the running load balancer, if any, is untouched)"))
		err = fmt.Errorf("load balancer addresses: %w", err)
		if refused.reason == ReasonAddressRefused { // the request itself; a conflict or an exhausted pool is retried
			err = refusedInput(err)
		}
		return err
	}
	for _, n := range notices {
		l.event(svc, corev1.EventTypeNormal, n.reason, n.message)
	}
	return err
}
