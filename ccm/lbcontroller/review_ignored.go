package lbcontroller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// Approvals a tenant writes are no approvals: the annotation
// tfccm.io/approved-plan on a Service (which its namespace's tenant
// writes; earlier versions of tfccm read it there) approves nothing. tfccm
// says so with a Warning Event naming the plan's ConfigMap in tfccm's
// namespace and the command an approver runs, once per annotation value.

// ignoreServiceApproval reports an approval annotation on svc as ignored.
func (rv *reviewer) ignoreServiceApproval(svc *corev1.Service) {
	raw, set := svc.Annotations[annotations.ApprovedPlan.Name]
	if !set {
		return
	}
	if !rv.ignored.isNew(svc.UID, raw) {
		return
	}
	rv.event(svc, corev1.EventTypeWarning, ReasonApprovalIgnored, ignoredMessage(rv.namespace, rv.render.WorkspaceName(svc), svc))
}

func ignoredMessage(namespace, ws string, svc *corev1.Service) string {
	return fmt.Sprintf("the annotation %s on a Service approves nothing: the Service's namespace may not approve its own plans. "+
		"An approver approves the plan on ConfigMap %s/%s (`%s --plan-hash HASH`); nothing applied",
		annotations.ApprovedPlan.Name, namespace, annotations.PlanConfigMapName(ws), approveCommand(svc))
}

// watchApprovals registers a Service handler on the shared informer: an
// approval annotation set on a Service is reported as ignored at once.
func (rv *reviewer) watchApprovals(f informers.SharedInformerFactory) {
	inf := f.Core().V1().Services().Informer()
	handle := func(obj any) {
		if svc, ok := obj.(*corev1.Service); ok && rv.served(svc) {
			rv.ignoreServiceApproval(svc)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		klog.ErrorS(err, "Watch Services for approval annotations")
	}
}

// served reports whether tfccm serves svc (config.Serves), so Services
// of other implementations get no Events.
func (rv *reviewer) served(svc *corev1.Service) bool {
	rv.mu.Lock()
	serves := rv.serves
	rv.mu.Unlock()
	return serves != nil && serves(svc)
}
