// Book: every Service's load balancer addresses, from one set of inputs
// (the cloud config's pools and the live Services), for the controller and
// the CLI alike.

package ipam

import (
	"cmp"
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
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// Addresses are what a Service's workspace renders with: its load
// balancer's addresses and its share token.
type Addresses struct {
	// IPs are one address per family, primary first (none: the template
	// allocates).
	IPs []netip.Addr
	// Shared is the Service's share token (ShareToken), "" if it shares
	// with no one.
	Shared string
	// Segments are the segments of IPs, one per IP (nil: the template's
	// default segment).
	Segments []*config.Segment
}

// NoticeKind says what a Notice is about.
type NoticeKind int

const (
	// NoticeAssigned: the Service's addresses were decided or changed.
	NoticeAssigned NoticeKind = iota
	// NoticeDeprecated: the request came from a deprecated field.
	NoticeDeprecated
)

// Notice is something to tell the Service's owner about its addresses.
type Notice struct {
	Kind    NoticeKind
	Message string
}

// Skipped is a Service whose status addresses Restore did not take.
type Skipped struct {
	Service   *corev1.Service
	Addresses []netip.Addr
	Err       error
}

// Book decides each Service's load balancer addresses before its
// workspace is rendered. Without address pools tfccm allocates nothing (the
// template does) and checks only the addresses Services chose: who holds
// them, and the sharing rules. The controller keeps one up to date; the
// CLI builds one from the cluster's Services (Offline).
type Book struct {
	alloc  *Allocator
	pooled bool // address pools exist (blocks or objects)
	hcl    []config.AddressPool
	// served are the AddressPool objects' versions that serve, by name
	// (Merge keeps one when an edit is refused).
	served  map[string]*poolapi.AddressPool
	cluster string
	metallb bool
	// needNamespaces: a pool selects by namespace labels.
	needNamespaces bool
	// Namespaces gives a namespace's labels (nil: none known).
	Namespaces func(namespace string) labels.Set
	// Live lists the cluster's Services for the first assignment that
	// allocates or checks an address to restore from (nil: not yet
	// known; Restore may be called instead).
	Live func() ([]*corev1.Service, error)

	mu       sync.Mutex
	reserved func() Reserved // SetReserved
	restored bool
	current  map[types.UID]Addresses
	// kept are the Services tfccm has not served before (no tfccm.io/
	// condition: migrated from another implementation, MetalLB say) whose
	// addresses Restore took from their status and no notice has named
	// yet: such a Service keeps its address, and its first assignment says
	// so once. One tfccm served before a restart gets no notice for it.
	kept map[types.UID]bool
}

// NewBook is an empty book over cfg's address pools.
func NewBook(cfg *config.Config) *Book {
	pools := cfg.LoadBalancer.AddressPools
	b := &Book{alloc: New(pools), pooled: len(pools) > 0, hcl: pools, cluster: cfg.ClusterName, metallb: cfg.Compat.MetalLB, current: map[types.UID]Addresses{}, kept: map[types.UID]bool{}}
	for _, p := range pools {
		b.needNamespaces = b.needNamespaces || len(p.NamespaceSels) > 0
	}
	return b
}

// NeedsNamespaces reports whether a pool selects by namespace labels (then
// Namespaces should be set).
func (b *Book) NeedsNamespaces() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.needNamespaces
}

// isPooled reports whether any pool exists (a block or an object).
func (b *Book) isPooled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pooled
}

// Offline is the book the CLI renders with: cfg's pools, restored from
// live (the cluster's Services, or the one Service read from a file), with
// namespace labels from nsLabels (nil: none).
func Offline(cfg *config.Config, live []*corev1.Service, nsLabels func(string) labels.Set) *Book {
	b := NewBook(cfg)
	b.Namespaces = nsLabels
	b.Restore(live)
	return b
}

// Restored reports whether Restore ran.
func (b *Book) Restored() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restored
}

// Restore records, once, the addresses every LoadBalancer Service of svcs
// has in its status (tfccm's before a restart, and those of another
// controller serving some Services beside tfccm, when they are in tfccm's
// pools), so they are never handed out again. It returns how many it took
// and the ones it did not.
func (b *Book) Restore(svcs []*corev1.Service) (int, []Skipped) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.restored {
		return 0, nil
	}
	b.restored = true
	// The older Service first: when two now conflict (an upgrade made
	// sharing keys per namespace), the same one keeps its address on every
	// restart, and the other is assigned anew.
	svcs = slices.Clone(svcs)
	sortByAge(svcs)
	n := 0
	var skipped []Skipped
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		req, err := RequestOf(svc, b.metallb)
		ips := req.Current
		if err == nil {
			err = b.alloc.Restore(string(svc.UID), svc.Namespace+"/"+svc.Name, req, ips)
		}
		if err != nil {
			skipped = append(skipped, Skipped{svc, ips, err})
			continue
		}
		b.current[svc.UID] = Addresses{IPs: ips, Shared: ShareToken(b.cluster, b.alloc.ShareScope(req, ips), req.Sharing), Segments: segmentsOf(b.alloc.Assignment(string(svc.UID)))}
		if !servedBefore(svc) {
			b.kept[svc.UID] = true
		}
		n++
	}
	return n, skipped
}

// ErrNotLive is what Live returns while the Services are not known yet:
// nothing is restored, and the next assignment tries again.
var ErrNotLive = errors.New("the Services are not known yet")

// restoreLive restores, once, from Live; it logs what it took.
func (b *Book) restoreLive() {
	if b.Live == nil || b.Restored() {
		return
	}
	svcs, err := b.Live()
	if errors.Is(err, ErrNotLive) {
		return
	}
	if err != nil {
		klog.ErrorS(err, "List Services to restore their load balancer addresses")
		return
	}
	n, skipped := b.Restore(svcs)
	for _, s := range skipped {
		klog.InfoS("Not restoring a Service's load balancer addresses", "service", klog.KObj(s.Service), "addresses", join(s.Addresses), "reason", s.Err)
	}
	klog.InfoS("Restored load balancer addresses from Service status", "services", n)
}

// sortByAge orders Services oldest first, then by UID (the order the
// controller uses for every "older Service wins" rule).
func sortByAge(svcs []*corev1.Service) {
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.UID, b.UID)
	})
}

// servedBefore reports whether tfccm wrote conditions on svc: it served
// the Service before (this process or an earlier one).
func servedBefore(svc *corev1.Service) bool {
	return slices.ContainsFunc(svc.Status.Conditions, func(c metav1.Condition) bool { return strings.HasPrefix(c.Type, "tfccm.io/") })
}

// Assign decides svc's addresses and records them. It returns the notices
// to give when they changed, or the refusal (a *ConflictError, an
// *ExhaustedError or another error): then nothing may be applied.
func (b *Book) Assign(svc *corev1.Service) (Addresses, []Notice, error) {
	req, err := RequestOf(svc, b.metallb)
	if err != nil {
		return Addresses{}, nil, err
	}
	if !b.isPooled() && len(req.IPs) == 0 {
		if req.Sharing != "" {
			return Addresses{}, nil, fmt.Errorf("annotation %s: sharing an address needs address pools (load_balancer.address_pool in the cloud config) or the shared address chosen with annotation %s; nothing is applied", annotations.AllowSharedIP.Name, annotations.LoadBalancerIPs.Name)
		}
		b.mu.Lock()
		delete(b.current, svc.UID) // the template allocates
		b.mu.Unlock()
		return Addresses{}, deprecation(req), nil
	}
	b.restoreLive()
	got, err := b.alloc.Assign(string(svc.UID), svc.Namespace+"/"+svc.Name, req, b.namespaceLabels(svc.Namespace))
	if err != nil {
		return Addresses{}, nil, err
	}
	addrs := Addresses{IPs: got.IPs, Shared: ShareToken(b.cluster, got.ShareScope, req.Sharing)}
	addrs.Segments = segmentsOf(got)
	b.mu.Lock()
	old, had := b.current[svc.UID]
	b.current[svc.UID] = addrs
	kept := b.kept[svc.UID]
	delete(b.kept, svc.UID)
	b.mu.Unlock()
	unchanged := had && slices.Equal(old.IPs, addrs.IPs) && old.Shared == addrs.Shared && slices.EqualFunc(old.Segments, addrs.Segments, sameSegment)
	if unchanged && !kept {
		return addrs, nil, nil
	}
	return addrs, append(deprecation(req), Notice{NoticeAssigned, assignedText(got, unchanged)}), nil
}

// assignedText says which addresses a Service got and where from.
func assignedText(got Assignment, kept bool) string {
	msg := fmt.Sprintf("address %s (chosen)", join(got.IPs))
	if len(got.Pools) > 0 {
		msg = fmt.Sprintf("address %s from pool %s", join(got.IPs), strings.Join(slices.Compact(slices.Clone(got.Pools)), ", "))
	}
	if kept {
		msg += ", kept from the Service's status"
	}
	if len(got.SharedWith) > 0 {
		msg += ", shared with " + strings.Join(got.SharedWith, ", ")
	}
	return msg
}

func deprecation(req Request) []Notice {
	if req.Deprecated == "" {
		return nil
	}
	return []Notice{{NoticeDeprecated, fmt.Sprintf("%s is deprecated (since Kubernetes 1.24) and still honoured; use annotation %s, which also takes one address per family", req.Deprecated, annotations.LoadBalancerIPs.Name)}}
}

// For is the one answer to "which addresses does svc's workspace render
// with": those Assign decided (or Restore kept), else the ones the Service
// chose, unshared.
func (b *Book) For(svc *corev1.Service) (Addresses, error) {
	b.mu.Lock()
	a, ok := b.current[svc.UID]
	b.mu.Unlock()
	if ok {
		return a, nil
	}
	req, err := RequestOf(svc, b.metallb)
	if err != nil {
		return Addresses{}, err
	}
	return Addresses{IPs: req.IPs}, nil
}

// Decide assigns svc's addresses (Assign) and returns them (For): what
// the CLI renders a Service with, from a book built like the controller's.
func (b *Book) Decide(svc *corev1.Service) (Addresses, error) {
	if _, _, err := b.Assign(svc); err != nil {
		return Addresses{}, fmt.Errorf("load balancer addresses: %w", err)
	}
	return b.For(svc)
}

// Observe records the addresses a Service's load balancer got (the
// template's, when tfccm allocates none), so that another Service choosing
// one is refused naming it. It says why it did not.
func (b *Book) Observe(svc *corev1.Service, status *corev1.LoadBalancerStatus) ([]netip.Addr, error) {
	if status == nil {
		return nil, nil
	}
	var ips []netip.Addr
	for _, in := range status.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	if len(ips) == 0 {
		return nil, nil
	}
	req, err := RequestOf(svc, b.metallb)
	if err == nil {
		err = b.alloc.Restore(string(svc.UID), svc.Namespace+"/"+svc.Name, req, ips)
	}
	return ips, err
}

// Release frees a deleted Service's addresses.
func (b *Book) Release(uid types.UID) {
	b.alloc.Release(string(uid))
	b.mu.Lock()
	delete(b.current, uid)
	delete(b.kept, uid)
	b.mu.Unlock()
}

func (b *Book) namespaceLabels(ns string) labels.Set {
	if b.Namespaces == nil {
		return nil
	}
	return b.Namespaces(ns)
}

// segmentsOf is got's segments, nil when every address is on the default
// segment.
func segmentsOf(got Assignment) []*config.Segment {
	if slices.ContainsFunc(got.Segments, func(s *config.Segment) bool { return s != nil }) {
		return got.Segments
	}
	return nil
}

// sameSegment reports whether a and b are one segment (a pool's network
// edited is another).
func sameSegment(a, b *config.Segment) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Pool == b.Pool && a.Network.Name() == b.Network.Name()
}
