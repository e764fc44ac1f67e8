// The AddressPool objects: the informer that feeds them to the address
// book, and the one writer of their status (counts and conditions).

package lbcontroller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/ipam/metallb"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// poolStatusQPS bounds the status writes of all pools together.
const poolStatusQPS, poolStatusBurst = 5, 10

// pools feeds the AddressPool objects (and MetalLB's, with compat) to the
// book and writes the AddressPools' status.
type pools struct {
	book   *ipam.Book
	client dynamic.NamespaceableResourceInterface
	lister cache.GenericLister // nil: no AddressPool CRD
	// metallb lists MetalLB's IPAddressPools, L2Advertisements and
	// BGPAdvertisements (nil: not read).
	metallb map[schema.GroupVersionResource]cache.GenericLister
	queue   workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	verdicts map[string]ipam.Verdict
	// logged is what was last logged about MetalLB's pools.
	logged string
}

// PoolSources say which pool objects the cluster has to watch.
type PoolSources struct {
	// AddressPools: the cluster has tfccm's AddressPool CRD.
	AddressPools bool
	// MetalLB are MetalLB's resources the cluster serves (with compat {
	// metallb = true }; its IPAddressPools among them, or none): its pools
	// serve as they are (package ipam/metallb), after tfccm's.
	MetalLB []schema.GroupVersionResource
}

// WatchPools starts the informers of the pool objects and the AddressPool
// status writer, and waits until the pools are in the book (before the
// first allocation). A cluster without the CRDs keeps the cloud config's
// pools only.
func (c *Controller) WatchPools(ctx context.Context, client dynamic.Interface, src PoolSources) error {
	if c.lb == nil || !src.AddressPools && len(src.MetalLB) == 0 {
		return nil
	}
	p := &pools{
		book:     c.render.addrs.book,
		client:   client.Resource(poolapi.GVR),
		verdicts: map[string]ipam.Verdict{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(poolStatusQPS, poolStatusBurst)}),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tfccm_address_pool_status"}),
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 10*time.Minute)
	var synced []cache.InformerSynced
	watch := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		inf := f.ForResource(gvr)
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { p.reload() },
			UpdateFunc: func(_, _ any) { p.reload() },
			DeleteFunc: func(any) { p.reload() },
		}); err != nil {
			return nil, fmt.Errorf("watch %s: %w", gvr.GroupResource(), err)
		}
		synced = append(synced, inf.Informer().HasSynced)
		return inf.Lister(), nil
	}
	var err error
	if src.AddressPools {
		if p.lister, err = watch(poolapi.GVR); err != nil {
			return err
		}
	}
	if len(src.MetalLB) > 0 {
		p.metallb = map[schema.GroupVersionResource]cache.GenericLister{}
		for _, gvr := range src.MetalLB {
			if p.metallb[gvr], err = watch(gvr); err != nil {
				return err
			}
		}
	}
	f.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return fmt.Errorf("address pool objects not listed within a minute")
	}
	p.reload()
	c.render.addrs.onChange(p.refresh)
	go func() { <-ctx.Done(); p.queue.ShutDown() }()
	go p.run(ctx)
	return nil
}

// reload gives the book every pool object and queues every status.
func (p *pools) reload() {
	var list []*poolapi.AddressPool
	if p.lister != nil {
		for _, u := range listed(p.lister, "AddressPools") {
			ap, err := poolapi.FromUnstructured(u)
			if err != nil {
				klog.ErrorS(err, "Decode AddressPool", "pool", u.GetName())
				continue
			}
			list = append(list, ap)
		}
	}
	var notes []metallb.Note
	if p.metallb != nil {
		var items []unstructured.Unstructured
		for gvr, l := range p.metallb {
			for _, u := range listed(l, gvr.Resource) {
				items = append(items, *u)
			}
		}
		objs, err := metallb.Decode(items)
		if err != nil {
			klog.ErrorS(err, "Decode MetalLB's pools: none of them serves")
		} else {
			converted, n := metallb.Convert(objs)
			list, notes = append(list, converted...), n
		}
	}
	verdicts := p.book.SetObjectPools(list)
	p.mu.Lock()
	p.verdicts = map[string]ipam.Verdict{}
	var metallbSays []string
	for _, v := range verdicts {
		if v.FromMetalLB() {
			metallbSays = append(metallbSays, fmt.Sprintf("IPAddressPool %s/%s: %s", v.Namespace, v.Pool, v.Message))
			continue
		}
		p.verdicts[v.Pool] = v
	}
	for _, n := range notes {
		metallbSays = append(metallbSays, n.String())
	}
	said := strings.Join(metallbSays, "\n")
	changed := said != p.logged
	p.logged = said
	p.mu.Unlock()
	if changed && p.metallb != nil {
		// MetalLB's status is its controller's: tfccm writes none, and says
		// what it made of each pool in its log when that changes.
		klog.InfoS("MetalLB's address pools (compat { metallb = true })", "pools", metallbSays)
	}
	p.refresh()
}

// listed is every object of l (logged and empty when the list fails).
func listed(l cache.GenericLister, what string) []*unstructured.Unstructured {
	objs, err := l.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List "+what)
		return nil
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

// refresh queues every pool's status (an address taken or freed).
func (p *pools) refresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.verdicts {
		p.queue.AddRateLimited(name)
	}
}

func (p *pools) run(ctx context.Context) {
	for {
		name, quit := p.queue.Get()
		if quit {
			return
		}
		if err := p.writeStatus(ctx, name); err != nil {
			klog.V(2).InfoS("Write AddressPool status", "pool", name, "err", err)
			p.queue.AddRateLimited(name)
		} else {
			p.queue.Forget(name)
		}
		p.queue.Done(name)
	}
}

// writeStatus updates the pool's status when it changed.
func (p *pools) writeStatus(ctx context.Context, name string) error {
	if p.lister == nil {
		return nil
	}
	obj, err := p.lister.Get(name)
	if err != nil {
		return nil // deleted
	}
	ap, err := poolapi.FromUnstructured(obj.(*unstructured.Unstructured))
	if err != nil {
		return err
	}
	p.mu.Lock()
	v, ok := p.verdicts[name]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	status := poolStatus(ap, v, p.book)
	if equality.Semantic.DeepEqual(status, ap.Status) {
		return nil
	}
	ap.Status = status
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ap)
	if err != nil {
		return err
	}
	_, err = p.client.UpdateStatus(ctx, &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{})
	return err
}

// poolStatus is the status the pool shows: the counts of the version that
// serves, and the verdict as conditions.
func poolStatus(ap *poolapi.AddressPool, v ipam.Verdict, book *ipam.Book) poolapi.AddressPoolStatus {
	s := poolapi.AddressPoolStatus{Conditions: append([]metav1.Condition(nil), ap.Status.Conditions...)}
	if v4, v6, ok := book.Usage(ap.Name); ok && v.Serving != nil {
		s.IPv4, s.IPv6 = usageOf(v4), usageOf(v6)
		total, free := v4.Total, v4.Free()
		total.Add(total, v6.Total)
		free.Add(free, v6.Free())
		s.Total, s.InUse, s.Free = total.String(), v4.InUse+v6.InUse, free.String()
	}
	ready := metav1.Condition{Type: poolapi.ConditionReady, Status: metav1.ConditionTrue, Reason: "Serving", Message: v.Message, ObservedGeneration: ap.Generation}
	if !v.Serves() {
		ready.Status, ready.Reason = metav1.ConditionFalse, v.Type
	}
	meta.SetStatusCondition(&s.Conditions, ready)
	for _, t := range []string{poolapi.ConditionOverlaps, poolapi.ConditionInvalid} {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: "None", Message: "", ObservedGeneration: ap.Generation}
		if v.Type == t {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, t, v.Message
		}
		meta.SetStatusCondition(&s.Conditions, c)
	}
	return s
}

// usageOf is a family's counts, nil for a family the pool has none of.
func usageOf(u ipam.FamilyUsage) *poolapi.Usage {
	if u.Total.Sign() == 0 {
		return nil
	}
	return &poolapi.Usage{Total: u.Total.String(), InUse: u.InUse, Free: u.Free().String()}
}
