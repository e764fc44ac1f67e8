package lbcontroller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/templates"
)

// The plan informer: the ConfigMaps of tfccm's namespace labelled
// annotations.PlanKind, watched so that an approval set on one (an
// approver's `tfccm approve`) is acted on at once: the routes plan, an
// orphan's destroy or a Service's plan, whichever workspace it names. Its
// cache also answers every later read of an approval. The CCM needs get,
// list and watch on ConfigMaps in its namespace for it, nothing elsewhere.

// watchPlans starts the plan informer; it runs until ctx ends.
func (rv *reviewer) watchPlans(ctx context.Context) {
	client := rv.kube()
	if client == nil {
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(rv.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = annotations.PlanKind }))
	inf := f.Core().V1().ConfigMaps()
	handle := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			rv.planChanged(cm)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		klog.ErrorS(err, "Watch plan ConfigMaps for approvals", "namespace", rv.namespace)
		return
	}
	rv.mu.Lock()
	rv.plans, rv.synced = inf.Lister(), inf.Informer().HasSynced
	rv.mu.Unlock()
	f.Start(ctx.Done())
}

// planChanged acts on an approval set on a plan ConfigMap.
func (rv *reviewer) planChanged(cm *corev1.ConfigMap) {
	if _, set := cm.Annotations[annotations.ApprovedPlan.Name]; !set || cm.Namespace != rv.namespace {
		return
	}
	ws, ok := strings.CutPrefix(cm.Name, annotations.PlanConfigMapPrefix)
	if !ok {
		return
	}
	if templates.IsClusterWorkspace(ws) {
		rv.checkClusterApproval(ws)
		return
	}
	rv.mu.Lock()
	owner := rv.owner
	rv.mu.Unlock()
	var svc *corev1.Service
	if owner != nil {
		svc, _ = owner(ws)
	}
	if svc == nil {
		// Not known yet (the service controller has not synced it since a
		// restart): its sync reads the approval from the cache.
		klog.V(2).InfoS("Approval of a workspace not known yet; read again at its Service's sync", "configMap", klog.KObj(cm))
		return
	}
	rv.approveFrom(svc, ws)
}
