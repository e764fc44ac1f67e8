package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Review mode (terraform { review = true }) in Kubernetes terms:
//
//   - A load balancer plan awaiting approval is published as the Event
//     TerraformPlanPendingApproval on the Service and as the ConfigMap
//     tfccm-plan-<workspace> in the Service's namespace (annotations.PlanHash
//     names the plan). The reviewer approves by setting
//     tfccm.io/approved-plan=<hash> on the Service.
//   - The routes plan is published as the ConfigMap tfccm-plan-routes in
//     kube-system and approved by the same annotation on that ConfigMap.
//   - After the apply (or destroy) the ConfigMap is deleted.
//
// Approvals are picked up by EnsureLoadBalancer, UpdateLoadBalancer and
// EnsureLoadBalancerDeleted, by a Service informer (the service controller
// does not resync unchanged Services) and, for routes, by a poll.

// maxPublishedPlan bounds a plan ConfigMap's data (ConfigMaps cap at 1 MiB
// including metadata).
const maxPublishedPlan = 900 << 10

// routesApprovalPoll is how often the routes plan ConfigMap is read for an
// approval while the routes plan awaits one.
const routesApprovalPoll = 3 * time.Second

// awaitingRetry is how soon the service controller asks again while a plan
// awaits approval (approvals are also picked up by the informer).
const awaitingRetry = 5 * time.Second

// reviewEngine is what review mode needs of the workspace engine.
type reviewEngine interface {
	Approve(name, planHash string) error
	Status(name string) workspace.Status
}

var _ reviewEngine = (*workspace.Engine)(nil)

// reviewer publishes plans and turns approvals into engine.Approve calls.
type reviewer struct {
	engine reviewEngine
	render renderer // workspace names of Services
	event  eventFunc

	mu      sync.Mutex
	client  kubernetes.Interface // nil until Initialize
	refused map[string]string    // workspace -> approved hash already reported as refused
	told    map[string]string    // workspace -> hash already reported as applied before
}

func newReviewer(engine reviewEngine, render renderer, event eventFunc) *reviewer {
	return &reviewer{engine: engine, render: render, event: event, refused: map[string]string{}, told: map[string]string{}}
}

// setClient gives the reviewer the cluster client (Initialize).
func (rv *reviewer) setClient(client kubernetes.Interface) {
	rv.mu.Lock()
	rv.client = client
	rv.mu.Unlock()
}

func (rv *reviewer) kube() kubernetes.Interface {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.client
}

// planData is the ConfigMap data of a published plan, at most limit bytes:
// the summary, the text (truncated with a marker if needed) and the
// redacted JSON (left out, with a note, if it does not fit).
func planData(p *workspace.PendingPlan, limit int) map[string]string {
	data := map[string]string{"summary": p.Summary(), "plan-hash": p.Hash}
	used := len(data["summary"]) + len(data["plan-hash"])
	text := p.Text
	room := limit - used - 512
	if len(text) > room {
		marker := fmt.Sprintf("\n\n[truncated by tfccm: the plan text is %d bytes, above the ConfigMap limit; the full plan is .tfccm/plan.txt in the workspace directory]\n", len(p.Text))
		cut := max(room-len(marker), 0)
		text = text[:cut] + marker
	}
	data["plan.txt"] = text
	used += len(text)
	if used+len(p.JSON) <= limit-64 {
		data["plan.json"] = string(p.JSON)
	} else {
		data["plan.json.omitted"] = "the redacted JSON plan does not fit in the ConfigMap; it is .tfccm/plan.json in the workspace directory"
	}
	return data
}

// publish writes the plan ConfigMap (create or update).
func (rv *reviewer) publish(ctx context.Context, namespace, ws string, labels map[string]string, p *workspace.PendingPlan) error {
	client := rv.kube()
	if client == nil {
		return nil
	}
	cms := client.CoreV1().ConfigMaps(namespace)
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        annotations.PlanConfigMapName(ws),
			Namespace:   namespace,
			Labels:      map[string]string{annotations.ManagedBy: "tfccm"},
			Annotations: map[string]string{annotations.PlanHash: p.Hash},
		},
		Data: planData(p, maxPublishedPlan),
	}
	for k, v := range labels {
		want.Labels[k] = v
	}
	cur, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		cur = cur.DeepCopy()
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		for k, v := range want.Labels {
			cur.Labels[k] = v
		}
		cur.Annotations[annotations.PlanHash] = p.Hash
		cur.Data = want.Data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("publish plan %s/%s: %w", namespace, want.Name, err)
	}
	return nil
}

// unpublish deletes the plan ConfigMap, if any.
func (rv *reviewer) unpublish(ctx context.Context, namespace, ws string) {
	if rv.kube() == nil {
		return
	}
	err := rv.kube().CoreV1().ConfigMaps(namespace).Delete(ctx, annotations.PlanConfigMapName(ws), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "Delete published plan", "namespace", namespace, "configMap", annotations.PlanConfigMapName(ws))
	}
}

// loadBalancerResult publishes or withdraws a load balancer plan after an
// engine result, and records the pending-approval Event.
func (rv *reviewer) loadBalancerResult(svc *corev1.Service, ws string, r workspace.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case r.AwaitingApproval && r.Plan != nil:
		if err := rv.publish(ctx, svc.Namespace, ws, map[string]string{annotations.PlanServiceUID: string(svc.UID)}, r.Plan); err != nil {
			klog.ErrorS(err, "Publish plan", "service", klog.KObj(svc))
		}
		if !r.Restored { // a plan taken back after a restart was told already
			rv.event(svc, corev1.EventTypeNormal, ReasonPlanPendingApproval, pendingMessage(svc.Namespace, ws, r.Plan, "the Service"))
		}
	case r.Err == nil && !(r.Drift && !r.Changed):
		rv.unpublish(ctx, svc.Namespace, ws)
	}
}

// routesResult does the same for the routes workspace.
func (rv *reviewer) routesResult(r workspace.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case r.AwaitingApproval && r.Plan != nil:
		if err := rv.publish(ctx, annotations.RoutesPlanNamespace, templates.RoutesWorkspaceName, nil, r.Plan); err != nil {
			klog.ErrorS(err, "Publish routes plan")
		}
		klog.InfoS("Routes plan awaiting approval", "message", pendingMessage(annotations.RoutesPlanNamespace, templates.RoutesWorkspaceName, r.Plan, "that ConfigMap"))
	case r.Err == nil && !(r.Drift && !r.Changed):
		rv.unpublish(ctx, annotations.RoutesPlanNamespace, templates.RoutesWorkspaceName)
	}
}

func pendingMessage(namespace, ws string, p *workspace.PendingPlan, where string) string {
	verb := "apply"
	switch {
	case p.Destroy:
		verb = "destroy"
	case p.Drift:
		verb = "drift repair"
	}
	replaces := ""
	if p.Replaces != "" {
		replaces = fmt.Sprintf(" (replaces plan %s: the inputs changed; that plan can no longer be approved)", p.Replaces)
	}
	return fmt.Sprintf("%s plan %s awaiting approval%s: %s. Review ConfigMap %s/%s; approve by setting the annotation %s=%s on %s",
		verb, p.Hash, replaces, p.Summary(), namespace, annotations.PlanConfigMapName(ws), annotations.ApprovedPlan.Name, p.Hash, where)
}

// approveService approves the Service's pending plan if the Service
// carries tfccm.io/approved-plan. A hash that is not the pending plan's is
// reported once as a Warning Event; no pending plan is not an error (the
// approval was already applied, or the plan is still being made).
func (rv *reviewer) approveService(svc *corev1.Service) {
	hash, set, err := annotations.ApprovedPlan.Get(svc.Annotations)
	if !set {
		return
	}
	ws := rv.render.WorkspaceName(svc)
	if err != nil {
		rv.refuse(svc, ws, svc.Annotations[annotations.ApprovedPlan.Name], err.Error())
		return
	}
	rv.approve(svc, ws, hash)
}

func (rv *reviewer) approve(obj *corev1.Service, ws, hash string) {
	err := rv.engine.Approve(ws, hash)
	switch {
	case err == nil:
		rv.mu.Lock()
		delete(rv.refused, ws)
		rv.mu.Unlock()
	case errors.Is(err, workspace.ErrPlanMismatch):
		if obj != nil {
			rv.refuse(obj, ws, hash, err.Error())
		} else {
			klog.InfoS("Routes approval refused", "err", err)
		}
	case errors.Is(err, workspace.ErrAlreadyApplied):
		rv.mu.Lock()
		told := rv.told[ws] == hash
		rv.told[ws] = hash
		rv.mu.Unlock()
		if told {
			return
		}
		if obj != nil {
			rv.event(obj, corev1.EventTypeNormal, ReasonPlanAlreadyApplied, fmt.Sprintf("plan %s was already approved and applied; nothing to do (a new change gets a new plan and needs its own approval)", hash))
		} else {
			klog.InfoS("Routes plan already approved and applied; nothing to do", "planHash", hash)
		}
	case errors.Is(err, workspace.ErrNoPendingPlan):
		klog.V(4).InfoS("No plan awaiting approval", "workspace", ws, "hash", hash)
	default:
		klog.ErrorS(err, "Approve plan", "workspace", ws)
	}
}

func (rv *reviewer) refuse(svc *corev1.Service, ws, hash, why string) {
	rv.mu.Lock()
	seen := rv.refused[ws] == hash
	rv.refused[ws] = hash
	rv.mu.Unlock()
	if !seen {
		rv.event(svc, corev1.EventTypeWarning, ReasonPlanNotApproved, why+"; nothing applied")
	}
}

// watchApprovals registers a Service handler on the shared informer: the
// approval annotation is acted on as soon as it is set.
func (rv *reviewer) watchApprovals(f informers.SharedInformerFactory) {
	inf := f.Core().V1().Services().Informer()
	handle := func(obj any) {
		if svc, ok := obj.(*corev1.Service); ok && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			rv.approveService(svc)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		klog.ErrorS(err, "Watch Services for plan approvals")
	}
}

// pollRoutesApproval reads the routes plan ConfigMap while the routes plan
// awaits approval, until ctx ends.
func (rv *reviewer) pollRoutesApproval(ctx context.Context) {
	wait.UntilWithContext(ctx, rv.checkRoutesApproval, routesApprovalPoll)
}

// checkRoutesApproval approves the pending routes plan when its ConfigMap
// names it.
func (rv *reviewer) checkRoutesApproval(ctx context.Context) {
	client := rv.kube()
	if client == nil || rv.engine.Status(templates.RoutesWorkspaceName).Phase != workspace.PhaseAwaitingApproval {
		return
	}
	cm, err := client.CoreV1().ConfigMaps(annotations.RoutesPlanNamespace).Get(ctx, annotations.PlanConfigMapName(templates.RoutesWorkspaceName), metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Read routes plan ConfigMap")
		}
		return
	}
	raw, ok := cm.Annotations[annotations.ApprovedPlan.Name]
	if !ok {
		return
	}
	hash, err := annotations.ApprovedPlan.Parse(raw)
	if err != nil {
		klog.InfoS("Routes approval refused", "err", err)
		return
	}
	rv.approve(nil, templates.RoutesWorkspaceName, hash)
}
