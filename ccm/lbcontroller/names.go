package lbcontroller

// A tfccm.io/name belongs to one Service at a time (#44): the name a
// tenant chooses reaches templates as load_balancer_name, which a cloud
// template uses as its load balancer's name, so two Services with one name
// would fight over one load balancer. The oldest Service holds the name;
// any other is refused before anything renders or applies.

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/annotations"
)

// nameHolder is the Service holding svc's tfccm.io/name among all (the
// Services tfccm knows, svc included or not): the oldest by
// creationTimestamp, then by UID, of the LoadBalancer Services tfccm
// serves (config.Serves; nil: every LoadBalancer Service) that carry
// the same valid name. Only these fields decide, so every sync and every
// restart, in any replica, picks the same holder. nil: svc has no valid
// name, or holds it.
func nameHolder(svc *corev1.Service, all []*corev1.Service, serves func(*corev1.Service) bool) *corev1.Service {
	name, ok, err := annotations.Name.Get(svc.Annotations)
	if !ok || err != nil {
		return nil
	}
	holder := svc
	for _, o := range all {
		if o.UID == svc.UID || serves == nil && o.Spec.Type != corev1.ServiceTypeLoadBalancer || serves != nil && !serves(o) {
			continue
		}
		if n, ok, err := annotations.Name.Get(o.Annotations); ok && err == nil && n == name && olderFirst(o, holder) < 0 {
			holder = o
		}
	}
	if holder == svc {
		return nil
	}
	return holder
}

// olderFirst orders Services by creationTimestamp, then UID: the one rule
// of which Service came first (a name's holder, addresses restored after
// a restart).
func olderFirst(a, b *corev1.Service) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// sortByAge sorts Services oldest first (olderFirst).
func sortByAge(svcs []*corev1.Service) { slices.SortFunc(svcs, olderFirst) }

// nameTakenMessage is the refusal's text: it names the holder, the rule
// and what to do.
func nameTakenMessage(svc, holder *corev1.Service) string {
	name, _, _ := annotations.Name.Get(svc.Annotations)
	return fmt.Sprintf("annotation %s: the load balancer name %s is held by Service %s/%s, which is older (the oldest Service by creation time, then UID, holds a name); "+
		"nothing is applied for this Service (its running load balancer, if any, is untouched): choose another name, or remove the annotation for the default one",
		annotations.Name.Name, annotations.Quote(name), holder.Namespace, holder.Name)
}

// checkName refuses svc when another Service holds its tfccm.io/name: a
// Warning Event and Accepted=False name the holder, and nothing renders.
// Before the informers are set (unit tests of other parts) nothing is
// checked.
func (l *loadBalancers) checkName(svc *corev1.Service) error {
	l.mu.Lock()
	src := l.svcSource
	l.mu.Unlock()
	if src == nil {
		return nil
	}
	if _, ok, err := annotations.Name.Get(svc.Annotations); !ok || err != nil {
		return nil // no name, or an invalid one the render refuses
	}
	all, err := src.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("load balancer name: list Services: %w", err)
	}
	holder := nameHolder(svc, all, l.serves)
	if holder == nil {
		return nil
	}
	msg := nameTakenMessage(svc, holder)
	l.event(svc, corev1.EventTypeWarning, ReasonNameTaken, msg)
	l.conds.set(svc, condition(ConditionAccepted, false, CondReasonNameTaken, msg),
		condition(ConditionProgrammed, false, CondReasonNameTaken, "the Service's load balancer name is another Service's; nothing is applied (the running load balancer, if any, is untouched)"))
	return fmt.Errorf("load balancer name: %s", msg)
}

// queueSameName re-renders the Services that wait for a deleted Service's
// tfccm.io/name: the next holder is accepted without waiting for the
// service controller's backoff.
func (l *loadBalancers) queueSameName(gone *corev1.Service) {
	name, ok, err := annotations.Name.Get(gone.Annotations)
	if !ok || err != nil {
		return
	}
	l.mu.Lock()
	var waiting []*corev1.Service
	for _, e := range l.services {
		if e.svc == nil || e.svc.UID == gone.UID {
			continue
		}
		if n, ok, err := annotations.Name.Get(e.svc.Annotations); ok && err == nil && n == name {
			waiting = append(waiting, e.svc)
		}
	}
	l.mu.Unlock()
	for _, s := range waiting {
		l.queueService(s)
	}
}
