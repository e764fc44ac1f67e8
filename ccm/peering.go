package ccm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// peering applies the cluster's BGP peering workspace
// (templates.PeeringWorkspaceName): once the CCM leads, and again after
// every template change, it renders the set's bgp module from the cloud
// config's load_balancer.settings and applies it like the routes
// workspace (review mode holds its plan for approval; the engine's drift
// checks re-plan it like any applied workspace). A failure is logged
// naming the workspace and recorded as a Warning on every Service that
// announces over the peering, and retried with backoff. Settings without
// bgp destroy a peering applied earlier, but only once no Service of the
// bgp variant is left (tearing the sessions down would make their VIPs
// unreachable); until then a Warning says why it is kept.
type peering struct {
	ws peeringWorkspace
	// users lists the Services whose load balancers announce over the
	// peering; event records an Event on one.
	users func() ([]*corev1.Service, error)
	event func(svc *corev1.Service, eventType, reason, message string)
	// review publishes the pending peering plan; nil unless review mode.
	review clusterReview

	kick    chan struct{}
	backoff workqueue.TypedRateLimiter[string]

	mu      sync.Mutex
	lastErr string // the last failure told (not told again on each retry)
	// kept: a destroy waits for the peering's Services to go, so a
	// Service change calls for a pass (servicesChanged).
	kept bool
}

// peeringWorkspace is the peering workspace as the facet sees it.
type peeringWorkspace interface {
	// render returns the workspace to apply, ok false when the settings
	// carry no bgp (or the set has no bgp module).
	render() (spec *workspace.Spec, ok bool, err error)
	// apply submits spec and waits for its outcome.
	apply(ctx context.Context, spec *workspace.Spec) error
	// applied returns the workspace as last applied, ok false when none
	// is (never applied, or destroyed): from the work dir, or, when this
	// work dir never applied it (a new pod: the chart's work dir is an
	// emptyDir, and every cloud config change restarts the pod), from the
	// state backend's catalog.
	applied(ctx context.Context) (spec *workspace.Spec, ok bool, err error)
	// destroy destroys spec, as applied, and waits.
	destroy(ctx context.Context, spec *workspace.Spec) error
}

// errPeeringInUse: bgp was removed from the settings while Services
// still announce over the peering.
var errPeeringInUse = errors.New("still in use")

const (
	peeringRetryMin = 5 * time.Second
	peeringRetryMax = 5 * time.Minute
)

func newPeering(ws peeringWorkspace, review clusterReview, users func() ([]*corev1.Service, error),
	event func(*corev1.Service, string, string, string)) *peering {
	return &peering{ws: ws, review: review, users: users, event: event, kick: make(chan struct{}, 1),
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[string](peeringRetryMin, peeringRetryMax)}
}

// changed asks for another pass (a template change).
func (p *peering) changed() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// servicesChanged asks for another pass when a destroy of the peering
// waits for its Services to go (a Service deleted or moved to another
// variant); otherwise a Service change is not the peering's business.
func (p *peering) servicesChanged() {
	if p == nil {
		return
	}
	p.mu.Lock()
	kept := p.kept
	p.mu.Unlock()
	if kept {
		p.changed()
	}
}

// run reconciles until ctx ends: at once, after every change, and after a
// failure with exponential backoff.
func (p *peering) run(ctx context.Context) {
	for {
		var retry <-chan time.Time
		if err := p.reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			retry = time.After(p.backoff.When(templates.PeeringWorkspaceName))
		} else {
			p.backoff.Forget(templates.PeeringWorkspaceName)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry:
		}
	}
}

// reconcile makes one pass: apply the rendered peering, or destroy an
// applied one the settings no longer ask for.
func (p *peering) reconcile(ctx context.Context) error {
	p.setKept(false)
	spec, ok, err := p.ws.render()
	if err != nil {
		return p.fail("render", err)
	}
	if ok {
		if err := p.ws.apply(ctx, spec); err != nil {
			if errors.Is(err, workspace.ErrAwaitingApproval) {
				return nil // review mode: the approval applies it (onResult tells)
			}
			return p.fail("apply", err)
		}
		p.succeeded()
		return nil
	}
	applied, ok, err := p.ws.applied(ctx)
	if err != nil {
		return p.fail("recall", err)
	}
	if !ok {
		return nil // never applied, or gone
	}
	users, err := p.users()
	if err != nil {
		// Not known yet (the informers have not synced): never destroy
		// the peering under Services not seen; try again shortly.
		klog.V(2).InfoS("BGP peering destroy waits for the Services", "workspace", templates.PeeringWorkspaceName, "err", err)
		return fmt.Errorf("destroy BGP peering workspace %s: %w", templates.PeeringWorkspaceName, err)
	}
	if len(users) > 0 {
		names := make([]string, len(users))
		for i, u := range users {
			names[i] = u.Namespace + "/" + u.Name
		}
		sort.Strings(names)
		// The Event names no other Service: a tenant sees its own Events.
		msg := fmt.Sprintf("load_balancer.settings has no bgp, but the cluster's BGP peering (workspace %s) is kept: %d Service(s) of the %s variant, this one among them, still announce over it; "+
			"it is destroyed once none is left", templates.PeeringWorkspaceName, len(users), templates.PeeringVariant)
		if p.tell(msg) {
			klog.InfoS("BGP peering kept: Services still announce over it", "workspace", templates.PeeringWorkspaceName, "services", strings.Join(names, ", "))
			for _, u := range users {
				p.event(u, corev1.EventTypeWarning, lbcontroller.ReasonPeeringKept, msg)
			}
		}
		p.setKept(true)
		return errPeeringInUse
	}
	klog.InfoS("BGP peering no longer configured; destroying it", "workspace", templates.PeeringWorkspaceName)
	if err := p.ws.destroy(ctx, applied); err != nil {
		if errors.Is(err, workspace.ErrAwaitingApproval) {
			return nil
		}
		return p.fail("destroy", err)
	}
	p.succeeded()
	return nil
}

// fail logs a failed pass with its error and records it on the
// peering's Services (once per distinct error: retries of the same
// failure are not told again). The Event does not carry the error: it
// may name the admin's peers, routers and hosts by address, which the
// Services' tenants must not learn; the log line (the admin's) does.
func (p *peering) fail(op string, err error) error {
	err = fmt.Errorf("%s BGP peering workspace %s: %w", op, templates.PeeringWorkspaceName, err)
	if p.tell(err.Error()) {
		klog.ErrorS(err, "BGP peering failed", "workspace", templates.PeeringWorkspaceName, "op", op)
		users, _ := p.users()
		msg := fmt.Sprintf("the cluster's BGP peering (workspace %s) failed to %s; this Service's announcements wait for it. "+
			"The CCM's log line \"BGP peering failed\" has the error; tfccm retries with backoff", templates.PeeringWorkspaceName, op)
		for _, u := range users {
			p.event(u, corev1.EventTypeWarning, lbcontroller.ReasonPeeringFailed, msg)
		}
	}
	return err
}

// tell reports whether msg differs from the last failure told, and
// remembers it.
func (p *peering) tell(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastErr == msg {
		return false
	}
	p.lastErr = msg
	return true
}

func (p *peering) setKept(kept bool) {
	p.mu.Lock()
	p.kept = kept
	p.mu.Unlock()
}

func (p *peering) succeeded() {
	p.mu.Lock()
	p.lastErr = ""
	p.mu.Unlock()
}

// onResult logs the peering workspace's tofu runs and hands them to
// review mode (its pending plan).
func (p *peering) onResult(name string, res workspace.Result) bool {
	if name != templates.PeeringWorkspaceName {
		return false
	}
	if p.review != nil {
		p.review.ClusterResult(name, res)
	}
	switch {
	case res.Drift:
		if res.Err != nil || res.Changed {
			klog.InfoS("BGP peering re-planned for drift", "workspace", name, "repaired", res.Changed, "err", res.Err)
		}
	case res.AwaitingApproval && res.Plan != nil:
		klog.InfoS("BGP peering plan awaits approval", "workspace", name, "summary", res.Plan.Summary(), "planHash", res.Plan.Hash)
	case res.Err != nil:
		klog.ErrorS(res.Err, "BGP peering run failed", "workspace", name, "op", res.Op, "attempt", res.Attempt)
	default:
		klog.InfoS("BGP peering applied", "workspace", name, "op", res.Op, "changed", res.Changed, "duration", res.Duration.Round(time.Millisecond))
	}
	return true
}
