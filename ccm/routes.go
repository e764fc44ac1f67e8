package ccm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

var _ cloudprovider.Routes = (*routes)(nil)

// routeQuiet ends a gather window early: when no CreateRoute/DeleteRoute
// call arrived for this long, the batch is applied without waiting for the
// rest of config.Routes.BatchWindow. The route controller issues all calls
// of one reconcile within milliseconds, so a quiet gap means it is done.
const routeQuiet = 100 * time.Millisecond

// routesEnabled: the facet serves routes when it is not switched off and the
// cloud config asks for it, by `routes { enabled = true }` or by configuring
// the block (settings or batch_window). Like instances, which need sources,
// an unconfigured facet stays off: with Routes() supported the
// cloud-controller-manager requires --cluster-cidr (or
// --configure-cloud-routes=false), which clusters without cloud routes
// should not have to pass.
func routesEnabled(cfg *config.Config) bool { return cfg.RoutesEnabled() }

// routes implements cloudprovider.Routes over the cluster's one routes
// workspace. CreateRoute and DeleteRoute calls are gathered into batches;
// each batch renders the complete desired route set (what is applied, with
// the batch's changes on top), applies it through the engine and releases
// every call of the batch with the outcome. ListRoutes never waits on tofu:
// it reports the `routes` output of the last successful apply.
type routes struct {
	batch *batcher

	// ws is the routes workspace: its status, and applying a desired set
	// (render, submit, wait); engineRoutes, or a fake in tests.
	ws routesWorkspace
	// review publishes pending routes plans; nil unless review mode.
	review routesReview

	mu    sync.Mutex
	nodes corelisters.NodeLister     // nil until SetInformers
	prev  map[string]templates.Route // the last set applied, for addresses
	ctx   context.Context            // lifetime of batches

	runs atomic.Int64 // tofu runs of the routes workspace (engine results)

	// applying serializes batches and template re-renders.
	applying sync.Mutex
}

// routesWorkspace is the routes workspace as the facet sees it.
type routesWorkspace interface {
	status() workspace.Status
	apply(ctx context.Context, desired []templates.Route) error
}

func newRoutes(ws routesWorkspace, review routesReview, window time.Duration) *routes {
	r := &routes{ws: ws, review: review, prev: map[string]templates.Route{}, ctx: context.Background()}
	r.batch = newBatcher(window, r.flush)
	return r
}

// start ties batches to ctx (the controller's lifetime): a batch waiting
// for tofu when ctx ends fails its calls instead of hanging.
func (r *routes) start(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
}

func (r *routes) setNodeLister(l corelisters.NodeLister) {
	r.mu.Lock()
	r.nodes = l
	r.mu.Unlock()
}

// appliedRoutes decodes the `routes` output of the last successful apply.
// A workspace never applied (or destroyed) has no routes.
func appliedRoutes(st workspace.Status) (map[string]templates.RouteOutput, error) {
	if st.AppliedHash == "" || st.Phase == workspace.PhaseDestroyed {
		return map[string]templates.RouteOutput{}, nil
	}
	return templates.DecodeRoutes(st.Outputs)
}

// ListRoutes reports the `routes` output of the routes workspace's last
// successful apply (from memory, or from the engine's record after a
// restart), sorted by name. It never waits for tofu.
func (r *routes) ListRoutes(_ context.Context, _ string) ([]*cloudprovider.Route, error) {
	applied, err := appliedRoutes(r.ws.status())
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	names := make([]string, 0, len(applied))
	for n := range applied {
		names = append(names, n)
	}
	slices.Sort(names)
	list := make([]*cloudprovider.Route, 0, len(names))
	for _, n := range names {
		o := applied[n]
		rt := &cloudprovider.Route{Name: n, DestinationCIDR: o.DestinationCIDR, Blackhole: o.Blackhole}
		if o.TargetNode != nil {
			rt.TargetNode = types.NodeName(*o.TargetNode)
		}
		list = append(list, rt)
	}
	return list, nil
}

// CreateRoute adds a route to the next batch and returns when that batch is
// applied or failed. The route is named templates.RouteName(node, CIDR), so
// a dual-stack node has two; nameHint (the node UID) is not needed.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	rt, err := routeFromRequest(route)
	if err != nil {
		return fmt.Errorf("create route: %w", err)
	}
	if r.isApplied(rt) {
		return nil
	}
	if err := r.batch.do(ctx, &routeOp{route: rt}); err != nil {
		return fmt.Errorf("create route %s: %w", rt.Name, err)
	}
	return nil
}

// DeleteRoute removes a route (as listed by ListRoutes) in the next batch
// and returns when that batch is applied or failed.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if route == nil {
		return errors.New("delete route: no route")
	}
	name := route.Name
	if name == "" {
		name = templates.RouteName(string(route.TargetNode), route.DestinationCIDR)
	}
	if err := r.batch.do(ctx, &routeOp{del: true, route: templates.Route{Name: name}}); err != nil {
		return fmt.Errorf("delete route %s: %w", name, err)
	}
	return nil
}

// routeFromRequest validates a CreateRoute request; bad input changes nothing.
func routeFromRequest(route *cloudprovider.Route) (templates.Route, error) {
	if route == nil {
		return templates.Route{}, errors.New("no route")
	}
	if route.TargetNode == "" {
		return templates.Route{}, fmt.Errorf("route to %q has no target node", route.DestinationCIDR)
	}
	if _, err := netip.ParsePrefix(route.DestinationCIDR); err != nil {
		return templates.Route{}, fmt.Errorf("route to node %s: destination %q is not a CIDR", route.TargetNode, route.DestinationCIDR)
	}
	node := string(route.TargetNode)
	return templates.Route{
		Name:                templates.RouteName(node, route.DestinationCIDR),
		DestinationCIDR:     route.DestinationCIDR,
		TargetNode:          node,
		TargetNodeAddresses: slices.Clone(route.TargetNodeAddresses),
	}, nil
}

// isApplied reports whether rt is applied as asked (same target, same
// addresses as last submitted), so CreateRoute can return at once. It is
// the common case for routes this facet created ahead of the call.
func (r *routes) isApplied(rt templates.Route) bool {
	applied, err := appliedRoutes(r.ws.status())
	if err != nil {
		return false
	}
	o, ok := applied[rt.Name]
	if !ok || o.Blackhole || o.TargetNode == nil || *o.TargetNode != rt.TargetNode || o.DestinationCIDR != rt.DestinationCIDR {
		return false
	}
	r.mu.Lock()
	prev, ok := r.prev[rt.Name]
	r.mu.Unlock()
	return ok && slices.Equal(prev.TargetNodeAddresses, rt.TargetNodeAddresses)
}

// flush applies one batch and returns each operation's outcome. It first
// applies the applied routes with the batch's operations on top and the
// routes of Nodes still waiting for theirs (see desiredRoutes). If that
// fails, one bad route must not block the others forever (the route
// controller would send it again every period): the batch is retried
// without the ahead-of-calls routes, then split in halves until the
// operations that fail on their own are found; they get tofu's message,
// the rest are applied. A failure leaves the applied set as it was.
// Failures that are not about the routes (a pending review, shutdown) are
// not split.
func (r *routes) flush(ops []*routeOp) []error {
	r.applying.Lock()
	defer r.applying.Unlock()
	errs := make([]error, len(ops))
	err := r.applyOps(ops, true)
	if err == nil {
		return errs
	}
	if splittable(err) {
		klog.InfoS("Routes batch failed; retrying without routes ahead of the controller's calls", "ops", len(ops), "err", err)
		if err = r.applyOps(ops, false); err == nil {
			return errs
		}
	}
	if !splittable(err) || len(ops) == 1 {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	r.bisect(ops, errs, 0, err)
	return errs
}

// rerender applies the applied route set again with the current templates
// (after a template override changed); a routes workspace never applied is
// left alone.
func (r *routes) rerender() error {
	r.applying.Lock()
	defer r.applying.Unlock()
	if r.ws.status().AppliedHash == "" {
		return nil
	}
	return r.applyOps(nil, false)
}

// bisect finds, in ops (which failed together with err), the operations
// that fail on their own, applying the others; errs[offset+i] gets ops[i]'s
// outcome.
func (r *routes) bisect(ops []*routeOp, errs []error, offset int, err error) {
	if len(ops) == 1 || !splittable(err) {
		for i := range ops {
			errs[offset+i] = err
		}
		return
	}
	mid := len(ops) / 2
	for _, half := range []struct {
		ops []*routeOp
		off int
	}{{ops[:mid], offset}, {ops[mid:], offset + mid}} {
		if e := r.applyOps(half.ops, false); e != nil {
			r.bisect(half.ops, errs, half.off, e)
		}
	}
}

// splittable reports whether a failed apply may be caused by the routes in
// it, so that applying fewer of them can succeed.
func splittable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, workspace.ErrAwaitingApproval)
}

// applyOps applies the applied routes with ops on top and, if ahead, the
// routes of Nodes that have pod CIDRs but no route yet.
func (r *routes) applyOps(ops []*routeOp, ahead bool) error {
	applied, err := appliedRoutes(r.ws.status())
	if err != nil {
		return err
	}
	r.mu.Lock()
	lister, prev, ctx := r.nodes, r.prev, r.ctx
	r.mu.Unlock()
	var nodes []*corev1.Node
	if lister != nil {
		if nodes, err = lister.List(labels.Everything()); err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
	}
	desired := desiredRoutes(applied, ops, nodes, prev, ahead)
	if err := r.ws.apply(ctx, desired); err != nil {
		return err
	}
	next := make(map[string]templates.Route, len(desired))
	for _, d := range desired {
		next[d.Name] = d
	}
	r.mu.Lock()
	r.prev = next
	r.mu.Unlock()
	return nil
}

// desiredRoutes computes the complete route set of a batch, sorted by name:
//
//  1. the applied routes (from the `routes` output); their node addresses
//     come from the Node (the informer), else from the last set submitted.
//     An applied route whose node is unknown to both is dropped (its node
//     is gone; the route controller would delete it).
//  2. the batch's calls in arrival order: a create sets its route, a
//     delete removes it.
//  3. if ahead: routes of nodes that have pod CIDRs but no route yet and
//     were not deleted in this batch. The route controller creates exactly these
//     (templates.RoutesFromNodes is its rule), but at most 200 calls at a
//     time, each waiting for its batch; adding them ahead turns an initial
//     sync of N nodes into one apply instead of N/200, and their calls then
//     find the route applied and return at once.
func desiredRoutes(applied map[string]templates.RouteOutput, ops []*routeOp, nodes []*corev1.Node, prev map[string]templates.Route, ahead bool) []templates.Route {
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	set := make(map[string]templates.Route, len(applied)+len(ops))
	for name, o := range applied {
		rt := templates.Route{Name: name, DestinationCIDR: o.DestinationCIDR, Blackhole: o.Blackhole}
		if o.TargetNode != nil {
			rt.TargetNode = *o.TargetNode
		}
		if n, ok := byName[rt.TargetNode]; ok && rt.TargetNode != "" {
			rt.TargetNodeAddresses = n.Status.Addresses
		} else if p, ok := prev[name]; ok {
			rt.TargetNodeAddresses = p.TargetNodeAddresses
		} else if !rt.Blackhole {
			klog.V(2).InfoS("Dropping applied route of an unknown node", "route", name, "node", rt.TargetNode)
			continue
		}
		set[name] = rt
	}
	deleted := map[string]bool{}
	for _, op := range ops {
		if op.del {
			delete(set, op.route.Name)
			deleted[op.route.Name] = true
			continue
		}
		set[op.route.Name] = op.route
		delete(deleted, op.route.Name)
	}
	if ahead {
		for _, rt := range templates.RoutesFromNodes(nodes) {
			if _, ok := set[rt.Name]; !ok && !deleted[rt.Name] {
				set[rt.Name] = rt
			}
		}
	}
	out := make([]templates.Route, 0, len(set))
	for _, rt := range set {
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b templates.Route) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// onResult counts and logs the routes workspace's tofu runs. The route
// controller records its own Events (FailedToCreateRoute) on the Node with
// the error CreateRoute returned.
func (r *routes) onResult(name string, res workspace.Result) bool {
	if name != templates.RoutesWorkspaceName {
		return false
	}
	if r.review != nil {
		r.review.RoutesResult(res)
	}
	if res.Drift {
		if res.Err != nil || res.Changed {
			klog.InfoS("Routes re-planned for drift", "repaired", res.Changed, "err", res.Err)
		}
		return true
	}
	if res.AwaitingApproval && res.Plan != nil {
		klog.InfoS("Routes plan awaits approval", "summary", res.Plan.Summary(), "planHash", res.Plan.Hash)
		return true
	}
	r.runs.Add(1)
	if res.Err != nil {
		klog.ErrorS(res.Err, "Routes apply failed", "op", res.Op, "attempt", res.Attempt)
	} else {
		klog.InfoS("Routes applied", "op", res.Op, "changed", res.Changed, "duration", res.Duration.Round(time.Millisecond))
	}
	return true
}

// routeOp is one CreateRoute or DeleteRoute call waiting for its batch.
type routeOp struct {
	del   bool
	route templates.Route
	done  chan error // receives the batch's outcome once
}

// batcher gathers operations and hands them, one batch at a time, to
// flush. A batch closes config.Routes.BatchWindow after its first call, or
// routeQuiet after its latest call if that comes sooner; calls arriving
// while a batch is applied go into the next one.
type batcher struct {
	window time.Duration
	quiet  time.Duration
	flush  func([]*routeOp) []error // one outcome per operation

	mu      sync.Mutex
	pending []*routeOp
	first   time.Time // arrival of pending[0]
	latest  time.Time // arrival of the newest pending op
	running bool      // the loop goroutine is alive
	batches atomic.Int64
}

func newBatcher(window time.Duration, flush func([]*routeOp) []error) *batcher {
	quiet := routeQuiet
	if window < quiet {
		quiet = window
	}
	return &batcher{window: window, quiet: quiet, flush: flush}
}

// do queues op and waits for its batch's outcome or for ctx. When ctx ends
// first the batch still runs; only this caller stops waiting.
func (b *batcher) do(ctx context.Context, op *routeOp) error {
	op.done = make(chan error, 1)
	now := time.Now()
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.first = now
	}
	b.latest = now
	b.pending = append(b.pending, op)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop runs batches until nothing is pending.
func (b *batcher) loop() {
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		deadline := b.first.Add(b.window)
		if q := b.latest.Add(b.quiet); q.Before(deadline) {
			deadline = q
		}
		if wait := time.Until(deadline); wait > 0 {
			b.mu.Unlock()
			time.Sleep(min(wait, b.quiet))
			continue
		}
		ops := b.pending
		b.pending = nil
		b.mu.Unlock()

		b.batches.Add(1)
		errs := b.flush(ops)
		for i, op := range ops {
			op.done <- errs[i]
		}
	}
}
