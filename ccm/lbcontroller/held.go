package lbcontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// A plan a closed change window holds, as its Service is told.

// heldResult records a plan a closed change window holds: published (as
// review mode publishes), an Event and Programmed=False saying when the
// next window opens. It reports whether r was such a result.
func (l *loadBalancers) heldResult(svc *corev1.Service, ws string, r workspace.Result) bool {
	s := ofResult(r)
	o := outcomeOf(s)
	if !o.held {
		return false
	}
	if l.review != nil {
		l.review.publishHeld(svc, ws, r.Plan)
	}
	l.event(svc, o.event.typ, o.event.reason, o.event.text(s))
	l.conds.set(svc, o.conditionsOf(s)...)
	return true
}

func heldMessage(p *plans.PendingPlan, v plans.GateVerdict) string {
	msg := fmt.Sprintf("plan %s (%s) is published and %s", p.Hash, p.Summary(), v.Hold)
	if v.Approval != "" {
		msg += "; it also needs approval: " + v.Approval
	}
	return msg
}

// publishHeld publishes a held plan in its ConfigMap, as a plan awaiting
// approval is.
func (rv *reviewer) publishHeld(svc *corev1.Service, ws string, p *plans.PendingPlan) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rv.publish(ctx, ws, svc, p); err != nil {
		klog.ErrorS(err, "Publish held plan", "service", klog.KObj(svc))
	}
}
