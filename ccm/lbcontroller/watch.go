package lbcontroller

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// The service controller calls UpdateLoadBalancer only when a Node's
// exclusion or providerID changes, and EnsureLoadBalancer only for some
// Service changes. But templates see more: node addresses (set by the node
// controller after the providerID, so a joining node's first render has
// none), zone, region, instance type and labels, and the Service's labels.
// tfccm therefore watches Nodes and Services itself and re-renders every
// workspace whose inputs changed; an unchanged render is a no-op in the
// engine (same content hash, no tofu process).

// watch registers the Node and Service handlers on the shared informers.
func (l *loadBalancers) watch(f informers.SharedInformerFactory) {
	nodes := f.Core().V1().Nodes()
	l.mu.Lock()
	l.nodes = nodes.Lister()
	l.mu.Unlock()
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && renderedNodeChanged(o, n) {
				l.queueNode(n.Name)
			}
		},
	}); err != nil {
		klog.ErrorS(err, "Watch Nodes for load balancer re-renders")
	}
	services := f.Core().V1().Services()
	l.mu.Lock()
	l.svcSource = &serviceSource{lister: services.Lister(), synced: services.Informer().HasSynced}
	l.mu.Unlock()
	l.conds.setLister(services.Lister())
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Service)
			n, ok2 := newObj.(*corev1.Service)
			if ok1 && ok2 && renderedServiceChanged(o, n) {
				l.queueService(n)
			}
			if ok1 && ok2 && o.Annotations[annotations.Name.Name] != n.Annotations[annotations.Name.Name] {
				l.queueSameName(o) // it no longer holds its old name
			}
		},
		DeleteFunc: func(obj any) {
			if svc, ok := deletedService(obj); ok {
				l.queueSameName(svc)
			}
		},
	}); err != nil {
		klog.ErrorS(err, "Watch Services for load balancer re-renders")
	}
}

// renderedNodeChanged reports whether a Node changed in a field templates
// receive (see templates.NodeType).
func renderedNodeChanged(o, n *corev1.Node) bool {
	return o.Spec.ProviderID != n.Spec.ProviderID ||
		!equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses) ||
		!maps.Equal(o.Labels, n.Labels)
}

// renderedServiceChanged reports whether a Service changed in anything but
// its status and bookkeeping metadata.
func renderedServiceChanged(o, n *corev1.Service) bool {
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		!maps.Equal(o.Labels, n.Labels) ||
		!maps.Equal(o.Annotations, n.Annotations)
}

// queueNode queues every workspace rendered with node name.
func (l *loadBalancers) queueNode(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ws, e := range l.services {
		if l.deleted[ws] {
			continue
		}
		for _, n := range e.nodes {
			if n == name {
				l.resync.Add(ws)
				break
			}
		}
	}
}

// queueService records the newest Service and queues its workspace, if
// tfccm has rendered one for it.
func (l *loadBalancers) queueService(svc *corev1.Service) {
	name := l.render.WorkspaceName(svc)
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.services[name]
	if !ok || l.deleted[name] || e.nodes == nil {
		return
	}
	e.svc = svc
	l.resync.Add(name)
}

// runResync re-renders queued workspaces until ctx ends.
func (l *loadBalancers) runResync(ctx context.Context) {
	go func() {
		<-ctx.Done()
		l.resync.ShutDown()
	}()
	for {
		name, quit := l.resync.Get()
		if quit {
			return
		}
		l.rerender(name)
		l.resync.Done(name)
	}
}

// rerender renders workspace name again with its Service and the current
// Node objects of the nodes it was last rendered with, and submits it.
func (l *loadBalancers) rerender(name string) {
	l.mu.Lock()
	e, ok := l.services[name]
	lister := l.nodes
	l.mu.Unlock()
	if !ok || lister == nil {
		return
	}
	e.submit.Lock()
	defer e.submit.Unlock()
	l.mu.Lock()
	svc, names, deleted := e.svc, e.nodes, l.deleted[name]
	l.mu.Unlock()
	if deleted || names == nil || svc == nil || svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return
	}
	all, err := lister.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "List Nodes for a load balancer re-render", "workspace", name)
		return
	}
	byName := make(map[string]*corev1.Node, len(all))
	for _, n := range all {
		byName[n.Name] = n
	}
	nodes := make([]*corev1.Node, 0, len(names))
	for _, n := range names {
		if node, ok := byName[n]; ok { // a deleted node: the service controller calls Update
			nodes = append(nodes, node)
		}
	}
	st, err := l.renderAndApply(name, svc, nodes)
	if err != nil {
		klog.InfoS("Load balancer re-render failed", "service", klog.KObj(svc), "workspace", name, "err", err)
		return
	}
	klog.V(2).InfoS("Load balancer re-rendered after a Node or Service change", "service", klog.KObj(svc), "workspace", name, "phase", st.Phase)
}

// resyncAll queues every workspace tfccm has rendered (a template change).
func (l *loadBalancers) resyncAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ws, e := range l.services {
		if !l.deleted[ws] && e.nodes != nil {
			l.resync.Add(ws)
		}
	}
}

// eventAll records an Event on every Service tfccm has rendered a
// workspace for.
func (l *loadBalancers) eventAll(eventType, reason, message string) {
	l.mu.Lock()
	var svcs []*corev1.Service
	for ws, e := range l.services {
		if !l.deleted[ws] && e.svc != nil {
			svcs = append(svcs, e.svc)
		}
	}
	l.mu.Unlock()
	for _, svc := range svcs {
		l.event(svc, eventType, reason, message)
	}
}

// deletedService is the Service an informer's DeleteFunc is handed, also
// when the informer missed the deletion and hands its last known state.
func deletedService(obj any) (*corev1.Service, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	svc, ok := obj.(*corev1.Service)
	return svc, ok
}
