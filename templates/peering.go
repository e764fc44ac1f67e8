package templates

import (
	"fmt"
	"path"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
)

// BGP peering (the hosts' side of the BGP sessions, and the router side
// where the routers are Linux hosts tfccm configures): a set may carry a
// module PeeringDir beside its load balancer modules. Its inputs are
// cluster_name and settings, the cloud config's load_balancer.settings
// (the same settings its load balancer modules get, never a Service's
// tfccm.io/vars). tfccm renders it as the cluster's one peering
// workspace (PeeringWorkspaceName) when the set has the module and those
// settings carry a non-null `bgp`, and applies it like the routes
// workspace (planned, reviewable, re-planned for drift); settings
// without `bgp` render nothing and a peering applied earlier is
// destroyed once no Service uses a load balancer the peering serves.
const (
	PeeringDir = "bgp"
	// PeeringSetting is the settings key that switches the peering on.
	PeeringSetting = "bgp"
	// PeeringWorkspaceName is the name of the cluster's one peering
	// workspace.
	PeeringWorkspaceName = "bgp-peering"
	// PeeringVariant is the load balancer variant whose announcements
	// ride on the peering: a Service of it keeps the peering from being
	// destroyed.
	PeeringVariant = "bgp"
)

// ClusterOwner owns the cluster's own workspaces in the state backend's
// catalog: no Kubernetes object owns them, but a CCM whose work dir is
// empty (a new pod) must still find the peering an earlier one applied to
// destroy it. The orphan sweep never takes a cluster workspace for a load
// balancer's.
var ClusterOwner = workspace.Owner{Name: "cluster"}

// IsClusterWorkspace reports whether name is one of the cluster's own
// workspaces (routes, BGP peering): owned by no Service, their plans
// are reviewed and approved by name (tfccm approve --routes, --peering).
func IsClusterWorkspace(name string) bool {
	return name == RoutesWorkspaceName || name == PeeringWorkspaceName
}

// ClusterWorkspaceKind is the module kind of cluster workspace name.
func ClusterWorkspaceKind(name string) Kind {
	if name == PeeringWorkspaceName {
		return KindPeering
	}
	return KindRoutes
}

// Peering returns the set's peering module, nil without one.
func (s *Set) Peering() *Module {
	m, ok := s.modules[PeeringDir]
	if !ok || m.Kind != KindPeering {
		return nil
	}
	return m
}

// PeeringWanted reports whether the cluster's peering workspace is to be
// applied: the set has a peering module and load_balancer.settings carry
// a non-null bgp.
func (s *Set) PeeringWanted(cfg *config.Config) bool {
	return s.Peering() != nil && cfg != nil && cfg.LoadBalancer != nil && hasSetting(cfg.LoadBalancer.Settings, PeeringSetting)
}

// PeeringServes reports whether svc's load balancer needs the peering:
// its module is the set's bgp variant from the same place as the peering
// module (both built in, or both from the override directory).
func (s *Set) PeeringServes(svc *corev1.Service) bool {
	p := s.Peering()
	if p == nil {
		return false
	}
	m, err := s.loadBalancerModule(svc)
	return err == nil && m.Variant == PeeringVariant && path.Dir(m.Origin) == path.Dir(p.Origin)
}

// RenderPeering renders the cluster's peering workspace; ok is false
// (and the spec nil) when there is none to apply (PeeringWanted). Errors
// name the setting (a key the module requires, a value of the wrong
// type).
func (s *Set) RenderPeering(cfg *config.Config) (ws *workspace.Spec, ok bool, err error) {
	if err := checkConfig(cfg); err != nil {
		return nil, false, err
	}
	if !s.PeeringWanted(cfg) {
		return nil, false, nil
	}
	m := s.Peering()
	settings, err := settingsVal(m, cfg.LoadBalancer.Settings, "load_balancer.settings", nil, nil)
	if err != nil {
		return nil, false, fmt.Errorf("render the BGP peering: %w", err)
	}
	r, err := s.render(cfg, m, PeeringWorkspaceName, map[string]cty.Value{
		"cluster_name": str(cfg.ClusterName),
		SettingsVar:    settings,
	})
	if err != nil {
		return nil, false, fmt.Errorf("render the BGP peering: %w", err)
	}
	owner := ClusterOwner
	r.Spec.Owner = &owner
	return r.Spec, true, nil
}

// hasSetting reports whether settings (an object or map) has key with a
// non-null value.
func hasSetting(settings cty.Value, key string) bool {
	if settings == cty.NilVal || settings.IsNull() || !settings.IsKnown() {
		return false
	}
	t := settings.Type()
	switch {
	case t.IsObjectType():
		if !t.HasAttribute(key) {
			return false
		}
		return !settings.GetAttr(key).IsNull()
	case t.IsMapType():
		k := cty.StringVal(key)
		if settings.HasIndex(k).False() {
			return false
		}
		return !settings.Index(k).IsNull()
	}
	return false
}
