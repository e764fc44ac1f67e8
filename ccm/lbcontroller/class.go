package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/lbnodes"
)

// The class loop serves the LoadBalancer Services whose
// spec.loadBalancerClass is tfccm's (config load_balancer_class), which the
// cloud-provider service controller skips. It drives the same
// cloudprovider.LoadBalancer operations the service controller calls for
// class-less Services, so the engine, Events, conditions and review mode
// are one implementation; it only does the service controller's part:
// finalizer, node set, status and its Events. Its finalizer is tfccm's own
// (annotations.ClassFinalizer): the service controller acts on any Service
// carrying its own finalizer, classed or not.

// classWorkers is how many Services the loop syncs at once: EnsureLoadBalancer
// waits for its apply (load_balancer.ensure_wait), so one slow apply must
// not hold the others (the chart's concurrentServiceSyncs, for class-less ones).
const classWorkers = 10

// Retry delays of a failed sync, as the service controller's.
const (
	classMinRetry = 5 * time.Second
	classMaxRetry = 300 * time.Second
)

// classAnnotation is the annotation proposed for load balancer classes
// before spec.loadBalancerClass existed: nothing ever read it.
const classAnnotation = "service.kubernetes.io/load-balancer-class"

// The service controller's Event reasons, recorded the same way on Services
// of tfccm's class.
const (
	eventEnsuring    = "EnsuringLoadBalancer"
	eventEnsured     = "EnsuredLoadBalancer"
	eventUpdated     = "UpdatedLoadBalancer"
	eventSyncFailed  = "SyncLoadBalancerFailed"
	eventDeleting    = "DeletingLoadBalancer"
	eventDeleted     = "DeletedLoadBalancer"
	eventUnavailable = "UnAvailableLoadBalancer"
	eventUpdateFail  = "UpdateLoadBalancerFailed"
)

// classLoop is the controller loop for Services of one load balancer class.
type classLoop struct {
	lb      cloudprovider.LoadBalancer
	serves  func(*corev1.Service) bool // the Services tfccm serves (config.Serves)
	class   string
	cluster string
	event   eventFunc
	queue   workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	client   kubernetes.Interface // nil until Initialize
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	watching chan struct{} // closed by watch: the listers are set
	// nodesOnly tells, for a queued Service, whether its only change is
	// the node set (true: UpdateLoadBalancer) or not (false:
	// EnsureLoadBalancer); sync takes it.
	nodesOnly map[string]bool
	// warned is the class annotation value each Service was warned about.
	warned reported[types.UID]
}

func newClassLoop(lb cloudprovider.LoadBalancer, serves func(*corev1.Service) bool, class, cluster string, event eventFunc) *classLoop {
	return &classLoop{lb: lb, serves: serves, class: class, cluster: cluster, event: event,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](classMinRetry, classMaxRetry),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tfccm_lb_class"}),
		watching: make(chan struct{}), nodesOnly: map[string]bool{}}
}

func (c *classLoop) setClient(client kubernetes.Interface) {
	c.mu.Lock()
	c.client = client
	c.mu.Unlock()
}

// watch registers the loop's Service and Node handlers.
func (c *classLoop) watch(f informers.SharedInformerFactory) {
	services, nodes := f.Core().V1().Services(), f.Core().V1().Nodes()
	c.mu.Lock()
	c.services, c.nodes = services.Lister(), nodes.Lister()
	c.synced = []cache.InformerSynced{services.Informer().HasSynced, nodes.Informer().HasSynced}
	c.mu.Unlock()
	defer close(c.watching)
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.serviceChanged(nil, obj) },
		UpdateFunc: c.serviceChanged,
		DeleteFunc: c.serviceDeleted,
	}); err != nil {
		klog.ErrorS(err, "Watch Services for the load balancer class loop")
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.queueAll() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && lbnodes.Eligible(o) != lbnodes.Eligible(n) || ok1 && ok2 && o.Spec.ProviderID != n.Spec.ProviderID {
				c.queueAll()
			}
		},
		DeleteFunc: func(any) { c.queueAll() },
	}); err != nil {
		klog.ErrorS(err, "Watch Nodes for the load balancer class loop")
	}
}

// serviceChanged queues a Service of the class (or one holding the class
// finalizer) whose spec, labels, annotations or deletion changed, and warns
// about the class annotation.
func (c *classLoop) serviceChanged(oldObj, newObj any) {
	svc, ok := newObj.(*corev1.Service)
	if !ok {
		return
	}
	c.warnAnnotation(svc)
	if !c.wants(svc) && !slices.Contains(svc.Finalizers, annotations.ClassFinalizer) {
		return
	}
	if old, ok := oldObj.(*corev1.Service); ok && !renderedServiceChanged(old, svc) &&
		old.DeletionTimestamp.Equal(svc.DeletionTimestamp) && slices.Equal(withClassFinalizer(old.Finalizers), svc.Finalizers) {
		return // a status write or the class finalizer added (tfccm's own writes, among others)
	}
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.nodesOnly[key] = false // a full sync, whatever else queues it before it runs
	c.mu.Unlock()
	c.queue.Add(key)
}

// withClassFinalizer is finalizers with the class finalizer appended when
// missing: adding it is what ensure does first, and needs no sync of its own.
func withClassFinalizer(finalizers []string) []string {
	if slices.Contains(finalizers, annotations.ClassFinalizer) {
		return finalizers
	}
	return append(slices.Clone(finalizers), annotations.ClassFinalizer)
}

// serviceDeleted forgets what the loop recorded about a deleted Service.
func (c *classLoop) serviceDeleted(obj any) {
	if svc, ok := deletedService(obj); ok {
		c.warned.forget(svc.UID)
	}
}

// queueAll queues every Service of the class for a node set change.
func (c *classLoop) queueAll() {
	c.mu.Lock()
	lister := c.services
	c.mu.Unlock()
	if lister == nil {
		return
	}
	svcs, err := lister.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List Services for a node change")
		return
	}
	for _, svc := range svcs {
		if !c.wants(svc) {
			continue
		}
		key, err := cache.MetaNamespaceKeyFunc(svc)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, queued := c.nodesOnly[key]; !queued {
			c.nodesOnly[key] = true
		}
		c.mu.Unlock()
		c.queue.Add(key)
	}
}

// wants reports whether svc is a live Service tfccm serves of the class
// (class-less ones are the service controller's).
func (c *classLoop) wants(svc *corev1.Service) bool {
	return svc.Spec.LoadBalancerClass != nil && c.serves(svc) && svc.DeletionTimestamp == nil
}

// warnAnnotation records a Warning on a LoadBalancer Service carrying the
// never-implemented class annotation, once per value.
func (c *classLoop) warnAnnotation(svc *corev1.Service) {
	v, ok := svc.Annotations[classAnnotation]
	if !ok || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil {
		return
	}
	if !c.warned.isNew(svc.UID, v) {
		return
	}
	c.event(svc, corev1.EventTypeWarning, ReasonClassAnnotationIgnored, classAnnotationMessage(svc, v, c.class))
}

func classAnnotationMessage(svc *corev1.Service, value, class string) string {
	current := "none, so the cloud-provider service controller's implementation serves it"
	if svc.Spec.LoadBalancerClass != nil {
		current = strconv.Quote(*svc.Spec.LoadBalancerClass)
	}
	return fmt.Sprintf("annotation %s=%q is read by nothing (it was only ever proposed): the class is the field spec.loadBalancerClass (now %s; tfccm serves %q). "+
		"The field cannot change while the Service is of type LoadBalancer: set type NodePort, then type LoadBalancer with spec.loadBalancerClass in the same update",
		classAnnotation, value, current, class)
}

// run syncs queued Services with classWorkers workers until ctx ends,
// once the informers have synced.
func (c *classLoop) run(ctx context.Context) {
	defer c.queue.ShutDown()
	select { // Initialize starts the loop before SetInformers registers it
	case <-c.watching:
	case <-ctx.Done():
		return
	}
	c.mu.Lock()
	synced := c.synced
	c.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	klog.InfoS("Serving LoadBalancer Services of a load balancer class", "class", c.class)
	c.queueAll() // at start every Service is new to the loop
	c.queueFinalized()
	for range classWorkers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

// queueFinalized queues the Services still holding the class finalizer
// (a class or type change while tfccm was down).
func (c *classLoop) queueFinalized() {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List Services for the load balancer class loop")
		return
	}
	for _, svc := range svcs {
		if slices.Contains(svc.Finalizers, annotations.ClassFinalizer) && !c.wants(svc) {
			if key, err := cache.MetaNamespaceKeyFunc(svc); err == nil {
				c.queue.Add(key)
			}
		}
	}
}

// next syncs one queued Service and schedules its retry.
func (c *classLoop) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	var retry *api.RetryError
	switch {
	case err == nil:
		c.queue.Forget(key)
	case errors.As(err, &retry):
		c.queue.AddAfter(key, retry.RetryAfter())
	default:
		klog.ErrorS(err, "Sync of a load balancer Service failed (retrying with backoff)", "service", key)
		c.queue.AddRateLimited(key)
	}
	return true
}

// sync serves one Service: its load balancer ensured while it wants one,
// destroyed (and the finalizer removed) once it no longer does.
func (c *classLoop) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	nodesOnly := c.nodesOnly[key]
	delete(c.nodesOnly, key)
	c.mu.Unlock()
	svc, err := c.services.Services(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone: its finalizer was removed after the destroy (or it never had one)
	case err != nil:
		return err
	case c.wants(svc) && nodesOnly && slices.Contains(svc.Finalizers, annotations.ClassFinalizer) && len(svc.Status.LoadBalancer.Ingress) > 0:
		return c.update(ctx, svc)
	case c.wants(svc):
		return c.ensure(ctx, svc)
	case slices.Contains(svc.Finalizers, annotations.ClassFinalizer):
		return c.cleanup(ctx, svc)
	}
	return nil
}

// ensure adds the finalizer, ensures the load balancer with the current
// node set and writes its status.
func (c *classLoop) ensure(ctx context.Context, svc *corev1.Service) error {
	c.event(svc, corev1.EventTypeNormal, eventEnsuring, "Ensuring load balancer")
	svc, err := c.addFinalizer(svc)
	if err != nil {
		return c.failed(svc, fmt.Errorf("failed to add load balancer cleanup finalizer: %w", err))
	}
	nodes, err := c.lbNodes()
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		c.event(svc, corev1.EventTypeWarning, eventUnavailable, "There are no available nodes for LoadBalancer")
	}
	status, err := c.lb.EnsureLoadBalancer(ctx, c.cluster, svc, nodes)
	switch {
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		return nil // a plan awaiting approval (its approval queues the Service again: approved.go) or a refused input (refusedOnce)
	case errors.As(err, new(*api.RetryError)):
		// Work in flight, or the previous owner still releasing: not a
		// failure, so no Warning (the service controller records one).
		klog.V(2).InfoS("Load balancer not ready yet", "service", klog.KObj(svc), "reason", err)
		return err
	case err != nil:
		return c.failed(svc, fmt.Errorf("failed to ensure load balancer: %w", err))
	case status == nil:
		return c.failed(svc, errors.New("service status returned by EnsureLoadBalancer is nil"))
	}
	c.event(svc, corev1.EventTypeNormal, eventEnsured, "Ensured load balancer")
	if err := c.patchStatus(svc, status); err != nil {
		return c.failed(svc, fmt.Errorf("failed to update load balancer status: %w", err))
	}
	return nil
}

// update hands a changed node set to the load balancer.
func (c *classLoop) update(ctx context.Context, svc *corev1.Service) error {
	nodes, err := c.lbNodes()
	if err != nil {
		return err
	}
	if err := c.lb.UpdateLoadBalancer(ctx, c.cluster, svc, nodes); err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
		c.event(svc, corev1.EventTypeWarning, eventUpdateFail, fmt.Sprintf("Error updating load balancer with new hosts %d: %v", len(nodes), err))
		return err
	}
	c.event(svc, corev1.EventTypeNormal, eventUpdated, "Updated load balancer with new hosts")
	return nil
}

// cleanup destroys the load balancer of a Service that no longer wants
// one from tfccm (deleted, or no longer of type LoadBalancer or of the
// class), then removes the finalizer and the status.
func (c *classLoop) cleanup(ctx context.Context, svc *corev1.Service) error {
	_, exists, err := c.lb.GetLoadBalancer(ctx, c.cluster, svc)
	if err != nil {
		return c.failed(svc, fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err))
	}
	if exists {
		c.event(svc, corev1.EventTypeNormal, eventDeleting, "Deleting load balancer")
		if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.cluster, svc); err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
			return c.failed(svc, fmt.Errorf("failed to delete load balancer: %w", err))
		}
	}
	if err := c.removeFinalizer(svc); err != nil {
		return c.failed(svc, fmt.Errorf("failed to remove load balancer cleanup finalizer: %w", err))
	}
	c.event(svc, corev1.EventTypeNormal, eventDeleted, "Deleted load balancer")
	if svc.DeletionTimestamp == nil {
		if err := c.patchStatus(svc, &corev1.LoadBalancerStatus{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to clear load balancer status: %w", err)
		}
	}
	return nil
}

// failed records the service controller's SyncLoadBalancerFailed Warning
// and returns err.
func (c *classLoop) failed(svc *corev1.Service, err error) error {
	c.event(svc, corev1.EventTypeWarning, eventSyncFailed, "Error syncing load balancer: "+err.Error())
	return err
}

// lbNodes lists the nodes that back load balancers (lbnodes.Eligible).
func (c *classLoop) lbNodes() ([]*corev1.Node, error) {
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := lbnodes.Filter(all)
	slices.SortFunc(out, func(a, b *corev1.Node) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

func (c *classLoop) kube() (kubernetes.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		return nil, errors.New("no API client yet")
	}
	return c.client, nil
}

// addFinalizer adds the class finalizer and returns the patched Service.
func (c *classLoop) addFinalizer(svc *corev1.Service) (*corev1.Service, error) {
	if slices.Contains(svc.Finalizers, annotations.ClassFinalizer) {
		return svc, nil
	}
	client, err := c.kube()
	if err != nil {
		return svc, err
	}
	updated := svc.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, annotations.ClassFinalizer)
	klog.V(2).InfoS("Adding the load balancer cleanup finalizer", "service", klog.KObj(svc), "finalizer", annotations.ClassFinalizer)
	out, err := servicehelper.PatchService(client.CoreV1(), svc, updated)
	if err != nil {
		return svc, err
	}
	return out, nil
}

func (c *classLoop) removeFinalizer(svc *corev1.Service) error {
	if !slices.Contains(svc.Finalizers, annotations.ClassFinalizer) {
		return nil
	}
	client, err := c.kube()
	if err != nil {
		return err
	}
	updated := svc.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == annotations.ClassFinalizer })
	_, err = servicehelper.PatchService(client.CoreV1(), svc, updated)
	return err
}

// patchStatus writes the load balancer status if it changed.
func (c *classLoop) patchStatus(svc *corev1.Service, status *corev1.LoadBalancerStatus) error {
	if servicehelper.LoadBalancerStatusEqual(&svc.Status.LoadBalancer, status) {
		return nil
	}
	client, err := c.kube()
	if err != nil {
		return err
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *status
	_, err = servicehelper.PatchService(client.CoreV1(), svc, updated)
	return err
}
