package lbcontroller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// After an approval: the Service's sync is what writes its status, but an
// approval on the plan ConfigMap (in tfccm's namespace) changes nothing on
// the Service, and the service controller does not call again for a
// Service it was told is implemented elsewhere while its plan waited
// (EnsureLoadBalancer). So once an approved plan is applied, its Service is
// synced again here: a Service of tfccm's class is queued in the class
// loop, and a class-less one gets the status the service controller's
// EnsureLoadBalancer would have written.

// approvedStatusTimeout bounds the status write after an approved apply.
const approvedStatusTimeout = 30 * time.Second

// approvalAccepted records that ws's pending plan was approved (the
// reviewer tells it): its next successful apply result resyncs its Service.
func (l *loadBalancers) approvalAccepted(ws string) {
	l.mu.Lock()
	l.approved[ws] = true
	l.mu.Unlock()
}

// takeApproved reports (and forgets) whether ws's plan was approved.
func (l *loadBalancers) takeApproved(ws string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.approved[ws]
	delete(l.approved, ws)
	return ok
}

// approvedApplied syncs svc again after its approved plan was applied.
func (c *classLoop) approvedApplied(svc *corev1.Service) {
	c.mu.Lock()
	lister := c.services
	c.mu.Unlock()
	if lister == nil {
		return
	}
	cur, err := lister.Services(svc.Namespace).Get(svc.Name)
	if err != nil || cur.UID != svc.UID || cur.DeletionTimestamp != nil || cur.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return // gone or going: its deletion is synced anyway
	}
	if c.wants(cur) {
		if key, err := cache.MetaNamespaceKeyFunc(cur); err == nil {
			c.mu.Lock()
			c.nodesOnly[key] = false
			c.mu.Unlock()
			c.queue.Add(key)
		}
		return
	}
	if cur.Spec.LoadBalancerClass != nil {
		return // another implementation's
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvedStatusTimeout)
	defer cancel()
	status, exists, err := c.lb.GetLoadBalancer(ctx, c.cluster, cur)
	if err != nil || !exists || status == nil {
		klog.V(2).InfoS("No status to write after an approved apply", "service", klog.KObj(cur), "err", err)
		return
	}
	if err := c.patchStatus(cur, status); err != nil {
		klog.ErrorS(err, "Write the load balancer status after an approved apply", "service", klog.KObj(cur))
		return
	}
	klog.V(2).InfoS("Wrote the load balancer status after an approved apply", "service", klog.KObj(cur))
}
