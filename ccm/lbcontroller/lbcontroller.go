package lbcontroller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// Controller is the load-balancer controller as the cloudprovider façade
// and the engine see it: its Service lifecycle (LoadBalancer), the
// engine's callbacks (OnResult, OnApplyStart), review mode and the Events
// it records. Build it with New, give the engine its Plans, then Attach
// the engine.
type Controller struct {
	cfg        *config.Config
	render     templateRenderer
	events     *events
	plans      *planSecrets
	publishing bool

	lb     *loadBalancers // nil when load_balancer { enabled = false }
	class  *classLoop     // Services of load_balancer_class; nil when lb is
	review *reviewer      // nil unless plans are published (review mode or a gate)
}

// New builds the controller of cfg's Services over the loader's template
// set; publishing says whether plans wait for approval (review mode or a
// policy gate), whose publication and approvals are then its own.
func New(cfg *config.Config, loader *templates.Loader, publishing bool) *Controller {
	c := &Controller{cfg: cfg, events: newEvents(), publishing: publishing}
	c.render = templateRenderer{cfg: cfg, loader: loader, addrs: newAddressBook(cfg), takeover: newTakeover(cfg)}
	c.plans = newPlanSecrets(cfg.Namespace, func(ws string) (*corev1.Service, bool) {
		if c.lb == nil {
			return nil, false
		}
		return c.lb.planOwner(ws)
	})
	c.plans.publishing = publishing
	return c
}

// Plans keeps pending plans in Secrets (workspace.Options.Plans).
func (c *Controller) Plans() plans.Store { return c.plans }

// Engine is what the controller needs of the workspace engine.
type Engine interface {
	lbEngine
	Approve(name, planHash string) error
}

var _ Engine = (*workspace.Engine)(nil)

// Attach gives the controller its engine and builds what runs on it.
func (c *Controller) Attach(engine Engine) {
	var lbRev lbReview
	if c.publishing {
		c.review = newReviewer(engine, c.render, c.events.event, c.cfg.Namespace)
		lbRev = c.review
	}
	if !config.Enabled(c.cfg.LoadBalancer.Enabled) {
		return
	}
	c.lb = newLoadBalancers(engine, c.render, lbRev, c.events.event, c.cfg.Backend.Type != "local", c.cfg.LoadBalancer.EnsureWait)
	c.lb.addrs = c.render.addrs
	c.lb.takeover = c.render.takeover
	c.lb.takeover.recallFrom(engine, c.render.WorkspaceName)
	c.lb.takeover.onChange(c.lb.resyncAll)
	c.lb.serves = c.cfg.Serves
	c.class = newClassLoop(c.lb, c.cfg.Serves, c.cfg.LoadBalancerClass, c.cfg.ClusterName, c.events.event)
	c.lb.afterTakeover = c.class.approvedApplied
	if c.review != nil {
		c.review.setOwners(c.lb.planOwner, c.lb.approvalAccepted, c.cfg.Serves)
		c.lb.afterApproval = c.class.approvedApplied
	}
}

// LoadBalancer is the service controller's cloudprovider.LoadBalancer;
// nil when load balancers are off.
func (c *Controller) LoadBalancer() cloudprovider.LoadBalancer {
	if c.lb == nil {
		return nil
	}
	return c.lb
}

// Event records an Event on obj (deduplicated, truncated).
func (c *Controller) Event(obj runtime.Object, eventType, reason, message string) {
	c.events.event(obj, eventType, reason, message)
}

// OnResult tells a load balancer workspace's outcome to its Service; it
// reports whether the workspace is one of them.
func (c *Controller) OnResult(name string, r workspace.Result) bool {
	return c.lb != nil && c.lb.onResult(name, r)
}

// OnApplyStart tells a Service that its plan starts being applied; it
// reports whether the workspace is one of them.
func (c *Controller) OnApplyStart(name, summary string) bool {
	return c.lb != nil && c.lb.onApplyStart(name, summary)
}

// RoutesResult publishes or withdraws the routes plan (review mode).
func (c *Controller) RoutesResult(r workspace.Result) {
	c.ClusterResult(templates.RoutesWorkspaceName, r)
}

// ClusterResult publishes or withdraws the plan of a cluster workspace
// (routes, BGP peering; review mode).
func (c *Controller) ClusterResult(ws string, r workspace.Result) {
	if c.review != nil {
		c.review.clusterResult(ws, r)
	}
}

// Reviewing reports whether plans are published for approval.
func (c *Controller) Reviewing() bool { return c.review != nil }

// SetInformers registers the controller's watches on the shared informers.
func (c *Controller) SetInformers(f informers.SharedInformerFactory) {
	if c.lb == nil {
		return
	}
	c.lb.watch(f)
	c.lb.addrs.watch(f)
	c.class.watch(f)
	if c.review != nil {
		c.review.watchApprovals(f)
	}
}

// SetClient gives the controller the cluster client and the Event
// recorder (Initialize).
func (c *Controller) SetClient(client kubernetes.Interface, recorder record.EventRecorder) {
	if c.review != nil {
		c.review.setClient(client)
	}
	c.plans.setClient(client)
	c.render.takeover.setClient(client)
	if c.lb != nil {
		c.lb.conds.setClient(client)
		c.class.setClient(client)
	}
	c.events.setRecorder(recorder)
}

// StartReview starts watching plan approvals and reports leftovers; it
// runs before the engine starts, so no approval is missed.
func (c *Controller) StartReview(ctx context.Context) {
	if c.review != nil {
		c.review.watchPlans(ctx)
		go c.review.reportLeftovers(ctx)
	}
}

// Start runs the controller's loops until ctx ends: resync, orphan sweep,
// health (when health_interval is set), the class loop and, with routes,
// the routes plan's approval poll.
func (c *Controller) Start(ctx context.Context, engine *workspace.Engine, routes bool) {
	if c.lb != nil {
		go c.lb.runResync(ctx)
		go c.lb.runSweep(ctx, sweepInterval)
		if c.cfg.LoadBalancer.HealthInterval > 0 {
			go c.lb.runHealth(ctx, engine, c.cfg.LoadBalancer.HealthInterval, c.cfg.Terraform.Parallelism)
		}
		go c.class.run(ctx)
		go c.lb.takeover.run(ctx)
	}
	if routes && c.review != nil {
		go c.review.pollRoutesApproval(ctx)
	}
}

// TemplatesChanged re-renders every load balancer after the override
// directory changed, or tells every Service the new override was rejected.
func (c *Controller) TemplatesChanged(err error) {
	if c.lb == nil {
		return
	}
	if err != nil {
		c.lb.eventAll(corev1.EventTypeWarning, ReasonTemplateRejected, err.Error())
		return
	}
	c.lb.resyncAll()
}

// EventCorrelation is the Event broadcaster's correlation (spam filter
// keyed per object and reason).
func EventCorrelation() record.CorrelatorOptions { return eventCorrelation() }
