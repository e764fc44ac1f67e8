package lbcontroller

import (
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// One Warning per refused input. An input tfccm refuses (a Service whose
// workspace does not render, whose address request cannot be met as
// written, or whose inputs the template's validation rejects) is told by
// tfccm's own Warning Event naming the problem (TerraformRenderFailed,
// LoadBalancerIPRefused, TerraformInvalidInput) and Accepted=False. The
// service controller records every error EnsureLoadBalancer returns as a
// second Warning (SyncLoadBalancerFailed, or UpdateLoadBalancerFailed for
// UpdateLoadBalancer) and retries it with backoff, though nothing changes
// until the Service, its nodes or the templates do. So such a refusal
// answers cloudprovider.ImplementedElsewhere, the controller's documented
// no-op (no Event, no status write, no retry), as a plan awaiting approval
// does; an edit of the Service makes it ask again. A template change
// (override_dir) that makes the inputs acceptable is re-rendered and
// applied by tfccm itself (watch.go), without the controller
// asking: tfccm then writes the load balancer status the controller would
// have written (statusAfterRefusal).

// refusedInputError marks an error as a refusal of the Service's own
// inputs, already told by tfccm's Warning and conditions.
type refusedInputError struct{ err error }

func (e *refusedInputError) Error() string { return e.err.Error() }
func (e *refusedInputError) Unwrap() error { return e.err }

// refusedInput marks err as a refused input.
func refusedInput(err error) error { return &refusedInputError{err} }

// refusedOnce answers the service controller for err: a refused input is
// its no-op (the refusal is logged and remembered, the Warning was
// recorded), any other error is err.
func (l *loadBalancers) refusedOnce(svc *corev1.Service, err error) error {
	var refused *refusedInputError
	if !errors.As(err, &refused) {
		return err
	}
	name := l.render.WorkspaceName(svc)
	hash := l.engine.Status(name).Hash
	l.mu.Lock()
	l.refused[name] = hash
	l.mu.Unlock()
	klog.InfoS("The Service's inputs are refused; nothing is applied until they change", "service", klog.KObj(svc), "err", err)
	return cloudprovider.ImplementedElsewhere
}

// asked records that the service controller asks for svc's load balancer
// again: its answer, not tfccm, writes the status.
func (l *loadBalancers) asked(svc *corev1.Service) {
	l.mu.Lock()
	delete(l.refused, l.render.WorkspaceName(svc))
	l.mu.Unlock()
}

// refusedKeeps is conds, the conditions of a result of workspace name,
// without Accepted=True while the Service's current inputs are refused:
// the result is of a spec the engine had before the refusal (a run still
// in flight when the Service changed), and Accepted says the inputs now
// are refused until they change. A spec submitted since (a template
// change made the inputs acceptable, watch.go) is told as usual.
func (l *loadBalancers) refusedKeeps(name string, conds []metav1.Condition) []metav1.Condition {
	l.mu.Lock()
	hash, refused := l.refused[name]
	l.mu.Unlock()
	if !refused || l.engine.Status(name).Hash != hash {
		return conds
	}
	return slices.DeleteFunc(conds, func(c metav1.Condition) bool {
		return c.Type == ConditionAccepted && c.Status == metav1.ConditionTrue
	})
}

// statusAfterRefusal writes the load balancer status of a Service whose
// input the service controller was last told is refused, once tfccm
// applied its workspace by itself (a template change made it acceptable):
// the controller would not ask again before the Service changes.
func (l *loadBalancers) statusAfterRefusal(name string, r workspace.Result) {
	if r.Op != "apply" || r.Err != nil || r.AwaitingApproval || r.Drift { // a drift repair re-applies what was applied before
		return
	}
	l.mu.Lock()
	_, refused := l.refused[name]
	delete(l.refused, name)
	l.mu.Unlock()
	if !refused {
		return
	}
	st := l.engine.Status(name)
	if st.Phase != workspace.PhaseApplied || st.AppliedHash != st.Hash {
		return
	}
	client, lister := l.conds.kube()
	svc := l.serviceOf(name)
	if client == nil || lister == nil || svc == nil {
		return
	}
	cur, err := lister.Services(svc.Namespace).Get(svc.Name)
	if err != nil || cur.UID != svc.UID {
		return
	}
	status, err := templates.IngressStatus(st.Outputs)
	if err != nil {
		l.event(cur, corev1.EventTypeWarning, ReasonInvalidIngress, err.Error())
		return
	}
	if servicehelper.LoadBalancerStatusEqual(&cur.Status.LoadBalancer, status) {
		return
	}
	updated := cur.DeepCopy()
	updated.Status.LoadBalancer = *status
	if _, err := servicehelper.PatchService(client.CoreV1(), cur, updated); err != nil {
		klog.ErrorS(err, "Write the load balancer status of a Service whose refused inputs a template change made acceptable", "service", klog.KObj(cur))
		return
	}
	l.addrs.observe(cur, status)
	klog.InfoS("Wrote the load balancer status: a template change made the Service's refused inputs acceptable", "service", klog.KObj(cur), "workspace", name)
}
