// The controller's address book (over ipam.Book) and the Events and
// conditions a Service's address assignment gives.

package lbcontroller

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
)

// addressBook is the controller's ipam.Book: kept up to date from the
// Services informer (restored once from their status, released on delete)
// and turned into Events. Package ipam owns the rules and the book.
type addressBook struct {
	book *ipam.Book

	mu         sync.Mutex
	namespaces corelisters.NamespaceLister // nil until watch (or not needed)
	services   corelisters.ServiceLister   // nil until watch
	changed    func()                      // an address taken or freed (pools' status); nil: none
	// poolObjects: AddressPool objects are watched, and any may select
	// namespaces later.
	poolObjects bool
	// lbHosts are the LB hosts' own addresses (no pool object may cover
	// them), from the cloud config.
	lbHosts ipam.Reserved
}

// onChange calls f after each address assigned or released; the pool
// objects are watched then, so namespace labels are always needed.
func (b *addressBook) onChange(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.changed = f
	b.poolObjects = true
}

func (b *addressBook) notifyChange() {
	b.mu.Lock()
	f := b.changed
	b.mu.Unlock()
	if f != nil {
		f()
	}
}

func newAddressBook(cfg *config.Config) *addressBook {
	b := &addressBook{book: ipam.NewBook(cfg), lbHosts: ipam.LBHostAddresses(cfg)}
	b.book.Namespaces = b.namespaceLabels
	b.book.Live = b.liveServices
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
			if svc, ok := deletedService(obj); ok {
				b.release(svc)
			}
		},
	}); err != nil {
		klog.ErrorS(err, "Watch Services for released load balancer addresses")
	}
	if b.poolObjects {
		nodes := f.Core().V1().Nodes().Lister()
		hosts := b.lbHosts
		b.book.SetReserved(func() ipam.Reserved {
			r := ipam.Reserved{}
			if list, err := nodes.List(labels.Everything()); err == nil {
				r = ipam.NodeAddresses(list)
			}
			maps.Copy(r, hosts)
			return r
		})
	}
	if b.book.NeedsNamespaces() || b.poolObjects {
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

// assign decides svc's addresses (ipam.Book.Assign). It returns the Normal
// Events to record when they changed, or an *addressError: then nothing
// may be applied.
func (b *addressBook) assign(svc *corev1.Service) ([]addressNotice, error) {
	if b == nil {
		return nil, nil
	}
	_, notices, err := b.book.Assign(svc)
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
	if len(notices) > 0 {
		b.notifyChange()
	}
	var out []addressNotice
	if len(notices) > 0 {
		out = make([]addressNotice, len(notices))
	}
	for i, n := range notices {
		out[i] = addressNotice{ReasonAddressAssigned, n.Message}
		if n.Kind == ipam.NoticeDeprecated {
			out[i].reason = ReasonLoadBalancerIPDeprecated
		}
	}
	return out, nil
}

// lookup is the addresses the renderer passes for svc (ipam.Book.For).
func (b *addressBook) lookup(svc *corev1.Service) (templates.Addresses, error) {
	a, err := b.book.For(svc)
	return templates.Addresses{IPs: a.IPs, Shared: a.Shared, Segments: a.Segments}, err
}

// observe records the addresses a Service's load balancer got (the
// template's, when tfccm allocates none), so that another Service choosing
// one is refused naming it.
func (b *addressBook) observe(svc *corev1.Service, status *corev1.LoadBalancerStatus) {
	if b == nil {
		return
	}
	if ips, err := b.book.Observe(svc, status); err != nil {
		klog.V(2).InfoS("Not recording a load balancer's addresses", "service", klog.KObj(svc), "addresses", joinAddrs(ips), "reason", err)
	}
}

// release frees a deleted Service's addresses.
func (b *addressBook) release(svc *corev1.Service) {
	if b == nil {
		return
	}
	b.book.Release(svc.UID)
	b.notifyChange()
}

// liveServices lists the Services for the book's restore (ipam.Book.Live):
// ipam.ErrNotLive until watch (unit tests of other parts).
func (b *addressBook) liveServices() ([]*corev1.Service, error) {
	b.mu.Lock()
	lister := b.services
	b.mu.Unlock()
	if lister == nil {
		return nil, ipam.ErrNotLive
	}
	return lister.List(labels.Everything())
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
