package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// Review mode (terraform { review = true }, or a policy rule that requires
// approval) in Kubernetes terms. Everything lives in tfccm's own namespace
// (config.Namespace), which only the cluster admin and the approvers write,
// never in a tenant's (docs/security.md):
//
//   - A plan awaiting approval is published as the ConfigMap
//     tfccm-plan-<workspace> (annotations.PlanHash names the plan; labels
//     name the Service's namespace, name and UID) and, for a load balancer,
//     as the Event TerraformPlanPendingApproval on the Service.
//   - An approver approves by setting tfccm.io/approved-plan=<hash> on that
//     ConfigMap (`tfccm approve`); the routes plan and an orphan's destroy
//     alike. The annotation on a Service approves nothing: a Warning Event
//     says where approvals go (review_ignored.go).
//   - After the apply (or destroy) the ConfigMap is deleted; a new plan
//     replaces it, dropping an approval of the old hash.
//
// Approvals are noticed by an informer on the plan ConfigMaps of tfccm's
// namespace (review_watch.go), and read again from its cache by
// EnsureLoadBalancer, UpdateLoadBalancer, EnsureLoadBalancerDeleted and
// the routes and orphan polls (a plan taken back after a restart).

// maxPublishedPlan bounds a plan ConfigMap's data (ConfigMaps cap at 1 MiB
// including metadata).
const maxPublishedPlan = 900 << 10

// routesApprovalPoll is how often the routes plan's approval is looked
// for (in the informer's cache) while the routes plan awaits one.
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
	// namespace is tfccm's own (config.Namespace): plans and approvals.
	namespace string

	mu      sync.Mutex
	client  kubernetes.Interface        // nil until Initialize
	plans   corelisters.ConfigMapLister // the plan ConfigMaps' cache; nil until watchPlans
	synced  cache.InformerSynced
	owner   func(ws string) (*corev1.Service, bool) // a load balancer workspace's Service (nil: not known)
	applied func(ws string)                         // told when an approval was accepted
	serves  func(*corev1.Service) bool              // the Services tfccm serves (nil: none)
	refused map[string]string                       // workspace -> approved hash already reported as refused
	told    map[string]string                       // workspace -> hash already reported as applied before
	ignored reported[types.UID]                     // Service -> its approval annotation already reported as ignored
}

func newReviewer(engine reviewEngine, render renderer, event eventFunc, namespace string) *reviewer {
	return &reviewer{engine: engine, render: render, event: event, namespace: namespace,
		refused: map[string]string{}, told: map[string]string{}}
}

// setClient gives the reviewer the cluster client (Initialize).
func (rv *reviewer) setClient(client kubernetes.Interface) {
	rv.mu.Lock()
	rv.client = client
	rv.mu.Unlock()
}

// setOwners tells the reviewer whose workspace is whose (the LoadBalancer
// facet's planOwner), whom to tell of an accepted approval and which
// Services tfccm serves (config.Serves).
func (rv *reviewer) setOwners(owner func(ws string) (*corev1.Service, bool), applied func(ws string), serves func(*corev1.Service) bool) {
	rv.mu.Lock()
	rv.owner, rv.applied, rv.serves = owner, applied, serves
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
func planData(p *plans.PendingPlan, limit int) map[string]string {
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

// planLabels are the labels of the plan ConfigMap and Secret of
// workspace ws, svc's (nil svc: a cluster workspace's, routes or BGP
// peering).
func planLabels(ws string, svc *corev1.Service) map[string]string {
	if svc == nil {
		kind := annotations.PlanOfRoutes
		if ws == templates.PeeringWorkspaceName {
			kind = annotations.PlanOfPeering
		}
		return map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanKind: kind}
	}
	return map[string]string{
		annotations.ManagedBy:            "tfccm",
		annotations.PlanKind:             annotations.PlanOfLoadBalancer,
		annotations.PlanServiceUID:       string(svc.UID),
		annotations.PlanServiceNamespace: svc.Namespace,
		annotations.PlanServiceName:      svc.Name,
	}
}

// publish writes the plan ConfigMap of workspace ws (create or update) in
// tfccm's namespace. An approval of another hash (a superseded plan's) is
// dropped; one of this hash (a plan taken back after a restart) is kept.
func (rv *reviewer) publish(ctx context.Context, ws string, svc *corev1.Service, p *plans.PendingPlan) error {
	client := rv.kube()
	if client == nil {
		return nil
	}
	cms := client.CoreV1().ConfigMaps(rv.namespace)
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        annotations.PlanConfigMapName(ws),
			Namespace:   rv.namespace,
			Labels:      planLabels(ws, svc),
			Annotations: map[string]string{annotations.PlanHash: p.Hash},
		},
		Data: planData(p, maxPublishedPlan),
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = cms.Create(ctx, want, metav1.CreateOptions{})
			return err
		case err != nil:
			return err
		}
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
		if approved, ok := cur.Annotations[annotations.ApprovedPlan.Name]; ok && strings.TrimSpace(approved) != p.Hash {
			delete(cur.Annotations, annotations.ApprovedPlan.Name)
		}
		cur.Annotations[annotations.PlanHash] = p.Hash
		cur.Data = want.Data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publish plan %s/%s: %w", rv.namespace, want.Name, err)
	}
	return nil
}

// unpublish deletes the plan ConfigMap, if any.
func (rv *reviewer) unpublish(ctx context.Context, ws string) {
	client := rv.kube()
	if client == nil {
		return
	}
	err := client.CoreV1().ConfigMaps(rv.namespace).Delete(ctx, annotations.PlanConfigMapName(ws), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "Delete published plan", "namespace", rv.namespace, "configMap", annotations.PlanConfigMapName(ws))
	}
}

// loadBalancerResult publishes or withdraws a load balancer plan after an
// engine result, and records the pending-approval Event.
func (rv *reviewer) loadBalancerResult(svc *corev1.Service, ws string, r workspace.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case r.AwaitingApproval && r.Plan != nil:
		if err := rv.publish(ctx, ws, svc, r.Plan); err != nil {
			klog.ErrorS(err, "Publish plan", "service", klog.KObj(svc))
		}
		if !r.Restored { // a plan taken back after a restart was told already
			rv.event(svc, corev1.EventTypeNormal, ReasonPlanPendingApproval, pendingMessage(rv.namespace, ws, r.Plan, approveCommand(svc)))
		}
	case r.Err == nil && !(r.Drift && !r.Changed):
		rv.unpublish(ctx, ws)
	}
}

// clusterResult does the same for a cluster workspace (routes, BGP
// peering: templates.IsClusterWorkspace), which has no Service.
func (rv *reviewer) clusterResult(ws string, r workspace.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case r.AwaitingApproval && r.Plan != nil:
		if err := rv.publish(ctx, ws, nil, r.Plan); err != nil {
			klog.ErrorS(err, "Publish cluster workspace plan", "workspace", ws)
		}
		klog.InfoS("Cluster workspace plan awaiting approval", "workspace", ws, "message", pendingMessage(rv.namespace, ws, r.Plan, clusterApproveCommand(ws)))
	case r.Err == nil && !(r.Drift && !r.Changed):
		rv.unpublish(ctx, ws)
	}
}

// clusterApproveCommand is the `tfccm approve` an approver runs for a
// cluster workspace's plan.
func clusterApproveCommand(ws string) string {
	if ws == templates.PeeringWorkspaceName {
		return "tfccm approve --peering"
	}
	return "tfccm approve --routes"
}

// approveCommand is the `tfccm approve` an approver runs for svc's plan
// (nil: the routes plan).
func approveCommand(svc *corev1.Service) string {
	if svc == nil {
		return clusterApproveCommand(templates.RoutesWorkspaceName)
	}
	return fmt.Sprintf("tfccm approve --namespace %s --service %s", svc.Namespace, svc.Name)
}

func pendingMessage(namespace, ws string, p *plans.PendingPlan, command string) string {
	verb := "apply"
	switch {
	case p.Destroy:
		verb = "destroy"
	case p.Drift:
		verb = "drift repair"
	}
	replaces := ""
	if p.Replaces != "" {
		why := p.ReplacedWhy
		if why == "" {
			why = "the inputs changed"
		}
		replaces = fmt.Sprintf(" (replaces plan %s: %s; that plan can no longer be approved)", p.Replaces, why)
	}
	return fmt.Sprintf("%s plan %s awaiting approval%s: %s. Review ConfigMap %s/%s; an approver approves it with `%s --plan-hash %s` (annotation %s=%s on that ConfigMap)",
		verb, p.Hash, replaces, p.Summary(), namespace, annotations.PlanConfigMapName(ws), command, p.Hash, annotations.ApprovedPlan.Name, p.Hash)
}

// approveService acts on the approval of the Service's pending plan (its
// ConfigMap in tfccm's namespace); an approval annotation on the Service
// itself is reported as ignored.
func (rv *reviewer) approveService(svc *corev1.Service) {
	rv.ignoreServiceApproval(svc)
	rv.approveFrom(svc, rv.render.WorkspaceName(svc))
}

// approveFrom approves ws's pending plan if its ConfigMap carries an
// approval. obj is the Service that gets the Events (nil: routes). A hash
// that is not the pending plan's is reported once as a Warning Event; no
// pending plan is not an error (the approval was already applied, or the
// plan is still being made).
func (rv *reviewer) approveFrom(obj *corev1.Service, ws string) {
	raw, set := rv.approvalOf(ws)
	if !set {
		return
	}
	hash, err := annotations.ApprovedPlan.Parse(raw)
	if err != nil {
		if obj != nil {
			rv.refuse(obj, ws, raw, fmt.Sprintf("ConfigMap %s/%s: annotation %s: %v", rv.namespace, annotations.PlanConfigMapName(ws), annotations.ApprovedPlan.Name, err))
		} else {
			klog.InfoS("Cluster workspace approval refused", "workspace", ws, "err", err)
		}
		return
	}
	rv.approve(obj, ws, hash)
}

// approvalOf reads the approval annotation of ws's plan ConfigMap: from
// the informer's cache once it has synced, else from the API.
func (rv *reviewer) approvalOf(ws string) (string, bool) {
	rv.mu.Lock()
	lister, synced, client := rv.plans, rv.synced, rv.client
	rv.mu.Unlock()
	name := annotations.PlanConfigMapName(ws)
	var cm *corev1.ConfigMap
	var err error
	switch {
	case lister != nil && synced():
		cm, err = lister.ConfigMaps(rv.namespace).Get(name)
	case client != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cm, err = client.CoreV1().ConfigMaps(rv.namespace).Get(ctx, name, metav1.GetOptions{})
		cancel()
	default:
		return "", false
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Read plan ConfigMap", "namespace", rv.namespace, "configMap", name)
		}
		return "", false
	}
	raw, ok := cm.Annotations[annotations.ApprovedPlan.Name]
	return raw, ok
}

func (rv *reviewer) approve(obj *corev1.Service, ws, hash string) {
	err := rv.engine.Approve(ws, hash)
	switch {
	case err == nil:
		rv.mu.Lock()
		delete(rv.refused, ws)
		applied := rv.applied
		rv.mu.Unlock()
		klog.InfoS("Plan approved on its ConfigMap", "workspace", ws, "planHash", hash, "configMap", rv.namespace+"/"+annotations.PlanConfigMapName(ws))
		if applied != nil && obj != nil {
			applied(ws)
		}
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

// pollRoutesApproval looks for the cluster workspaces' (routes, BGP
// peering) approvals while their plans await one, until ctx ends (the
// informer tells of a new approval at once; the poll finds one made
// before a restart's plan was taken back).
func (rv *reviewer) pollRoutesApproval(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		rv.checkClusterApproval(templates.RoutesWorkspaceName)
		rv.checkClusterApproval(templates.PeeringWorkspaceName)
	}, routesApprovalPoll)
}

// checkClusterApproval approves the pending plan of cluster workspace ws
// when its ConfigMap names it.
func (rv *reviewer) checkClusterApproval(ws string) {
	if rv.engine.Status(ws).Phase != workspace.PhaseAwaitingApproval {
		return
	}
	rv.approveFrom(nil, ws)
}
