// The AddressPool objects: the informer that feeds them to the address
// book, and the one writer of their status (counts and conditions).

package lbcontroller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// poolStatusQPS bounds the status writes of all pools together.
const poolStatusQPS, poolStatusBurst = 5, 10

// pools feeds the AddressPool objects to the book and writes their status.
type pools struct {
	book   *ipam.Book
	client dynamic.NamespaceableResourceInterface
	lister cache.GenericLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	verdicts map[string]ipam.Verdict
}

// WatchPools starts the AddressPool informer and the status writer, and
// waits until the pools are in the book (before the first allocation). A
// cluster without the CRD keeps the cloud config's pools only.
func (c *Controller) WatchPools(ctx context.Context, client dynamic.Interface) error {
	if c.lb == nil {
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
	inf := f.ForResource(poolapi.GVR)
	p.lister = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.reload() },
		UpdateFunc: func(_, _ any) { p.reload() },
		DeleteFunc: func(any) { p.reload() },
	}); err != nil {
		return fmt.Errorf("watch AddressPools: %w", err)
	}
	f.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.Informer().HasSynced) {
		return fmt.Errorf("AddressPools not listed within a minute")
	}
	p.reload()
	c.render.addrs.onChange(p.refresh)
	go func() { <-ctx.Done(); p.queue.ShutDown() }()
	go p.run(ctx)
	return nil
}

// reload gives the book every pool object and queues every status.
func (p *pools) reload() {
	objs, err := p.lister.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List AddressPools")
		return
	}
	var list []*poolapi.AddressPool
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		ap, err := poolapi.FromUnstructured(u)
		if err != nil {
			klog.ErrorS(err, "Decode AddressPool", "pool", u.GetName())
			continue
		}
		list = append(list, ap)
	}
	verdicts := p.book.SetObjectPools(list)
	p.mu.Lock()
	p.verdicts = map[string]ipam.Verdict{}
	for _, v := range verdicts {
		p.verdicts[v.Pool] = v
	}
	p.mu.Unlock()
	p.refresh()
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
