package fleet

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/lbnodes"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Target is one workspace the controller would apply: a Service's load
// balancer or one of the cluster's own workspaces (routes, BGP peering),
// rendered (or the render's error).
type Target struct {
	// Namespace and Name are the Service's; Name is the workspace's name
	// for a cluster workspace ("routes", "bgp-peering").
	Namespace, Name string
	Routes          bool
	// Peering: the cluster's BGP peering workspace.
	Peering bool
	Spec    *workspace.Spec
	// Retire is set, and Spec nil, when the candidate no longer renders
	// the workspace but the state backend's catalog may hold it applied
	// (the BGP peering without bgp): its row previews the destroy.
	Retire *Retire
	Err    error
}

// ID is how rows name the target: "namespace/name", "routes" or
// "bgp-peering".
func (t Target) ID() string {
	if t.Routes || t.Peering {
		return t.Name
	}
	return t.Namespace + "/" + t.Name
}

// loadBalancer renders svc's workspace with its addresses from book.
func loadBalancer(cfg *config.Config, set *templates.Set, book *ipam.Book, svc *corev1.Service, nodes []*corev1.Node) Target {
	t := Target{Namespace: svc.Namespace, Name: svc.Name}
	a, err := book.Decide(svc)
	if err == nil {
		t.Spec, err = set.RenderLoadBalancer(cfg, svc, nodes, templates.Addresses{IPs: a.IPs, Shared: a.Shared, Segments: a.Segments})
	}
	if err != nil {
		t.Err = fmt.Errorf("render: %w", err)
	}
	return t
}

// served reports whether tfccm serves svc: a LoadBalancer Service of a
// class tfccm serves (config.ServesClass), not being deleted.
func served(cfg *config.Config, svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && cfg.ServesClass(svc.Spec.LoadBalancerClass) && svc.DeletionTimestamp.IsZero()
}

// Targets renders, with cfg and set (the candidate), the workspace of every
// Service tfccm serves, with the addresses the controller's address book
// gives it (built from the same Services; nsLabels gives a namespace's
// labels, nil: none), when the Routes facet is on, the routes
// workspace, and the BGP peering workspace when it applies (or, when it
// does not and the state backend keeps a catalog, the peering's destroy:
// Retire), sorted by ID. A Service that does not render is a target with
// its error.
func Targets(cfg *config.Config, set *templates.Set, services []*corev1.Service, nodes []*corev1.Node, nsLabels func(string) labels.Set) []Target {
	var out []Target
	if config.Enabled(cfg.LoadBalancer.Enabled) {
		lb := lbnodes.Filter(nodes)
		book := ipam.Offline(cfg, services, nsLabels)
		for _, svc := range services {
			if served(cfg, svc) {
				out = append(out, loadBalancer(cfg, set, book, svc, lb))
			}
		}
	}
	if cfg.RoutesEnabled() {
		t := Target{Name: "routes", Routes: true}
		t.Spec, t.Err = set.RenderRoutes(cfg, templates.RoutesFromNodes(nodes))
		out = append(out, t)
	}
	// The BGP peering, when the set has a bgp module and the settings a
	// bgp block (what the controller applies, templates.RenderPeering);
	// else its destroy, if the catalog holds one applied earlier.
	if spec, ok, err := set.RenderPeering(cfg); ok || err != nil {
		out = append(out, Target{Name: templates.PeeringWorkspaceName, Peering: true, Spec: spec, Err: err})
	} else if t := retiredPeering(cfg, set, services); t != nil {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}
