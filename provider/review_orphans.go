package provider

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// Review mode for an orphan the sweep found in the state backend: its
// destroy plan is published like any load balancer's (ConfigMap
// tfccm-plan-<workspace> in the gone Service's namespace, Event on it),
// and since the Service no longer exists the reviewer approves it by
// setting tfccm.io/approved-plan=<hash> on that ConfigMap, as for routes.

// approveOrphan approves the orphan's pending destroy plan when its
// ConfigMap names it.
func (rv *reviewer) approveOrphan(ctx context.Context, owner *corev1.Service, ws string) {
	client := rv.kube()
	if client == nil {
		return
	}
	cm, err := client.CoreV1().ConfigMaps(owner.Namespace).Get(ctx, annotations.PlanConfigMapName(ws), metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Read orphan's plan ConfigMap", "workspace", ws)
		}
		return
	}
	hash, set, err := annotations.ApprovedPlan.Get(cm.Annotations)
	switch {
	case !set:
	case err != nil:
		rv.refuse(owner, ws, cm.Annotations[annotations.ApprovedPlan.Name], err.Error())
	default:
		rv.approve(owner, ws, hash)
	}
}
