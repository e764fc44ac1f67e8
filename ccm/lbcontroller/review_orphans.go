package lbcontroller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Review mode for an orphan the sweep found in the state backend: its
// destroy plan is published like any load balancer's (ConfigMap
// tfccm-plan-<workspace> in tfccm's namespace, labelled with the gone
// Service's namespace, name and UID; Events on the gone Service), and an
// approver approves it on that ConfigMap like any other plan.

// approveOrphan approves the orphan's pending destroy plan when its
// ConfigMap names it.
func (rv *reviewer) approveOrphan(_ context.Context, owner *corev1.Service, ws string) {
	rv.approveFrom(owner, ws)
}
