package lbcontroller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// What the controller needs of the engine, the renderer and review mode:
// narrow interfaces, so unit tests pass fakes.

// lbEngine is what the Services' lifecycle needs of the workspace engine.
type lbEngine interface {
	Apply(spec workspace.Spec) (workspace.Status, error)
	Destroy(spec workspace.Spec) (workspace.Status, error)
	Status(name string) workspace.Status
	// Wait blocks until hash settles in workspace name or ctx ends.
	Wait(ctx context.Context, name, hash string) (workspace.Status, error)
	// Written returns the files last written for a workspace (to destroy
	// a workspace whose Service no longer renders).
	Written(name string) (workspace.Spec, error)
	// Dir is the workspace's directory (an earlier incarnation's
	// directory means resources may exist).
	Dir(name string) string
	// Workspaces lists the workspace directories (the orphan sweep).
	Workspaces() ([]workspace.WorkspaceDir, error)
	// Catalogued and CatalogEntry read the state backend's catalog of
	// applied workspaces (the orphan sweep; workspace.ErrNoCatalog when
	// the backend keeps none).
	Catalogued(ctx context.Context) ([]string, error)
	CatalogEntry(ctx context.Context, name string) (workspace.CatalogEntry, error)
	// Revive lets a destroyed workspace be applied again (a Service
	// that wants a load balancer again after a type change).
	Revive(name string) (bool, error)
}

var (
	_ lbEngine = (*workspace.Engine)(nil)
)

// renderer renders the workspaces of the current template set (override
// directory or built-in) with the cloud config.
type renderer interface {
	RenderLoadBalancer(svc *corev1.Service, nodes []*corev1.Node) (*workspace.Spec, error)
	RenderRoutes(routes []templates.Route) (*workspace.Spec, error)
	// LoadBalancerName is the name templates get as load_balancer_name.
	LoadBalancerName(svc *corev1.Service) string
	// WorkspaceName is the Service's load balancer workspace.
	WorkspaceName(svc *corev1.Service) string
	// WithBackend sets the backend tfccm generates for spec's name
	// (templates.WithBackend).
	WithBackend(spec workspace.Spec) (workspace.Spec, error)
	// IsLoadBalancerWorkspace tells this cluster's load balancer
	// workspaces from any other directory.
	IsLoadBalancerWorkspace(name string) bool
}

// templateRenderer is the renderer over a templates.Loader.
type templateRenderer struct {
	cfg    *config.Config
	loader *templates.Loader
	addrs  *addressBook // the Services' addresses (nil: each Service's own)
	// takeover says which Services are prepared only (nil: none).
	takeover *takeover
}

var _ renderer = templateRenderer{}

func (t templateRenderer) RenderLoadBalancer(svc *corev1.Service, nodes []*corev1.Node) (*workspace.Spec, error) {
	book := t.addrs
	if book == nil {
		book = newAddressBook(t.cfg)
	}
	addrs, err := book.lookup(svc)
	if err != nil {
		return nil, err
	}
	// The list not read yet (renderAndApply waits for it), the Service
	// never applied announcing: not announced. What was applied not
	// readable: nothing is rendered.
	standby, err := t.takeover.standby(svc)
	if err != nil && !errors.Is(err, errTakeoverUnknown) {
		return nil, err
	}
	addrs.Standby = standby || err != nil
	return t.loader.Set().RenderLoadBalancer(t.cfg, svc, nodes, addrs)
}

func (t templateRenderer) RenderRoutes(routes []templates.Route) (*workspace.Spec, error) {
	return t.loader.Set().RenderRoutes(t.cfg, routes)
}

func (t templateRenderer) LoadBalancerName(svc *corev1.Service) string {
	return templates.LoadBalancerName(t.cfg, svc)
}

func (t templateRenderer) WorkspaceName(svc *corev1.Service) string {
	return templates.LoadBalancerWorkspaceName(t.cfg, svc)
}

func (t templateRenderer) IsLoadBalancerWorkspace(name string) bool {
	return templates.IsLoadBalancerWorkspace(t.cfg, name)
}

func (t templateRenderer) WithBackend(spec workspace.Spec) (workspace.Spec, error) {
	return templates.WithBackend(t.cfg, spec)
}

// lbReview is what the LoadBalancer facet needs of review mode.
type lbReview interface {
	// approveService acts on the approval of the Service's plan (its ConfigMap
	// in tfccm's namespace) and reports one on the Service as ignored.
	approveService(svc *corev1.Service)
	// loadBalancerResult publishes or withdraws the Service's pending plan.
	loadBalancerResult(svc *corev1.Service, ws string, r workspace.Result)
	// publishHeld publishes a plan a closed change window holds (gate.go).
	publishHeld(svc *corev1.Service, ws string, p *plans.PendingPlan)
	// approveOrphan acts on the approval of the published
	// destroy plan of an orphan whose Service is gone (review_orphans.go).
	approveOrphan(ctx context.Context, owner *corev1.Service, ws string)
	// sweepPlans deletes the plans whose Service UID is not live and
	// whose workspace keep does not claim (review_sweep.go).
	sweepPlans(ctx context.Context, again *sweepAgain, live map[types.UID]bool, keep func(ws string) bool) (int, error)
}

// eventFunc records an Event on an object (and logs warnings).
type eventFunc func(obj runtime.Object, eventType, reason, message string)
