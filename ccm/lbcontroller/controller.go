package lbcontroller

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// inFlightRetry is how soon the service controller asks again while a
// workspace is being planned/applied/destroyed.
const inFlightRetry = 2 * time.Second

// loadBalancers adapts cloudprovider.LoadBalancer to templates (render) and
// workspace (plan/apply/destroy). It never runs tofu itself and
// never blocks on it: work in flight answers api.RetryError.
type loadBalancers struct {
	engine lbEngine
	render renderer
	review lbReview // nil unless review mode
	event  eventFunc
	conds  *conditions
	// remoteBackend: state outlives the work dir, so a workspace tfccm
	// knows nothing about may still hold resources.
	remoteBackend bool
	// ensureWait bounds how long Ensure/EnsureDeleted wait for work in
	// flight before answering api.RetryError (load_balancer.ensure_wait).
	ensureWait time.Duration

	mu       sync.Mutex
	services map[string]*lbEntry // workspace name -> what tfccm last rendered for it
	// deleted holds the workspaces of Services being or already deleted:
	// nothing is ever submitted for them again (a node update queued
	// before the deletion must not resurrect the load balancer).
	deleted map[string]bool
	// orphans are the workspaces the sweep found in the state backend,
	// with their gone Services (review mode approves their destroy on the
	// plan's ConfigMap: sweep.go).
	orphans map[string]*corev1.Service
	// refused holds the workspaces whose inputs the service controller was
	// last told are refused (refused.go), each with the hash of the spec
	// the engine had then: it will not ask again until the Service
	// changes.
	refused map[string]string
	// approved are the workspaces whose pending plan was approved and not
	// yet applied; afterApproval (nil: none) syncs their Service again
	// once it is (approved.go).
	approved      map[string]bool
	afterApproval func(svc *corev1.Service)

	// resync re-renders workspaces whose rendered inputs changed outside
	// the service controller's calls (see watch.go).
	resync    workqueue.TypedInterface[string]
	nodes     corelisters.NodeLister // nil until SetInformers
	svcSource *serviceSource         // nil until SetInformers (orphan sweep)
	health    healthState            // the backends gauges set (health.go)
	// addrs decides the Services' addresses (nil: none decided by tfccm).
	addrs *addressBook
	// takeover says which class-less Services are prepared only, not
	// announced (takeover.go; nil: none); afterTakeover writes the status
	// of one once its take-over is applied.
	takeover      *takeover
	afterTakeover func(svc *corev1.Service)
	prepared      map[string]bool // workspace -> last applied without its announcement
	// serves says which Services tfccm serves (config.Serves): those
	// hold tfccm.io/name values. nil: every LoadBalancer Service.
	serves func(svc *corev1.Service) bool
}

// lbEntry is what tfccm last rendered for one Service's workspace.
type lbEntry struct {
	// submit serializes render+submit of this workspace, so a re-render
	// from the informers never overtakes a newer service controller call.
	submit sync.Mutex

	svc   *corev1.Service // newest Service seen, for Events and re-renders
	nodes []string        // names of the nodes it was rendered with; nil: not rendered (delete path)
}

func newLoadBalancers(engine lbEngine, render renderer, review lbReview, event eventFunc, remoteBackend bool, ensureWait time.Duration) *loadBalancers {
	return &loadBalancers{engine: engine, render: render, review: review, event: event, conds: newConditions(), remoteBackend: remoteBackend, ensureWait: ensureWait,
		services: map[string]*lbEntry{}, deleted: map[string]bool{}, orphans: map[string]*corev1.Service{}, refused: map[string]string{}, approved: map[string]bool{},
		resync: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "tfccm_lb_resync"})}
}

// GetLoadBalancerName is the deterministic name passed to templates as
// load_balancer_name.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return l.render.LoadBalancerName(svc)
}

// GetLoadBalancer reports the status from the workspace's last applied
// `ingress` output. The service controller only calls
// EnsureLoadBalancerDeleted for a load balancer that exists, so anything
// that may hold resources exists: a workspace in flight or failed (a failed
// apply can leave some behind), a workspace directory from an earlier
// incarnation, or — with a remote backend, whose state outlives the work
// dir — any workspace not known to be destroyed.
func (l *loadBalancers) GetLoadBalancer(_ context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	name := l.render.WorkspaceName(svc)
	st := l.engine.Status(name)
	switch {
	case st.Phase == workspace.PhaseDestroyed:
		return nil, false, nil
	case st.AppliedHash != "":
		status, err := templates.IngressStatus(st.Outputs)
		if err != nil {
			return nil, true, fmt.Errorf("load balancer %s: %w", name, err)
		}
		return status, true, nil
	case st.Phase != workspace.PhaseUnknown, l.dirExists(name), l.remoteBackend:
		return &corev1.LoadBalancerStatus{}, true, nil
	default:
		return nil, false, nil
	}
}

// EnsureLoadBalancer renders the Service's workspace and submits it. It
// returns the status once that exact content is applied, api.RetryError
// while it is in flight, and tofu's diagnostic when it failed.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if err := handedOver(svc); err != nil {
		return nil, err
	}
	if err := l.revive(svc); err != nil {
		return nil, err
	}
	l.asked(svc)
	standby, err := l.takeover.standby(svc)
	if err != nil {
		return nil, api.NewRetryError(err.Error(), inFlightRetry)
	}
	if standby && !hasIngressIP(svc) {
		return nil, api.NewRetryError("prepared only once MetalLB has given the Service an address (compat { metallb_takeover = \"prepare\" })", preparedRetry)
	}
	st, err := l.submit(svc, nodes)
	if err != nil {
		return nil, l.refusedOnce(svc, err)
	}
	st = l.settle(ctx, l.approve(svc, st))
	s := ofStatus(st)
	switch o := outcomeOf(s); o.answer {
	case answerStatus:
		status, err := l.ingress(svc, st)
		if err != nil || !standby {
			return status, err
		}
		// Prepared: MetalLB still announces, and its status stays.
		l.conds.set(svc, preparedCondition())
		return svc.Status.LoadBalancer.DeepCopy(), nil
	case answerRefused:
		return nil, l.refusedOnce(svc, refusedInput(o.fail(s)))
	case answerFailed:
		return nil, o.fail(s)
	case answerElsewhere:
		// Not an error: the service controller would record a Warning at
		// every retry while the plan waits, for hours perhaps. This answer
		// is its documented no-op (no Event, no status write, no retry);
		// the approval makes tfccm sync it again (approved.go), and the pending
		// plan is told by an Event and Programmed=False AwaitingApproval.
		klog.V(2).InfoS("Load balancer awaits approval", "service", klog.KObj(svc), "workspace", st.Name, "state", s.phaseText())
		return nil, cloudprovider.ImplementedElsewhere
	default:
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", st.Name, s.phaseText()), o.retryAfterOf())
	}
}

// ingress is the status of svc's applied load balancer (its ingress
// output), whose addresses tfccm then holds.
func (l *loadBalancers) ingress(svc *corev1.Service, st workspace.Status) (*corev1.LoadBalancerStatus, error) {
	status, err := templates.IngressStatus(st.Outputs)
	if err != nil {
		l.event(svc, corev1.EventTypeWarning, ReasonInvalidIngress, err.Error())
		return nil, fmt.Errorf("load balancer %s: %w", st.Name, err)
	}
	l.addrs.observe(svc, status)
	return status, nil
}

// handedOver answers api.RetryError while the Service still carries the
// finalizer of the other path that serves tfccm's Services (the service
// controller's on a Service now of tfccm's class, the class loop's on a
// class-less one): its class changed (through a type change) and the
// previous owner has not yet destroyed the load balancer it built for the
// same workspace. So one owner at a time acts on a workspace.
func handedOver(svc *corev1.Service) error {
	other := annotations.ClassFinalizer
	if svc.Spec.LoadBalancerClass != nil {
		other = servicehelper.LoadBalancerCleanupFinalizer
	}
	if slices.Contains(svc.Finalizers, other) {
		return api.NewRetryError(fmt.Sprintf("the Service's previous load balancer is still being released (finalizer %s)", other), inFlightRetry)
	}
	return nil
}

// revive lets a Service have a load balancer again whose last one was
// destroyed because it stopped wanting one: its type changed away from
// LoadBalancer and back, the one way its spec.loadBalancerClass can change
// (so it moved between implementations and back). Only EnsureLoadBalancer
// revives, for a Service not being deleted: a re-render or node update
// racing a destroy never does. While that destroy still runs, it answers
// api.RetryError.
func (l *loadBalancers) revive(svc *corev1.Service) error {
	name := l.render.WorkspaceName(svc)
	if svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	ok, err := l.engine.Revive(name)
	if err != nil {
		return fmt.Errorf("load balancer %s: %w", name, err)
	}
	if !ok {
		return api.NewRetryError(fmt.Sprintf("load balancer %s: the Service's previous load balancer is still being destroyed", name), inFlightRetry)
	}
	l.mu.Lock()
	if l.deleted[name] {
		klog.InfoS("The Service wants a load balancer again after its last one was destroyed", "service", klog.KObj(svc), "workspace", name)
		delete(l.deleted, name)
	}
	l.mu.Unlock()
	return nil
}

// approve acts on the approval of the Service's plan in review mode and
// returns the workspace's status afterwards.
func (l *loadBalancers) approve(svc *corev1.Service, st workspace.Status) workspace.Status {
	if l.review == nil || st.Phase != workspace.PhaseAwaitingApproval {
		return st
	}
	l.review.approveService(svc)
	return l.engine.Status(st.Name)
}

// settle waits up to ensureWait (by default longer than any apply) for
// work in flight (queued or running) to finish, so that a healthy change
// answers with its outcome instead of api.RetryError, which the service
// controller reports as a SyncLoadBalancerFailed Warning however slow and
// healthy the apply is. Each wait holds a service worker; the engine's
// workers are separate, so waits never block applies.
func (l *loadBalancers) settle(ctx context.Context, st workspace.Status) workspace.Status {
	if l.ensureWait <= 0 || (st.Phase != workspace.PhasePending && st.Phase != workspace.PhaseRunning) {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, l.ensureWait)
	defer cancel()
	for ctx.Err() == nil && (st.Phase == workspace.PhasePending || st.Phase == workspace.PhaseRunning) {
		// A newer spec (a re-render racing this call) supersedes the one
		// waited for: wait for that one instead.
		_, _ = l.engine.Wait(ctx, st.Name, st.Hash) // the outcome is read back below
		st = l.engine.Status(st.Name)
	}
	return st
}

// UpdateLoadBalancer re-renders with the new node set and submits it. An
// unchanged render is a no-op (no tofu process). It does not wait: the
// engine applies in the background and records the outcome as an Event.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	if name := l.render.WorkspaceName(svc); svc.DeletionTimestamp != nil || l.isDeleted(name) {
		klog.V(2).InfoS("Not updating the load balancer of a Service being deleted", "service", klog.KObj(svc), "workspace", name)
		return nil
	}
	st, err := l.submit(svc, nodes)
	if err == nil {
		l.approve(svc, st)
	}
	return l.refusedOnce(svc, err)
}

// EnsureLoadBalancerDeleted destroys the workspace, removes its state and
// directory, and only then returns nil so the finalizer goes.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error {
	name := l.render.WorkspaceName(svc)
	l.markDeleted(name, svc)
	st := l.engine.Status(name)
	if st.Phase == workspace.PhaseDestroyed {
		l.forget(name)
		l.conds.forget(svc.UID)
		l.addrs.release(svc)
		return nil
	}
	spec, err := l.destroySpec(svc, name)
	if err != nil {
		l.event(svc, corev1.EventTypeWarning, ReasonDestroyFailed, err.Error())
		return err
	}
	st, err = l.engine.Destroy(spec)
	if err != nil {
		return fmt.Errorf("destroy load balancer %s: %w", name, err)
	}
	// A destroy that runs ends in a result, whose Event needs the entry:
	// onResult forgets it then (it may come after settle returns).
	ran := st.Phase != workspace.PhaseDestroyed
	st = l.settle(ctx, l.approve(svc, st))
	switch st.Phase {
	case workspace.PhaseDestroyed:
		if !ran {
			l.forget(name)
		}
		l.conds.forget(svc.UID)
		l.addrs.release(svc)
		return nil
	case workspace.PhaseFailed:
		return fmt.Errorf("destroy load balancer %s: %w", name, st.Err)
	default:
		return api.NewRetryError(fmt.Sprintf("load balancer %s is %s", name, phaseText(st)), retryAfterStatus(st))
	}
}

// submit renders svc with nodes and hands the workspace to the engine. A
// render error changes nothing: it is recorded as an Event and returned.
// A Service being deleted is never submitted again.
func (l *loadBalancers) submit(svc *corev1.Service, nodes []*corev1.Node) (workspace.Status, error) {
	name := l.render.WorkspaceName(svc)
	e, ok := l.entry(name, svc)
	if !ok || svc.DeletionTimestamp != nil {
		return workspace.Status{}, fmt.Errorf("load balancer %s: the Service is being deleted; nothing is applied", name)
	}
	e.submit.Lock()
	defer e.submit.Unlock()
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	l.mu.Lock()
	e.svc, e.nodes = svc, names
	l.mu.Unlock()
	return l.renderAndApply(name, svc, nodes)
}

// renderAndApply renders and submits one workspace; the caller holds its
// entry's submit lock.
func (l *loadBalancers) renderAndApply(name string, svc *corev1.Service, nodes []*corev1.Node) (workspace.Status, error) {
	if err := l.checkName(svc); err != nil {
		return workspace.Status{}, err
	}
	if _, err := l.takeover.standby(svc); err != nil {
		return workspace.Status{}, api.NewRetryError(err.Error(), inFlightRetry)
	}
	if err := l.assignAddresses(svc); err != nil {
		return workspace.Status{}, err
	}
	ws, err := l.render.RenderLoadBalancer(svc, nodes)
	if err != nil {
		l.event(svc, corev1.EventTypeWarning, ReasonRenderFailed, err.Error())
		l.conds.set(svc, condition(ConditionAccepted, false, CondReasonInvalidInput, err.Error()),
			condition(ConditionProgrammed, false, CondReasonInvalidInput, "the Service's inputs do not render; the running load balancer (if any) is untouched"))
		return workspace.Status{}, refusedInput(fmt.Errorf("render load balancer: %w", err))
	}
	if l.isDeleted(name) {
		return workspace.Status{}, fmt.Errorf("load balancer %s: the Service is being deleted; nothing is applied", name)
	}
	st, err := l.engine.Apply(*ws)
	if err != nil {
		l.event(svc, corev1.EventTypeWarning, ReasonApplyFailed, err.Error())
		l.conds.set(svc, condition(ConditionProgrammed, false, CondReasonApplyFailed, err.Error()))
		return st, fmt.Errorf("submit load balancer %s: %w", ws.Name, err)
	}
	l.conds.set(svc, statusConditions(st)...)
	return st, nil
}

// destroySpec renders the workspace to destroy. If the Service no longer
// renders (say its annotations became invalid), the workspace as last
// written is destroyed instead, so a bad edit can never strand a finalizer.
func (l *loadBalancers) destroySpec(svc *corev1.Service, name string) (workspace.Spec, error) {
	ws, err := l.render.RenderLoadBalancer(svc, nil)
	if err == nil {
		return *ws, nil
	}
	klog.InfoS("Service no longer renders; destroying the workspace as last written", "service", klog.KObj(svc), "workspace", name, "renderError", err)
	spec, derr := l.written(name)
	if derr != nil {
		return workspace.Spec{}, fmt.Errorf("destroy load balancer %s: render failed (%v) and the workspace cannot be read: %w", name, err, derr)
	}
	return spec, nil
}

// dirExists reports whether the engine has a directory for name.
func (l *loadBalancers) dirExists(name string) bool {
	_, err := os.Stat(l.engine.Dir(name))
	return err == nil
}

// written rebuilds a workspace's spec from the files the engine last wrote
// for it and the backend tfccm generates for its name. It lets a Service
// whose annotations no longer render still be destroyed.
func (l *loadBalancers) written(name string) (workspace.Spec, error) {
	spec, err := l.engine.Written(name)
	if err != nil {
		return workspace.Spec{}, err
	}
	if spec, err = l.render.WithBackend(spec); err != nil {
		return workspace.Spec{}, err
	}
	spec.Hash = spec.ContentHash()
	return spec, nil
}

// entry returns the workspace's entry, created for svc if new; false when
// the workspace belongs to a deleted Service.
func (l *loadBalancers) entry(name string, svc *corev1.Service) (*lbEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deleted[name] {
		return nil, false
	}
	e, ok := l.services[name]
	if !ok {
		e = &lbEntry{svc: svc}
		l.services[name] = e
	}
	return e, true
}

// markDeleted tombstones the workspace: from now on nothing is submitted
// for it, and results still reach svc as Events.
func (l *loadBalancers) markDeleted(name string, svc *corev1.Service) {
	l.dropHealth(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted[name] = true
	e, ok := l.services[name]
	if !ok {
		e = &lbEntry{}
		l.services[name] = e
	}
	e.svc, e.nodes = svc, nil
}

func (l *loadBalancers) isDeleted(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deleted[name]
}

// forget drops the entry of a destroyed workspace (its tombstone stays).
func (l *loadBalancers) forget(name string) {
	l.mu.Lock()
	delete(l.services, name)
	l.mu.Unlock()
}

// serviceOf is the newest Service seen for workspace name, nil if none.
func (l *loadBalancers) serviceOf(name string) *corev1.Service {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.services[name]; ok {
		return e.svc
	}
	return nil
}

// planOwner is the Service of workspace name's plan Secret (planstore.go)
// and whether it is gone: an orphan's, which the sweep found in the state
// backend, stays known after its destroy was told.
func (l *loadBalancers) planOwner(name string) (*corev1.Service, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o, ok := l.orphans[name]; ok {
		return o, true
	}
	if e, ok := l.services[name]; ok {
		return e.svc, false
	}
	return nil, false
}

// onResult turns an engine outcome into an Event on the Service.
func (l *loadBalancers) onResult(name string, r workspace.Result) bool {
	svc := l.serviceOf(name)
	if svc == nil {
		return false
	}
	// Policy warnings, whether the plan is applied, published or held.
	for _, w := range r.Verdict.Warnings {
		l.event(svc, corev1.EventTypeWarning, ReasonPolicyWarning, w)
	}
	if l.heldResult(svc, name, r) {
		return true
	}
	if l.review != nil && r.Err == nil && r.Changed && r.Verdict.Approved != "" {
		l.event(svc, corev1.EventTypeNormal, ReasonPlanApprovedByPolicy, r.Verdict.Approved+" approves the plan: applied without review")
	}
	if conds := l.refusedKeeps(name, resultConditions(r)); len(conds) > 0 {
		l.conds.set(svc, conds...)
	}
	if l.review != nil {
		l.review.loadBalancerResult(svc, name, r)
		if r.AwaitingApproval {
			return true // the pending-approval Event is recorded; the condition is set above
		}
	}
	l.takeoverResult(svc, name, r)
	if r.Drift && r.Err == nil && !r.Changed {
		return true // re-planned, nothing drifted: no Event
	}
	if eventType, reason, message := resultEvent(r); reason != "" {
		l.event(svc, eventType, reason, message)
	}
	if r.Op == "destroy" && r.Err == nil {
		l.forgetDestroyed(name)
	}
	l.statusAfterRefusal(name, r)
	if approved := l.takeApproved(name); approved && r.Op != "destroy" && r.Err == nil && l.afterApproval != nil {
		go l.afterApproval(svc)
	}
	return true
}

// forgetDestroyed drops the entry of a workspace whose destroy result was
// told, unless the Service wants a load balancer again (revive).
func (l *loadBalancers) forgetDestroyed(name string) {
	l.mu.Lock()
	if l.deleted[name] {
		delete(l.services, name)
	}
	l.mu.Unlock()
}

// onApplyStart records that a plan with changes starts being applied: a
// Normal Event with its summary, and Programmed=False Applying.
func (l *loadBalancers) onApplyStart(name, summary string) bool {
	svc := l.serviceOf(name)
	if svc == nil {
		return false
	}
	l.event(svc, corev1.EventTypeNormal, ReasonApplying, "applying the plan: "+summary)
	l.conds.set(svc, condition(ConditionProgrammed, false, CondReasonApplying, "applying the plan: "+summary))
	return true
}

// tool names the binary that produced a result in messages.
func tool(r workspace.Result) string {
	if r.Tool == "" {
		return "tofu"
	}
	return r.Tool
}

// because says why a plan waits, when the gate (not review mode) holds it.
func because(v plans.GateVerdict) string {
	if v.Approval != "" {
		return ": " + v.Approval
	}
	return ""
}
